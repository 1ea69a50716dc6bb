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
//! marker. An entry's value is `<owner token>;<kind>[;h]`: the kind is `x` (lock), `f` (fair),
//! `r` (read), `w` (write), `p<count>` (permits) or `l` (leadership); `;h` marks an entry that
//! holds its grant (under a lease of its own), as opposed to one still waiting under the
//! session lease. An election candidate's entry adds a line with its participant id (which has
//! no control characters, so no line break).

use std::fmt::Write as _;

use crate::backend::LeaseKind;
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

/// An entry's value: `<owner>;<kind>`, plus `;h` once it holds, plus a line with the
/// participant id of an election candidate.
pub(super) fn entry_value(
    owner: OwnerToken,
    kind: LeaseKind,
    holds: bool,
    participant: Option<&str>,
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
    if let Some(participant) = participant {
        value.push('\n');
        value.push_str(participant);
    }
    value
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
                parse_value(entry_value(token(1), kind, holds, None).as_bytes()),
                (kind, holds)
            );
        }
        let (kind, holds) = parse_value(entry_value(token(1), permits, true, None).as_bytes());
        assert_eq!(
            (kind, holds),
            (LeaseKind::Permits { count: 3, limit: 3 }, true)
        );
        assert_eq!(parse_value(b"garbage"), (LeaseKind::Exclusive, false));
        assert_eq!(parse_value(b"x;p0"), (LeaseKind::Exclusive, false));
        let candidate = entry_value(token(1), LeaseKind::Leader, true, Some("node-1;a"));
        assert_eq!(parse_value(candidate.as_bytes()), (LeaseKind::Leader, true));
        assert_eq!(participant_of(candidate.as_bytes()), Some("node-1;a"));
        assert_eq!(participant_of(b"x;x;h"), None);
    }
}
