//! An audit record's data on ZooKeeper: text lines, read back leniently.

use std::time::{Duration, SystemTime};

use zookeeper_client as zk;

use super::inspect::{unix_ms, SeenNode};
use crate::backend::{AuditRecord, ForceRelease, HolderLabel, LeaseKind, Primitive};
use crate::{FencingToken, OwnerToken};

/// The first line of a record: its format.
const FORMAT: &str = "lock-core audit 1";

/// A record's data: [`FORMAT`], then `name value` lines: `key`, `primitive`, `kind` (`x`, `f`,
/// `r`, `w`, `l` or `p<count>`), `owner`, `old` (its token), `operator`, `reason`, `keep`
/// (the retention in ms) and `label`. Text values have `%`, line feeds and carriage returns
/// percent-encoded.
pub(super) fn encode(request: &ForceRelease<'_>, holder: &SeenNode, old: FencingToken) -> Vec<u8> {
    let mut out = String::from(FORMAT);
    let mut line = |name: &str, value: &str| {
        out.push('\n');
        out.push_str(name);
        out.push(' ');
        out.push_str(value);
    };
    line("key", &escape(request.key.full()));
    line("primitive", request.primitive.name());
    line("kind", &kind_code(holder.kind));
    line("owner", &holder.owner.to_hex());
    line("old", &old.get().to_string());
    line("operator", &escape(request.operator));
    line("reason", &escape(request.reason));
    let keep = u64::try_from(request.retention.as_millis()).unwrap_or(u64::MAX);
    line("keep", &keep.to_string());
    if let Some(label) = holder.label.as_ref().filter(|l| !l.is_empty()) {
        line("label", &escape(label.as_stored()));
    }
    out.into_bytes()
}

/// A record read back with its stat, and until when it is kept (`None`: past what a
/// `SystemTime` holds); `None` for data that is not a record of this format.
pub(super) fn decode(data: &[u8], stat: &zk::Stat) -> Option<(AuditRecord, Option<SystemTime>)> {
    let text = std::str::from_utf8(data).ok()?;
    let mut lines = text.split('\n');
    if lines.next()? != FORMAT {
        return None;
    }
    let fields: std::collections::HashMap<&str, &str> =
        lines.filter_map(|line| line.split_once(' ')).collect();
    let get = |name: &str| fields.get(name).copied();
    let at = unix_ms(stat.ctime);
    let keep = Duration::from_millis(get("keep")?.parse().ok()?);
    let record = AuditRecord {
        at,
        key: unescape(get("key")?),
        primitive: get("primitive")?.parse::<Primitive>().ok()?,
        operator: unescape(get("operator")?),
        reason: unescape(get("reason")?),
        old_owner: OwnerToken::from_hex(get("owner")?)?,
        old_kind: kind_of_code(get("kind")?)?,
        old_label: get("label").map(|label| HolderLabel::from_stored(&unescape(label))),
        old_token: FencingToken::new(get("old")?.parse().ok()?),
        new_token: FencingToken::new(u64::try_from(stat.czxid).ok()?),
    };
    Some((record, at.checked_add(keep)))
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
        let escaped = rest.get(at..at + 3);
        match escaped {
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
    fn text_round_trips() {
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
        assert_eq!(kind_of_code("q1"), None);
    }

    fn stat() -> zk::Stat {
        zk::Stat {
            czxid: 42,
            mzxid: 42,
            pzxid: 42,
            ctime: 1_700_000_000_000,
            mtime: 1_700_000_000_000,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 0,
            data_length: 0,
            num_children: 0,
        }
    }

    #[test]
    fn a_record_round_trips() {
        let key = crate::LockKey::new("ns", "order\n%42").unwrap();
        let request = ForceRelease::new(&key, Primitive::Semaphore, "ops", "stuck 100%")
            .unwrap()
            .retained_for(Duration::from_secs(60));
        let label = HolderLabel::empty().with("host", "web-3").unwrap();
        let owner = OwnerToken::from_hex(&"ab".repeat(16)).unwrap();
        let holder = SeenNode {
            path: "/locks/ns:order%0A%2542%semaphore/x".into(),
            kind: LeaseKind::Permits { count: 2, limit: 2 },
            owner,
            holds: true,
            stat: stat(),
            label: Some(label.clone()),
        };
        let data = encode(&request, &holder, FencingToken::new(7));
        let (record, until) = decode(&data, &stat()).unwrap();
        assert_eq!(record.key, "ns:order\n%42");
        assert_eq!(record.primitive, Primitive::Semaphore);
        assert_eq!(record.old_kind, LeaseKind::Permits { count: 2, limit: 2 });
        assert_eq!(record.old_owner, owner);
        assert_eq!(record.old_label, Some(label));
        assert_eq!(record.old_token, FencingToken::new(7));
        assert_eq!(
            record.new_token,
            FencingToken::new(42),
            "the record's czxid"
        );
        assert_eq!(
            (record.operator.as_str(), record.reason.as_str()),
            ("ops", "stuck 100%")
        );
        assert_eq!(until, Some(record.at + Duration::from_secs(60)));
    }

    #[test]
    fn foreign_data_is_no_record() {
        let stat = stat();
        assert!(decode(b"", &stat).is_none());
        assert!(decode(b"lock-core audit 1\nkey k", &stat).is_none());
        assert!(decode(b"\xff", &stat).is_none());
    }
}
