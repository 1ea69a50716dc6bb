//! The etcd keys of each primitive, and what an entry's value says.
//!
//! | primitive | key range / key |
//! |---|---|
//! | lock | `<prefix>/<name>/<owner token>` |
//! | fair lock | `<prefix>/~fair/<name>/<owner token>` |
//! | read-write lock | `<prefix>/~rw/<name>/<owner token>` |
//! | semaphore | `<prefix>/~sem/<name>/<owner token>`, its size in `<prefix>/~sem/<name>/size` |
//! | count-down latch | `<prefix>/~latch/<name>` |
//! | election | `<prefix>/~leader/<name>/<owner token>` |
//!
//! The name is percent-encoded where it could run into another range (`/`, `%` and `~`), so
//! a range `<...>/<name>/` holds exactly one primitive's queue and no encoded name is a kind
//! marker. An entry's value is `<owner token>;<kind>[;h][;a<ms>][;g<ms>][;l<label>]`: the kind
//! is `x` (lock), `f` (fair), `r` (read), `w` (write), `p<count>` (permits) or `l`
//! (leadership); `;h` marks an entry that holds its grant (under a lease of its own), as
//! opposed to one still waiting under the session lease; `a` is when the request was made and
//! `g` when it was granted (unix milliseconds, the client's clock: etcd keeps no time), `l`
//! the request's holder label as stored, its `;` written `|` (a stored label escapes `|`). An
//! election candidate's entry adds a line with its participant id (which has no control
//! characters, so no line break). A version of this backend before `a`, `g` and `l` reads the
//! kind and the mark alone, so entries of both versions share a queue.
//!
//! The audit records of forced releases are `<prefix>/~audit/<name>/<owner token>`, one per
//! released lease, under an etcd lease of the record's retention (see `operator/audit.rs`).

use std::fmt::Write as _;

use crate::backend::{HolderLabel, LeaseKind};
use crate::{LockError, OwnerToken};

/// The semaphore size key's last segment (never a 32-digit owner token).
const SIZE: &str = "size";

/// Checks a key prefix: non-empty, not ending in `/` (the layout adds the separators).
pub(super) fn validate_prefix(prefix: &str) -> Result<(), LockError> {
    if prefix.is_empty() || prefix.ends_with('/') || prefix.contains('\0') {
        return Err(LockError::InvalidConfig(format!(
            "etcd key prefix {prefix:?} must be non-empty, without NUL and not end with '/'"
        )));
    }
    Ok(())
}

/// Appends `full_key`, percent-encoding `/`, `%` and `~`.
fn encode_into(out: &mut String, full_key: &str) {
    for ch in full_key.chars() {
        if matches!(ch, '/' | '%' | '~') {
            write!(out, "%{:02X}", u32::from(ch)).ok();
        } else {
            out.push(ch);
        }
    }
}

/// `<prefix>/<encoded full key>/`: the range holding the lock's queue.
pub(super) fn lock_prefix(prefix: &str, full_key: &str) -> String {
    queue_prefix(prefix, LeaseKind::Exclusive, full_key)
}

/// The range holding the queue of the primitive of `kind` named `full_key`.
pub(super) fn queue_prefix(prefix: &str, kind: LeaseKind, full_key: &str) -> String {
    let marker = match kind {
        LeaseKind::Fair => "~fair/",
        LeaseKind::Read | LeaseKind::Write => "~rw/",
        LeaseKind::Permits { .. } => "~sem/",
        LeaseKind::Leader => "~leader/",
        _ => "",
    };
    let mut out = String::with_capacity(prefix.len() + marker.len() + full_key.len() + 2);
    out.push_str(prefix);
    out.push('/');
    out.push_str(marker);
    encode_into(&mut out, full_key);
    out.push('/');
    out
}

/// `<prefix>/~audit/<encoded full key>/`: the range of the audit records of `full_key`.
pub(super) fn audit_prefix(prefix: &str, full_key: &str) -> String {
    let mut out = audit_range(prefix, full_key);
    out.push('/');
    out
}

/// `<prefix>/~audit/<encoded full_prefix>`: the range of the audit records of every key
/// starting with `full_prefix` (the encoding keeps prefixes: it encodes each character alone).
pub(super) fn audit_range(prefix: &str, full_prefix: &str) -> String {
    let mut out = format!("{prefix}/~audit/");
    encode_into(&mut out, full_prefix);
    out
}

/// The audit record of a forced release of `owner`'s lease on `full_key`.
pub(super) fn audit_key(prefix: &str, full_key: &str, owner: OwnerToken) -> String {
    format!("{}{}", audit_prefix(prefix, full_key), owner.to_hex())
}

/// The full key an encoded name (as [`queue_prefix`] writes it) stands for; `None` for text
/// the encoding cannot have made.
pub(super) fn decode_name(encoded: &[u8]) -> Option<String> {
    let mut out = Vec::with_capacity(encoded.len());
    let mut at = 0;
    while at < encoded.len() {
        if encoded[at] == b'%' {
            let hex = std::str::from_utf8(encoded.get(at + 1..at + 3)?).ok()?;
            let byte = u8::from_str_radix(hex, 16).ok()?;
            if !matches!(byte, b'/' | b'%' | b'~') || hex != format!("{byte:02X}") {
                return None;
            }
            out.push(byte);
            at += 3;
        } else {
            out.push(encoded[at]);
            at += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The key of `owner`'s entry in the queue `queue_prefix`.
pub(super) fn entry_key(queue_prefix: &str, owner: OwnerToken) -> String {
    format!("{queue_prefix}{}", owner.to_hex())
}

/// The owner token an entry key ends with (`None` for other keys of the range).
pub(super) fn owner_of(queue_prefix: &str, key: &[u8]) -> Option<OwnerToken> {
    let hex = std::str::from_utf8(key.strip_prefix(queue_prefix.as_bytes())?).ok()?;
    if hex.len() != 32 {
        return None;
    }
    OwnerToken::from_hex(hex)
}

/// The key holding a semaphore's size, inside its queue's range.
pub(super) fn size_key(queue_prefix: &str) -> String {
    format!("{queue_prefix}{SIZE}")
}

/// The key of the latch `full_key`.
pub(super) fn latch_key(prefix: &str, full_key: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + full_key.len() + 8);
    out.push_str(prefix);
    out.push_str("/~latch/");
    encode_into(&mut out, full_key);
    out
}

/// What an entry's value carries besides its kind and mark (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Extra<'a> {
    /// When the request was made, in unix milliseconds.
    pub(super) arrived_ms: Option<u64>,
    /// When it was granted, in unix milliseconds.
    pub(super) granted_ms: Option<u64>,
    /// The request's holder label.
    pub(super) label: Option<&'a HolderLabel>,
    /// An election candidate's participant id.
    pub(super) participant: Option<&'a str>,
}

/// An entry's value: `<owner>;<kind>`, plus `;h` once it holds, the times and label of
/// `extra`, plus a line with the participant id of an election candidate.
pub(super) fn entry_value(
    owner: OwnerToken,
    kind: LeaseKind,
    holds: bool,
    extra: Extra<'_>,
) -> String {
    let mut value = owner.to_hex();
    value.push(';');
    match kind {
        LeaseKind::Fair => value.push('f'),
        LeaseKind::Read => value.push('r'),
        LeaseKind::Write => value.push('w'),
        LeaseKind::Permits { count, .. } => {
            write!(value, "p{count}").ok();
        }
        LeaseKind::Leader => value.push('l'),
        _ => value.push('x'),
    }
    if holds {
        value.push_str(";h");
    }
    if let Some(ms) = extra.arrived_ms {
        write!(value, ";a{ms}").ok();
    }
    if let Some(ms) = extra.granted_ms {
        write!(value, ";g{ms}").ok();
    }
    if let Some(label) = extra.label.filter(|l| !l.is_empty()) {
        value.push_str(";l");
        for c in label.as_stored().chars() {
            match c {
                ';' => value.push('|'),
                // Not in a label made by `HolderLabel::with`; one read back from elsewhere
                // may hold them.
                '|' => value.push_str("%7C"),
                '\n' => value.push_str("%0A"),
                '\r' => value.push_str("%0D"),
                c => value.push(c),
            }
        }
    }
    if let Some(participant) = extra.participant {
        value.push('\n');
        value.push_str(participant);
    }
    value
}

/// Everything an entry's value says, for the operator's view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct EntryInfo {
    /// Its kind.
    pub(super) kind: LeaseKind,
    /// Whether it holds.
    pub(super) holds: bool,
    /// When it was requested (unix ms).
    pub(super) arrived_ms: Option<u64>,
    /// When it was granted (unix ms).
    pub(super) granted_ms: Option<u64>,
    /// Its holder label.
    pub(super) label: Option<HolderLabel>,
}

/// Reads an entry's value leniently (see [`parse_value`]); fields it does not know are
/// skipped.
pub(super) fn entry_info(value: &[u8]) -> EntryInfo {
    let (kind, holds) = parse_value(value);
    let text = String::from_utf8_lossy(value);
    let head = text.split_once('\n').map_or(&*text, |(head, _)| head);
    let mut info = EntryInfo {
        kind,
        holds,
        arrived_ms: None,
        granted_ms: None,
        label: None,
    };
    for field in head.split(';').skip(2) {
        if let Some(ms) = field.strip_prefix('a') {
            info.arrived_ms = ms.parse().ok();
        } else if let Some(ms) = field.strip_prefix('g') {
            info.granted_ms = ms.parse().ok();
        } else if let Some(label) = field.strip_prefix('l') {
            info.label = Some(HolderLabel::from_stored(&label.replace('|', ";")));
        }
    }
    info
}

/// The participant id an election entry's value carries (after its first line).
pub(super) fn participant_of(value: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(value).ok()?;
    text.split_once('\n').map(|(_, participant)| participant)
}

/// What an entry's value says: its kind and whether it holds. A value this layout does not
/// know (an older writer, an operator's hand) counts as a waiting exclusive entry, which
/// blocks every kind: the safe reading.
pub(super) fn parse_value(value: &[u8]) -> (LeaseKind, bool) {
    let text = std::str::from_utf8(value).unwrap_or_default();
    let head = text.split_once('\n').map_or(text, |(head, _)| head);
    let mut parts = head.split(';').skip(1);
    let kind = match parts.next() {
        Some("f") => LeaseKind::Fair,
        Some("r") => LeaseKind::Read,
        Some("w") => LeaseKind::Write,
        Some("l") => LeaseKind::Leader,
        Some(p) if p.starts_with('p') => match p[1..].parse::<u32>() {
            Ok(count) if count > 0 => LeaseKind::Permits {
                count,
                limit: count,
            },
            _ => LeaseKind::Exclusive,
        },
        _ => LeaseKind::Exclusive,
    };
    (kind, parts.next() == Some("h"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(byte: u8) -> OwnerToken {
        OwnerToken::from_hex(&format!("{byte:02x}").repeat(16)).unwrap()
    }

    #[test]
    fn one_primitive_never_sees_anothers_entries() {
        let a = lock_prefix("lock", "ns:a");
        let nested = lock_prefix("lock", "ns:a/b");
        assert_eq!(a, "lock/ns:a/");
        assert_eq!(nested, "lock/ns:a%2Fb/");
        assert!(!nested.starts_with(&a));
        assert_eq!(lock_prefix("lock", "100%"), "lock/100%25/");
        let fair = queue_prefix("lock", LeaseKind::Fair, "ns:a");
        assert_eq!(fair, "lock/~fair/ns:a/");
        // A lock whose name looks like a marker stays out of the marker's range.
        assert_eq!(lock_prefix("lock", "~fair"), "lock/%7Efair/");
        let sem = queue_prefix("lock", LeaseKind::Permits { count: 1, limit: 1 }, "k");
        assert_eq!(size_key(&sem), "lock/~sem/k/size");
        assert_eq!(owner_of(&sem, size_key(&sem).as_bytes()), None);
        let key = entry_key(&a, token(7));
        assert_eq!(owner_of(&a, key.as_bytes()), Some(token(7)));
        assert_eq!(owner_of(&nested, key.as_bytes()), None);
        assert_eq!(latch_key("lock", "ns:l/1"), "lock/~latch/ns:l%2F1");
        assert!(validate_prefix("lock").is_ok() && validate_prefix("lock/").is_err());
        for full in ["ns:a", "a/b%c~d", "库存", "%2F"] {
            let range = lock_prefix("lock", full);
            let name = range
                .strip_prefix("lock/")
                .unwrap()
                .strip_suffix('/')
                .unwrap();
            assert_eq!(decode_name(name.as_bytes()).as_deref(), Some(full));
            assert!(audit_key("lock", full, token(1)).starts_with(&audit_range("lock", "")));
            assert!(audit_prefix("lock", full).starts_with(&audit_range("lock", full)));
        }
        assert!(!audit_prefix("lock", "ns:ab").starts_with(&audit_prefix("lock", "ns:a")));
        for bad in ["%", "%2", "%2f", "%41", "%FF"] {
            assert_eq!(decode_name(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn values_carry_kind_and_holding() {
        let permits = LeaseKind::Permits { count: 3, limit: 9 };
        for (kind, holds) in [
            (LeaseKind::Exclusive, false),
            (LeaseKind::Fair, true),
            (LeaseKind::Read, false),
            (LeaseKind::Write, true),
        ] {
            assert_eq!(
                parse_value(entry_value(token(1), kind, holds, Extra::default()).as_bytes()),
                (kind, holds)
            );
        }
        let (kind, holds) =
            parse_value(entry_value(token(1), permits, true, Extra::default()).as_bytes());
        assert_eq!(
            (kind, holds),
            (LeaseKind::Permits { count: 3, limit: 3 }, true)
        );
        assert_eq!(parse_value(b"garbage"), (LeaseKind::Exclusive, false));
        assert_eq!(parse_value(b"x;p0"), (LeaseKind::Exclusive, false));
        let candidate = entry_value(
            token(1),
            LeaseKind::Leader,
            true,
            Extra {
                participant: Some("node-1;a"),
                ..Extra::default()
            },
        );
        assert_eq!(parse_value(candidate.as_bytes()), (LeaseKind::Leader, true));
        assert_eq!(participant_of(candidate.as_bytes()), Some("node-1;a"));
        assert_eq!(participant_of(b"x;x;h"), None);
    }

    #[test]
    fn values_carry_times_and_labels_an_older_reader_skips() {
        let label = HolderLabel::empty()
            .with("host", "web-3")
            .unwrap()
            .with("note", "a;b|c")
            .unwrap();
        let extra = Extra {
            arrived_ms: Some(1_700_000_000_000),
            granted_ms: Some(1_700_000_000_500),
            label: Some(&label),
            participant: Some("p-1"),
        };
        for holds in [false, true] {
            let value = entry_value(token(2), LeaseKind::Write, holds, extra);
            assert_eq!(parse_value(value.as_bytes()), (LeaseKind::Write, holds));
            assert_eq!(participant_of(value.as_bytes()), Some("p-1"));
            let info = entry_info(value.as_bytes());
            assert_eq!(info.label.as_ref(), Some(&label));
            assert_eq!(info.arrived_ms, Some(1_700_000_000_000));
            assert_eq!(info.granted_ms, Some(1_700_000_000_500));
            assert_eq!(info.holds, holds);
        }
        // A label read back from elsewhere cannot break the value's structure.
        let hostile = HolderLabel::from_stored("a=1\nx;h=|");
        let value = entry_value(
            token(2),
            LeaseKind::Exclusive,
            false,
            Extra {
                label: Some(&hostile),
                ..Extra::default()
            },
        );
        assert_eq!(parse_value(value.as_bytes()), (LeaseKind::Exclusive, false));
        assert_eq!(participant_of(value.as_bytes()), None);
        let old = entry_info(b"0101;x;h");
        assert_eq!((old.holds, old.label, old.arrived_ms), (true, None, None));
    }
}
