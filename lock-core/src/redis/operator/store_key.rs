//! Which lock or primitive a Redis key of this backend belongs to, read back from its name
//! (for listings, which find keys by `SCAN`).
//!
//! A lock's keys are `<prefix>:{#<full key>}` and that with a suffix (`:waiters`, `:fence`,
//! ...); a primitive's are `<prefix>:<family>:{#<full key>}` and suffixed ones. A full key may
//! itself hold `}` and `:`, so the suffix is read from the end: a key ending in `}` is the
//! lock (or the primitive's holders), one ending in `}:waiters` (`}:queue`) its queue, and
//! any other suffix is bookkeeping a listing skips.

use crate::backend::Primitive;

/// The primitives' key segments, as `primitive_keys.rs` writes them.
const FAMILIES: [(&str, Primitive); 5] = [
    ("fair:", Primitive::Fair),
    ("rw:", Primitive::ReadWrite),
    ("sem:", Primitive::Semaphore),
    ("leader:", Primitive::Election),
    ("latch:", Primitive::Latch),
];

/// Which of a lock's or primitive's keys a listing found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Part {
    /// The lock itself, a primitive's holders, a latch's count.
    Main,
    /// Its queue of waiters.
    Queue,
}

/// The lock or primitive a Redis key names, if it is one's holders or queue, and which.
pub(super) fn parse(prefix: &str, redis_key: &str) -> Option<(Primitive, String, Part)> {
    let rest = redis_key.strip_prefix(prefix)?.strip_prefix(':')?;
    let (primitive, rest) = match rest.strip_prefix("{#") {
        Some(rest) => (Primitive::Lock, rest),
        None => FAMILIES.iter().find_map(|(segment, primitive)| {
            Some((*primitive, rest.strip_prefix(segment)?.strip_prefix("{#")?))
        })?,
    };
    let queue = match primitive {
        Primitive::Lock | Primitive::Latch => "}:waiters",
        _ => "}:queue",
    };
    let (full, part) = match rest.strip_suffix(queue) {
        Some(full) => (full, Part::Queue),
        None => (rest.strip_suffix('}')?, Part::Main),
    };
    (!full.is_empty()).then(|| (primitive, full.to_owned(), part))
}

/// The `SCAN MATCH` pattern of every key of this backend whose full key starts with
/// `full_prefix`: glob characters in it escaped, any family segment allowed before the tag.
pub(super) fn pattern(prefix: &str, full_prefix: &str) -> String {
    let mut pattern = String::with_capacity(prefix.len() + full_prefix.len() + 8);
    escape_into(&mut pattern, prefix);
    pattern.push_str(":*{#");
    escape_into(&mut pattern, full_prefix);
    pattern.push('*');
    pattern
}

/// The audit streams of every key whose full key starts with `full_prefix`.
pub(super) fn audit_pattern(prefix: &str, full_prefix: &str) -> String {
    let mut pattern = String::new();
    escape_into(&mut pattern, prefix);
    pattern.push_str(":{#");
    escape_into(&mut pattern, full_prefix);
    pattern.push_str("*}");
    pattern.push_str(super::super::keys::AUDIT);
    pattern
}

/// The full key of an audit stream's name.
pub(super) fn audit_key_of(prefix: &str, redis_key: &str) -> Option<String> {
    let rest = redis_key.strip_prefix(prefix)?.strip_prefix(":{#")?;
    let full = rest
        .strip_suffix(super::super::keys::AUDIT)?
        .strip_suffix('}')?;
    Some(full.to_owned())
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::keys::LockKeys;
    use crate::redis::primitive_keys::{Family, PrimitiveKeys};

    #[test]
    fn every_key_reads_back_as_its_lock_or_primitive() {
        for full in [
            "ns:order:1",
            "ns:a}:waiters",
            "ns:x}",
            "ns:we{i}rd:fence",
            "*?[]",
        ] {
            let lock = LockKeys::new("lock", full);
            assert_eq!(
                parse("lock", &lock.lock),
                Some((Primitive::Lock, full.to_owned(), Part::Main))
            );
            assert_eq!(
                parse("lock", &lock.waiters_key()),
                Some((Primitive::Lock, full.to_owned(), Part::Queue))
            );
            assert_eq!(parse("lock", &lock.fence().concat()), None);
            for (family, primitive) in [
                (Family::Fair, Primitive::Fair),
                (Family::ReadWrite, Primitive::ReadWrite),
                (Family::Semaphore, Primitive::Semaphore),
                (Family::Leader, Primitive::Election),
            ] {
                let keys = PrimitiveKeys::new("lock", family, full);
                let main = Some((primitive, full.to_owned(), Part::Main));
                assert_eq!(parse("lock", &keys.holders), main);
                let queue = Some((primitive, full.to_owned(), Part::Queue));
                assert_eq!(parse("lock", &keys.queue), queue);
                assert_eq!(parse("lock", &keys.leases), None);
                assert_eq!(parse("lock", &keys.deadlines), None);
            }
            let latch = crate::redis::primitive_keys::LatchKeys::new("lock", full);
            let count = Some((Primitive::Latch, full.to_owned(), Part::Main));
            assert_eq!(parse("lock", &latch.count), count);
            let waiters = Some((Primitive::Latch, full.to_owned(), Part::Queue));
            assert_eq!(parse("lock", &latch.waiters), waiters);
            let audit = format!("{}{}", lock.lock, crate::redis::keys::AUDIT);
            assert_eq!(audit_key_of("lock", &audit), Some(full.to_owned()));
        }
        assert_eq!(parse("other", "lock:{#k}"), None);
    }

    #[test]
    fn patterns_escape_glob_characters() {
        assert_eq!(pattern("lock", "ns:a*"), "lock:*{#ns:a\\**");
        assert_eq!(audit_pattern("lock", "ns:"), "lock:{#ns:*}:audit");
    }
}
