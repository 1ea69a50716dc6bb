//! An audit record as lines of text: the form etcd (a key's value) and ZooKeeper (a node's
//! data) keep a forced release's record in, written once here and read back leniently.
//!
//! The text is [`FORMAT`], then `name value` lines: `at` (unix ms, the operator's clock; etcd
//! only, which keeps no time), `key`, `primitive`, `kind` (`x`, `f`, `r`, `w`, `l` or
//! `p<count>`), `owner`, `old` (its token), `operator`, `reason`, `keep` (the retention in ms;
//! ZooKeeper only, which expires nothing) and `label`. Text values have `%`, line feeds and
//! carriage returns percent-encoded. Records written before this file existed read back the
//! same: the bytes are those the two stores wrote.

use std::time::SystemTime;

use super::{AuditRecord, ForceRelease, HolderLabel, LeaseKind, Primitive};
use crate::{FencingToken, OwnerToken};

/// The first line of a record: its format.
const FORMAT: &str = "lock-core audit 1";

/// What the text of an [`AuditRecord`] holds: all of it but the token the release took (the
/// store's own revision or zxid of the record's write) and, where the store keeps one, its
/// time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StoredAudit {
    /// When the release happened, unix ms (the operator's clock), where the store keeps no
    /// time of its own (etcd).
    pub(crate) at_ms: Option<u64>,
    /// The full key.
    pub(crate) key: String,
    pub(crate) primitive: Primitive,
    pub(crate) operator: String,
    pub(crate) reason: String,
    pub(crate) old_owner: OwnerToken,
    pub(crate) old_kind: LeaseKind,
    pub(crate) old_label: Option<HolderLabel>,
    pub(crate) old_token: FencingToken,
    /// How long the record is kept, ms, where the store does not expire it itself
    /// (ZooKeeper).
    pub(crate) keep_ms: Option<u64>,
}

impl StoredAudit {
    /// The record of `request` releasing the holder `owner` (a lease of `kind`, labelled
    /// `label`, with the fencing token `old_token`), without a time or a retention.
    pub(crate) fn of_release(
        request: &ForceRelease<'_>,
        owner: OwnerToken,
        kind: LeaseKind,
        label: Option<HolderLabel>,
        old_token: FencingToken,
    ) -> Self {
        Self {
            at_ms: None,
            key: request.key.full().to_owned(),
            primitive: request.primitive,
            operator: request.operator.to_owned(),
            reason: request.reason.to_owned(),
            old_owner: owner,
            old_kind: kind,
            old_label: label,
            old_token,
            keep_ms: None,
        }
    }

    /// The same, its time `at_ms` (unix ms) written in it.
    #[cfg(feature = "etcd")]
    pub(crate) fn at(mut self, at_ms: u64) -> Self {
        self.at_ms = Some(at_ms);
        self
    }

    /// The same, its retention written in it.
    #[cfg(feature = "zookeeper")]
    pub(crate) fn kept_for(mut self, retention: std::time::Duration) -> Self {
        self.keep_ms = Some(u64::try_from(retention.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// The record's text (see the [module docs](self)).
    pub(crate) fn encode(&self) -> String {
        let mut out = String::from(FORMAT);
        let mut line = |name: &str, value: &str| {
            out.push('\n');
            out.push_str(name);
            out.push(' ');
            out.push_str(value);
        };
        if let Some(at_ms) = self.at_ms {
            line("at", &at_ms.to_string());
        }
        line("key", &escape(&self.key));
        line("primitive", self.primitive.name());
        line("kind", &kind_code(self.old_kind));
        line("owner", &self.old_owner.to_hex());
        line("old", &self.old_token.get().to_string());
        line("operator", &escape(&self.operator));
        line("reason", &escape(&self.reason));
        if let Some(keep_ms) = self.keep_ms {
            line("keep", &keep_ms.to_string());
        }
        if let Some(label) = self.old_label.as_ref().filter(|l| !l.is_empty()) {
            line("label", &escape(label.as_stored()));
        }
        out
    }

    /// A record's text read back; `None` for data that is not a record of this format. An
    /// `at` or `keep` that does not parse reads as absent.
    pub(crate) fn decode(data: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(data).ok()?;
        let mut lines = text.split('\n');
        if lines.next()? != FORMAT {
            return None;
        }
        let fields: std::collections::HashMap<&str, &str> =
            lines.filter_map(|line| line.split_once(' ')).collect();
        let get = |name: &str| fields.get(name).copied();
        Some(Self {
            at_ms: get("at").and_then(|ms| ms.parse().ok()),
            key: unescape(get("key")?),
            primitive: get("primitive")?.parse::<Primitive>().ok()?,
            operator: unescape(get("operator")?),
            reason: unescape(get("reason")?),
            old_owner: OwnerToken::from_hex(get("owner")?)?,
            old_kind: kind_of_code(get("kind")?)?,
            old_label: get("label").map(|label| HolderLabel::from_stored(&unescape(label))),
            old_token: FencingToken::new(get("old")?.parse().ok()?),
            keep_ms: get("keep").and_then(|ms| ms.parse().ok()),
        })
    }

    /// How long the record is kept, if it says.
    #[cfg(feature = "zookeeper")]
    pub(crate) fn keep(&self) -> Option<std::time::Duration> {
        self.keep_ms.map(std::time::Duration::from_millis)
    }

    /// The record, made at `at` and with the token the release took, `new_token`.
    pub(crate) fn into_record(self, at: SystemTime, new_token: FencingToken) -> AuditRecord {
        AuditRecord {
            at,
            key: self.key,
            primitive: self.primitive,
            operator: self.operator,
            reason: self.reason,
            old_owner: self.old_owner,
            old_kind: self.old_kind,
            old_label: self.old_label,
            old_token: self.old_token,
            new_token,
        }
    }
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
        assert_eq!(kind_of_code("q1"), None);
    }

    fn stored(at_ms: Option<u64>, keep_ms: Option<u64>) -> StoredAudit {
        StoredAudit {
            at_ms,
            key: "ns:order\n%42".into(),
            primitive: Primitive::Semaphore,
            operator: "ops".into(),
            reason: "stuck 100%".into(),
            old_owner: OwnerToken::from_hex(&"ab".repeat(16)).unwrap(),
            old_kind: LeaseKind::Permits { count: 2, limit: 2 },
            old_label: Some(HolderLabel::empty().with("host", "web-3").unwrap()),
            old_token: FencingToken::new(7),
            keep_ms,
        }
    }

    /// The bytes etcd and ZooKeeper wrote before the codec was shared: they must still read
    /// back, and be written the same.
    #[test]
    fn records_written_by_either_store_read_back_byte_for_byte() {
        let owner = "ab".repeat(16);
        let etcd = format!(
            "lock-core audit 1\nat 1700000000000\nkey ns:order%0A%2542\nprimitive semaphore\n\
             kind p2\nowner {owner}\nold 7\noperator ops\nreason stuck 100%25\nlabel host=web-3"
        );
        let zookeeper = format!(
            "lock-core audit 1\nkey ns:order%0A%2542\nprimitive semaphore\nkind p2\n\
             owner {owner}\nold 7\noperator ops\nreason stuck 100%25\nkeep 60000\n\
             label host=web-3"
        );
        for (text, record) in [
            (etcd, stored(Some(1_700_000_000_000), None)),
            (zookeeper, stored(None, Some(60_000))),
        ] {
            assert_eq!(StoredAudit::decode(text.as_bytes()), Some(record.clone()));
            assert_eq!(record.encode(), text);
        }
    }

    #[test]
    fn a_record_round_trips_and_foreign_data_is_none() {
        let record = stored(Some(5), Some(6));
        assert_eq!(
            StoredAudit::decode(record.encode().as_bytes()),
            Some(record.clone())
        );
        let unlabelled = StoredAudit {
            old_label: Some(HolderLabel::empty()),
            ..record.clone()
        };
        let read = StoredAudit::decode(unlabelled.encode().as_bytes()).unwrap();
        assert_eq!(read.old_label, None, "an empty label is not written");
        let bad_times = "lock-core audit 1\nat soon\nkey k\nprimitive lock\nkind x\n\
                         owner 00000000000000000000000000000001\nold 1\noperator o\nreason r\n\
                         keep never";
        let read = StoredAudit::decode(bad_times.as_bytes()).unwrap();
        assert_eq!((read.at_ms, read.keep_ms), (None, None));
        assert!(StoredAudit::decode(b"").is_none());
        assert!(StoredAudit::decode(b"lock-core audit 1\nkey k").is_none());
        assert!(StoredAudit::decode(b"\xff").is_none());
    }
}
