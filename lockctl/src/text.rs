//! The tables people read: keys and labels come from clients, so every one is shown with its
//! control characters escaped, and long ones cut.

use std::time::{Duration, SystemTime};

use lock_core::backend::{AuditRecord, HolderLabel, KeyInspection, Waiters};
use lock_core::operator::json::kind_name;

/// The longest key or label shown in a table cell (the rest is `…`).
const CELL: usize = 60;

/// `text` safe for a terminal: control characters as `\u{..}`, cut to `max` characters.
pub(crate) fn printable(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        if c.is_control() {
            put(&mut out, format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// An error and its causes, on one line.
pub(crate) fn error_chain(error: &lock_core::LockError) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        put(&mut text, format!(": {cause}"));
        source = cause.source();
    }
    printable(&text, 1_000)
}

fn label(label: Option<&HolderLabel>) -> String {
    label.map_or("(no label)".into(), |l| printable(&l.to_string(), 200))
}

fn seconds(duration: Duration) -> String {
    format!("{:.1}s", duration.as_secs_f64())
}

fn ago(at: SystemTime) -> String {
    SystemTime::now()
        .duration_since(at)
        .map_or("just now".into(), |d| format!("{} ago", seconds(d)))
}

/// `show`: one key, its holders and its waiters.
pub(crate) fn inspection(seen: &KeyInspection) -> String {
    let mut out = format!(
        "{} {}  {}\n",
        seen.primitive,
        printable(&seen.key, 600),
        seen.status.name()
    );
    if let Some(permits) = seen.permits {
        let size = permits.size.map_or("unset".into(), |s| s.to_string());
        line(
            &mut out,
            format!("  permits  {} of {size} in use", permits.in_use),
        );
    }
    if let Some(latch) = seen.latch {
        line(
            &mut out,
            format!(
                "  count    {}  expires in {}",
                latch.count,
                latch.expires_in.map_or("?".into(), seconds)
            ),
        );
    }
    for holder in &seen.holders {
        line(
            &mut out,
            format!(
                "  holder   {}  owner {}  token {}  lease left {}  since {}",
                kind_name(holder.kind),
                holder.owner.to_hex(),
                holder.fencing_token.get(),
                holder.lease_left.map_or("(session)".into(), seconds),
                holder.acquired_at.map_or("?".into(), ago),
            ),
        );
        line(
            &mut out,
            format!("           {}", label(holder.label.as_ref())),
        );
    }
    match &seen.waiters {
        Waiters::Listed(waiters) if waiters.is_empty() => out.push_str("  waiters  none\n"),
        Waiters::Listed(waiters) => {
            line(
                &mut out,
                format!("  waiters  {} (first in line first)", waiters.len()),
            );
            for (i, waiter) in waiters.iter().enumerate() {
                line(
                    &mut out,
                    format!(
                        "    {:>3}  {}  waiting {}  {}",
                        i + 1,
                        waiter.kind.map_or("?".into(), kind_name),
                        waiter.waiting_for.map_or("?".into(), seconds),
                        label(waiter.label.as_ref()),
                    ),
                );
            }
        }
        _ => out.push_str(
            "  waiters  not kept by this store (waiters wait in their own processes or on watches)\n",
        ),
    }
    out
}

/// `ls`: one line per key.
pub(crate) fn listing(keys: &[KeyInspection]) -> String {
    let mut out = format!(
        "{:<10} {:<width$} {:<8} {:>7} {:>7}  {}\n",
        "PRIMITIVE",
        "KEY",
        "STATUS",
        "HOLDERS",
        "WAITERS",
        "FIRST HOLDER",
        width = 30
    );
    for seen in keys {
        let waiters = match &seen.waiters {
            Waiters::Listed(w) => w.len().to_string(),
            _ => "-".into(),
        };
        let first = match (seen.holders.first(), seen.latch) {
            (Some(holder), _) => label(holder.label.as_ref()),
            (None, Some(latch)) => format!("(count {})", latch.count),
            (None, None) => String::new(),
        };
        line(
            &mut out,
            format!(
                "{:<10} {:<width$} {:<8} {:>7} {:>7}  {}",
                seen.primitive.name(),
                printable(&seen.key, CELL),
                seen.status.name(),
                seen.holders.len(),
                waiters,
                printable(&first, CELL),
                width = 30
            ),
        );
    }
    out
}

/// `release` and `audit`: one record.
pub(crate) fn record(record: &AuditRecord) -> String {
    format!(
        "{}  {} {}  by {}: {}\n  released {} owner {} token {} (now {})  {}\n",
        ago(record.at),
        record.primitive,
        printable(&record.key, 600),
        printable(&record.operator, 200),
        printable(&record.reason, 200),
        kind_name(record.old_kind),
        record.old_owner.to_hex(),
        record.old_token.get(),
        record.new_token.get(),
        label(record.old_label.as_ref()),
    )
}

/// Appends `text` and a line break.
fn line(out: &mut String, text: String) {
    out.push_str(&text);
    out.push('\n');
}

/// Appends `text`.
fn put(out: &mut String, text: String) {
    out.push_str(&text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_escaped_and_long_text_cut() {
        assert_eq!(printable("a\u{1b}[31mb\n", 100), "a\\u{1b}[31mb\\u{a}");
        assert_eq!(printable(&"x".repeat(10), 4), "xxxx…");
    }
}
