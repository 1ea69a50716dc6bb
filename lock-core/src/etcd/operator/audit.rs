//! The audit trail: one key per forced release, `<prefix>/~audit/<key>/<owner token>` (owner
//! tokens are drawn anew for every lease, so a lease is released by force at most once), put
//! in the transaction that deletes the holder's entry, under an etcd lease of the request's
//! retention, which deletes it when the retention ends. The record's create revision is that
//! transaction's revision, the token the release took; its value holds the rest as lines (see
//! [`encode`]). Read newest first by create revision, with a limit, in one ranged read.

use std::time::SystemTime;

use etcd_client as etcd;

use super::inspect::{unix_ms, SeenEntry};
use crate::backend::{AuditRecord, ForceRelease, HolderLabel, LeaseKind, Primitive};
use crate::etcd::EtcdBackend;
use crate::{FencingToken, OwnerToken, Result};

/// The first line of a record: its format.
const FORMAT: &str = "lock-core audit 1";

impl EtcdBackend {
    /// The records in the key range `range` (a prefix), newest first, at most `limit`.
    pub(super) async fn records_in(&self, range: String, limit: usize) -> Result<Vec<AuditRecord>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let reply = self
            .call("audit", |mut c| {
                let range = range.clone();
                let options = etcd::GetOptions::new()
                    .with_prefix()
                    .with_sort(etcd::SortTarget::Create, etcd::SortOrder::Descend)
                    .with_limit(limit);
                async move { c.get(range, Some(options)).await }
            })
            .await?;
        // A value that does not parse (written by hand, or by a later version) is skipped.
        Ok(reply.kvs().iter().filter_map(decode).collect())
    }

    /// The record at the key `at`, if there is one.
    pub(in crate::etcd) async fn revocation_at(&self, at: &str) -> Result<Option<AuditRecord>> {
        let reply = self
            .call("audit", |mut c| {
                let at = at.to_owned();
                async move { c.get(at, None).await }
            })
            .await?;
        Ok(reply.kvs().first().and_then(decode))
    }
}

/// A record's value: [`FORMAT`], then `name value` lines: `at` (unix ms, the operator's
/// clock), `key`, `primitive`, `kind` (`x`, `f`, `r`, `w`, `l` or `p<count>`), `owner`, `old`
/// (its token), `operator`, `reason` and `label`. Text values have `%`, line feeds and
/// carriage returns percent-encoded.
pub(super) fn encode(
    request: &ForceRelease<'_>,
    holder: &SeenEntry,
    old: FencingToken,
    at_ms: u64,
) -> String {
    let mut out = String::from(FORMAT);
    let mut line = |name: &str, value: &str| {
        out.push('\n');
        out.push_str(name);
        out.push(' ');
        out.push_str(value);
    };
    line("at", &at_ms.to_string());
    line("key", &escape(request.key.full()));
    line("primitive", request.primitive.name());
    line("kind", &kind_code(holder.info.kind));
    line("owner", &holder.owner.to_hex());
    line("old", &old.get().to_string());
    line("operator", &escape(request.operator));
    line("reason", &escape(request.reason));
    if let Some(label) = holder.info.label.as_ref().filter(|l| !l.is_empty()) {
        line("label", &escape(label.as_stored()));
    }
    out
}

/// A record read back; `None` for a value that is not a record of this format.
fn decode(kv: &etcd::KeyValue) -> Option<AuditRecord> {
    let text = std::str::from_utf8(kv.value()).ok()?;
    let mut lines = text.split('\n');
    if lines.next()? != FORMAT {
        return None;
    }
    let fields: std::collections::HashMap<&str, &str> =
        lines.filter_map(|line| line.split_once(' ')).collect();
    let get = |name: &str| fields.get(name).copied();
    Some(AuditRecord {
        at: get("at")
            .and_then(|ms| ms.parse().ok())
            .map_or(SystemTime::UNIX_EPOCH, unix_ms),
        key: unescape(get("key")?),
        primitive: get("primitive")?.parse::<Primitive>().ok()?,
        operator: unescape(get("operator")?),
        reason: unescape(get("reason")?),
        old_owner: OwnerToken::from_hex(get("owner")?)?,
        old_kind: kind_of_code(get("kind")?)?,
        old_label: get("label").map(|label| HolderLabel::from_stored(&unescape(label))),
        old_token: FencingToken::new(get("old")?.parse().ok()?),
        new_token: FencingToken::new(u64::try_from(kv.create_revision()).ok()?),
    })
}

fn kind_code(kind: LeaseKind) -> String {
    match kind {
        LeaseKind::Fair => "f".into(),
        LeaseKind::Read => "r".into(),
        LeaseKind::Write => "w".into(),
        LeaseKind::Leader => "l".into(),
        LeaseKind::Permits { count, .. } => format!("p{count}"),
        LeaseKind::Exclusive => "x".into(),
    }
}

fn kind_of_code(code: &str) -> Option<LeaseKind> {
    Some(match code {
        "x" => LeaseKind::Exclusive,
        "f" => LeaseKind::Fair,
        "r" => LeaseKind::Read,
        "w" => LeaseKind::Write,
        "l" => LeaseKind::Leader,
        _ => {
            let count = code.strip_prefix('p')?.parse().ok()?;
            LeaseKind::Permits {
                count,
                limit: count,
            }
        }
    })
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\n' => out.push_str("%0A"),
            '\r' => out.push_str("%0D"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        match rest.get(at..at + 3) {
            Some("%25") => out.push('%'),
            Some("%0A") => out.push('\n'),
            Some("%0D") => out.push('\r'),
            _ => {
                out.push('%');
                rest = &rest[at + 1..];
                continue;
            }
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_kinds_round_trip() {
        for text in [
            "plain",
            "a%b",
            "two\nlines\r",
            "%0A",
            "%",
            "%%25",
            "库存 %2",
        ] {
            assert_eq!(unescape(&escape(text)), text, "{text:?}");
            assert!(!escape(text).contains('\n'));
        }
        for kind in [
            LeaseKind::Exclusive,
            LeaseKind::Fair,
            LeaseKind::Read,
            LeaseKind::Write,
            LeaseKind::Leader,
            LeaseKind::Permits { count: 3, limit: 3 },
        ] {
            assert_eq!(kind_of_code(&kind_code(kind)), Some(kind));
        }
        assert_eq!(kind_of_code("p"), None);
    }
}
