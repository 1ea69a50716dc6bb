//! The operator's view as JSON, one shape for `lockctl --json` and the admin pages' API.
//!
//! Times are unix milliseconds (`*_ms`), durations milliseconds, fencing tokens numbers, owner
//! tokens 32 hex digits. A label is an object of its entries (and `null` when the store keeps
//! none); every string is escaped, whatever a client stored.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::backend::{
    AuditRecord, HolderLabel, HolderView, InspectionPage, KeyInspection, LeaseKind, WaiterView,
    Waiters,
};
use crate::json_text::json_string_html_safe as json_string;

/// One key, as an object:
/// `{"primitive", "key", "status", "holders": [...], "waiters": [...] | null, "permits",
/// "latch"}` (`waiters` is `null` where the store keeps no queue; `permits`
/// `{"size", "in_use"}` for a semaphore, `latch` `{"count", "expires_in_ms"}` for a latch
/// counting down, `null` otherwise).
///
/// ```
/// use lock_core::{LockClient, MemoryBackend};
/// use lock_core::operator::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(MemoryBackend::new());
/// let _held = locks.lock("order:<42>").await?;
/// let text = json::inspection(&locks.admin().inspect("order:<42>").await?);
/// assert!(text.starts_with(r#"{"primitive":"lock","key":"order:\u003c42\u003e","status":"held""#));
/// # Ok(()) }
/// ```
#[must_use]
pub fn inspection(seen: &KeyInspection) -> String {
    let mut out = String::with_capacity(256);
    out.push_str(&format!(
        "{{\"primitive\":{},\"key\":{},\"status\":{},\"holders\":[",
        json_string(seen.primitive.name()),
        json_string(&seen.key),
        json_string(seen.status.name()),
    ));
    for (i, holder) in seen.holders.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        holder_into(&mut out, holder);
    }
    out.push_str("],\"waiters\":");
    match &seen.waiters {
        Waiters::Listed(waiters) => {
            out.push('[');
            for (i, waiter) in waiters.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                waiter_into(&mut out, waiter);
            }
            out.push(']');
        }
        _ => out.push_str("null"),
    }
    out.push_str(",\"permits\":");
    match seen.permits {
        Some(permits) => out.push_str(&format!(
            "{{\"size\":{},\"in_use\":{}}}",
            permits.size.map_or("null".to_owned(), |s| s.to_string()),
            permits.in_use
        )),
        None => out.push_str("null"),
    }
    out.push_str(",\"latch\":");
    match seen.latch {
        Some(latch) => out.push_str(&format!(
            "{{\"count\":{},\"expires_in_ms\":{}}}",
            latch.count,
            millis(latch.expires_in)
        )),
        None => out.push_str("null"),
    }
    out.push('}');
    out
}

/// A listing page: `{"keys": [inspection, ...], "next": cursor | null}`.
#[must_use]
pub fn page(page: &InspectionPage) -> String {
    let keys: Vec<String> = page.keys.iter().map(inspection).collect();
    format!(
        "{{\"keys\":[{}],\"next\":{}}}",
        keys.join(","),
        page.next
            .as_ref()
            .map_or("null".to_owned(), |c| json_string(c.as_str()))
    )
}

/// One audit record, as an object: `{"at_ms", "key", "primitive", "operator", "reason",
/// "old_owner", "old_kind", "old_label", "old_token", "new_token"}`.
#[must_use]
pub fn record(record: &AuditRecord) -> String {
    format!(
        "{{\"at_ms\":{},\"key\":{},\"primitive\":{},\"operator\":{},\"reason\":{},\
         \"old_owner\":{},\"old_kind\":{},\"old_label\":{},\"old_token\":{},\"new_token\":{}}}",
        unix_ms(record.at),
        json_string(&record.key),
        json_string(record.primitive.name()),
        json_string(&record.operator),
        json_string(&record.reason),
        json_string(&record.old_owner.to_hex()),
        json_string(&kind_name(record.old_kind)),
        label(record.old_label.as_ref()),
        record.old_token.get(),
        record.new_token.get(),
    )
}

/// Audit records as an array.
#[must_use]
pub fn records(records: &[AuditRecord]) -> String {
    let items: Vec<String> = records.iter().map(record).collect();
    format!("[{}]", items.join(","))
}

/// A lease kind as the JSON and the tables name it: `lock`, `fair`, `read`, `write`,
/// `leader`, or `permits:<n>`.
#[must_use]
pub fn kind_name(kind: LeaseKind) -> String {
    match kind {
        LeaseKind::Exclusive => "lock".into(),
        LeaseKind::Fair => "fair".into(),
        LeaseKind::Read => "read".into(),
        LeaseKind::Write => "write".into(),
        LeaseKind::Leader => "leader".into(),
        LeaseKind::Permits { count, .. } => format!("permits:{count}"),
    }
}

fn holder_into(out: &mut String, holder: &HolderView) {
    out.push_str(&format!(
        "{{\"kind\":{},\"owner\":{},\"label\":{},\"fencing_token\":{},\"acquired_at_ms\":{},\"lease_left_ms\":{}}}",
        json_string(&kind_name(holder.kind)),
        json_string(&holder.owner.to_hex()),
        label(holder.label.as_ref()),
        holder.fencing_token.get(),
        holder.acquired_at.map_or("null".to_owned(), |t| unix_ms(t).to_string()),
        millis(holder.lease_left),
    ));
}

fn waiter_into(out: &mut String, waiter: &WaiterView) {
    out.push_str(&format!(
        "{{\"kind\":{},\"label\":{},\"waiting_ms\":{}}}",
        waiter
            .kind
            .map_or("null".to_owned(), |k| json_string(&kind_name(k))),
        label(waiter.label.as_ref()),
        millis(waiter.waiting_for),
    ));
}

fn label(label: Option<&HolderLabel>) -> String {
    let Some(label) = label else {
        return "null".into();
    };
    let entries: Vec<String> = label
        .entries()
        .map(|(name, value)| format!("{}:{}", json_string(name), json_string(&value)))
        .collect();
    format!("{{{}}}", entries.join(","))
}

fn millis(duration: Option<Duration>) -> String {
    duration.map_or("null".to_owned(), |d| d.as_millis().to_string())
}

fn unix_ms(at: SystemTime) -> u128 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis())
}
