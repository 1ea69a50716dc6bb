//! Where each primitive lives in ZooKeeper, Curator's names for the nodes under it, and the
//! order of its queue.
//!
//! The lock `shop:order:42` under the root `/locks` is the container node
//! `/locks/shop:order:42`; each acquisition adds the ephemeral sequential child
//! `_c_<uuid>-lock-<sequence>`, exactly as Curator's `InterProcessMutex` (with its protected
//! mode) names them.
//!
//! # One directory per primitive
//! A fair lock, a read-write lock, a semaphore and a latch named `shop:order:42` are other
//! primitives than the lock of that name, so each has a path of its own: the lock's path plus
//! a suffix naming the primitive.
//!
//! | primitive | path | children (before the sequence) |
//! |---|---|---|
//! | lock | `/locks/shop:order:42` | `_c_<uuid>-lock-` |
//! | fair lock | `/locks/shop:order:42%fair` | `_c_<uuid>-lock-` |
//! | read-write lock | `/locks/shop:order:42%rw` | `_c_<uuid>-__READ__`, `_c_<uuid>-__WRIT__` |
//! | semaphore | `/locks/shop:order:42%semaphore` | `_c_<uuid>-permits-<count>-`, and `size` |
//! | count-down latch | `/locks/shop:order:42%latch` (a node, no children) | |
//!
//! A key never encodes to a raw `%` other than as the start of an escape of two *upper-case*
//! hex digits ([`encode_component`]), so a `%` followed by a lower-case word can only be a
//! suffix: no key's path is another key's primitive. The read-write lock's children are named
//! as Curator's `InterProcessReadWriteLock` names them, so a Curator reader or writer on the
//! `%rw` path orders in the same queue as ours (see `kinds.rs` for the names, `semaphore.rs` and
//! `latch.rs` for those two).
//!
//! # Queue order
//! The queue is ordered by the sequence ZooKeeper appends to every sequential child (ten
//! digits, one counter per parent), whatever the name before it: Curator's
//! `_c_<uuid>-lock-<seq>`, kazoo's `<uuid>__lock__<seq>`, the plain recipe's `lock-<seq>`. That
//! is creation order, the order every client following ZooKeeper's lock recipe waits in, so
//! ours waits for all of them. (Curator orders by the text after the last `lock-`, which is the
//! same order for its own nodes, but puts a kazoo node behind every Curator one.)
//!
//! A child without that suffix is not a sequential node, so it belongs to no lock recipe we
//! know, yet it might be some client's idea of holding the lock: it goes *ahead* of every
//! sequential child (in name order among themselves), so we wait for it rather than risk
//! entering beside a holder. A stray node left there blocks the lock until it is deleted.
//! ZooKeeper's counter is a signed 32-bit number: after 2^31 creates and deletes under one lock
//! node without the container ever being reaped, it turns negative and the order breaks, for
//! Curator and kazoo as much as for us.
//!
//! One exception to sequence order: a read a writer takes to downgrade
//! (`_c_<uuid>-beside-<writer's sequence>-__READ__<sequence>`) stands right behind its writer's
//! node, ahead of the writers queued after that one, since it is granted at once beside its
//! writer and must be waited for by them once its writer leaves. It is created in one
//! transaction with a check that its writer's node exists, so it can never land ahead of a
//! writer that holds. (Curator orders it by its own sequence: a Curator writer queued behind
//! our writer does not wait for our downgraded read, as it would not for Curator's own.)

use std::fmt::Write as _;

use super::kinds::beside_of;
use crate::{LockError, OwnerToken};

/// The name Curator's `InterProcessMutex` gives its lock nodes (before the sequence).
pub(super) const LOCK_NAME: &str = "lock-";

/// Checks a root path: absolute, not `/` itself, no empty or relative components.
pub(super) fn validate_root(root: &str) -> Result<(), LockError> {
    let valid = root.len() > 1
        && root.starts_with('/')
        && !root.ends_with('/')
        && root[1..]
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && !root.chars().any(needs_escape_in_path);
    if valid {
        Ok(())
    } else {
        Err(LockError::InvalidConfig(format!(
            "ZooKeeper root {root:?} must be an absolute path like \"/locks\" (not \"/\")"
        )))
    }
}

/// The lock node of `full_key` under `root`.
pub(super) fn lock_path(root: &str, full_key: &str) -> String {
    format!("{root}/{}", encode_component(full_key))
}

/// The node of the primitive `full_key` under `root`: the lock's path plus the primitive's
/// suffix (`""` for the lock itself, `"%fair"`, `"%rw"`, ...; see the module docs).
pub(super) fn primitive_path(root: &str, full_key: &str, suffix: &str) -> String {
    format!("{}{suffix}", lock_path(root, full_key))
}

/// Characters ZooKeeper refuses anywhere in a path.
fn needs_escape_in_path(ch: char) -> bool {
    let code = u32::from(ch);
    [
        0x0000..=0x001f,
        0x007f..=0x009f,
        0xd800..=0xf8ff,
        0xfff0..=0xffff,
    ]
    .into_iter()
    .any(|range| range.contains(&code))
}

/// A lock name as one path component: `/`, `%` and the characters ZooKeeper refuses are
/// percent-encoded (UTF-8 bytes), as are the names `.` and `..`; everything else is kept, so
/// the node stays readable for operators and for a Curator user naming the same path.
pub(super) fn encode_component(full_key: &str) -> String {
    let mut out = String::with_capacity(full_key.len());
    for ch in full_key.chars() {
        if ch == '/' || ch == '%' || needs_escape_in_path(ch) {
            for byte in ch.encode_utf8(&mut [0; 4]).bytes() {
                write!(out, "%{byte:02X}").ok();
            }
        } else {
            out.push(ch);
        }
    }
    if out == "." || out == ".." {
        out = out.replace('.', "%2E");
    }
    out
}

/// The full key a path component made by [`encode_component`] names (`None` for a component
/// it cannot have made: an escape that is not two upper-case hex digits, or bytes that are not
/// UTF-8).
pub(super) fn decode_component(component: &str) -> Option<String> {
    let bytes = component.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = bytes.get(at + 1..at + 3)?;
            if !hex
                .iter()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(b))
            {
                return None;
            }
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `_c_<uuid>-`: Curator's protection prefix, the start of every node an acquisition under
/// `owner` creates, whatever the primitive (the lock's is `_c_<uuid>-lock-`). The uuid is the
/// owner token, so a create whose reply was lost finds its node again (Curator's protected
/// mode) and a retry with the same token finds its grant.
pub(super) fn owner_prefix(owner: OwnerToken) -> String {
    let hex = owner.to_hex();
    format!(
        "_c_{}-{}-{}-{}-{}-",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// The owner token a `_c_<uuid>-` protection prefix names, if `name` starts with one.
pub(super) fn owner_of(name: &str) -> Option<OwnerToken> {
    let uuid = name.strip_prefix("_c_")?.get(..37)?.strip_suffix('-')?;
    let dashes_in_place = uuid
        .char_indices()
        .all(|(at, ch)| matches!(at, 8 | 13 | 18 | 23) == (ch == '-'));
    let hex: String = uuid.chars().filter(|&ch| ch != '-').collect();
    if !dashes_in_place || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    OwnerToken::from_hex(&hex.to_ascii_lowercase())
}

/// The name of a sequential child without its sequence (`None` for a child without one).
pub(super) fn stem(name: &str) -> Option<&str> {
    sequence(name).and_then(|_| name.get(..name.len() - SEQUENCE_DIGITS))
}

/// The sequence ZooKeeper appended to a sequential child's name.
pub(super) fn sequence(name: &str) -> Option<u64> {
    name.len()
        .checked_sub(SEQUENCE_DIGITS)
        .and_then(|at| name.get(at..))
        .filter(|suffix| suffix.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|digits| digits.parse().ok())
}

/// Digits ZooKeeper appends to a sequential node's name (`%010d` of the parent's counter).
pub(super) const SEQUENCE_DIGITS: usize = 10;

/// A child's place in the queue: unsequenced children first, then by sequence. The name
/// breaks ties, so the order is total and the same for every client (ZooKeeper never gives
/// two children of one parent the same sequence).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Rank<'a> {
    /// No sequence suffix: not a lock recipe's node; waited for, never skipped.
    Unsequenced(&'a str),
    /// Where it stands (its sequence, or for a downgraded read its writer's), then its own
    /// sequence for a downgraded read (0 otherwise, so the writer goes first).
    Sequenced(u64, u64, &'a str),
}

fn rank(name: &str) -> Rank<'_> {
    let Some(own) = sequence(name) else {
        return Rank::Unsequenced(name);
    };
    match stem(name).and_then(beside_of) {
        Some(writer) => Rank::Sequenced(writer, own, name),
        None => Rank::Sequenced(own, 0, name),
    }
}

/// Orders a primitive's children into its queue (who holds is `queue_rule`'s to say).
pub(super) fn sort_queue(children: &mut [String]) {
    children.sort_by(|a, b| rank(a).cmp(&rank(b)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_one_valid_component() {
        assert_eq!(encode_component("shop:order:42"), "shop:order:42");
        assert_eq!(encode_component("a/b%c"), "a%2Fb%25c");
        assert_eq!(encode_component(".."), "%2E%2E");
        assert_eq!(encode_component("x\u{1}y"), "x%01y");
        assert_eq!(encode_component("库存"), "库存");
        assert_eq!(lock_path("/locks", "ns:k/1"), "/locks/ns:k%2F1");
        assert_eq!(
            primitive_path("/locks", "ns:k%rw", "%rw"),
            "/locks/ns:k%25rw%rw"
        );
    }

    #[test]
    fn components_decode_back_to_their_keys() {
        for key in [
            "shop:order:42",
            "a/b%c",
            "..",
            ".",
            "x\u{1}y",
            "库存",
            "%rw",
            "a%2Fb",
        ] {
            assert_eq!(
                decode_component(&encode_component(key)).as_deref(),
                Some(key)
            );
        }
        for bad in ["%", "%2", "%2f", "%zz", "%FF", "a%fair"] {
            assert_eq!(decode_component(bad), None, "{bad}");
        }
    }

    #[test]
    fn roots_are_checked() {
        assert!(validate_root("/locks").is_ok());
        assert!(validate_root("/a/b").is_ok());
        for bad in ["", "/", "locks", "/locks/", "/a//b", "/a/./b", "/a/.."] {
            assert!(validate_root(bad).is_err(), "{bad:?}");
        }
    }

    fn sorted(children: &[&str]) -> Vec<String> {
        let mut children: Vec<String> = children.iter().map(|&c| c.to_owned()).collect();
        sort_queue(&mut children);
        children
    }

    #[test]
    fn our_nodes_are_named_like_curators() {
        let token = OwnerToken::from_hex("0123456789abcdef0123456789abcdef").unwrap();
        assert_eq!(
            format!("{}{LOCK_NAME}", owner_prefix(token)),
            "_c_01234567-89ab-cdef-0123-456789abcdef-lock-"
        );
    }

    #[test]
    fn owners_are_read_back_from_the_protection_prefix() {
        let token = OwnerToken::from_hex("0123456789abcdef0123456789abcdef").unwrap();
        let name = format!("{}__WRIT__0000000007", owner_prefix(token));
        assert_eq!(owner_of(&name), Some(token));
        assert_eq!(stem(&name), Some(&name[..name.len() - 10]));
        for foreign in [
            "lock-0000000001",
            "_c_0123-lock-0000000001",
            "_c_0123456789abcdef0123456789abcdef01234-x",
            "_c_+1234567-89ab-cdef-0123-456789abcdef-lock-",
            "_c_01234567-89ab-cdef-0123-456789abcdef",
            "_c_01234567-89ab-cdef-0123-456789abcdeé-lock-",
        ] {
            assert_eq!(owner_of(foreign), None, "{foreign}");
        }
        assert_eq!(stem("size"), None);
    }

    #[test]
    fn curator_nodes_are_ordered_by_sequence() {
        assert_eq!(
            sorted(&[
                "_c_ffff-lock-0000000003",
                "_c_0000-lock-0000000001",
                "_c_aaaa-lock-0000000002",
            ]),
            [
                "_c_0000-lock-0000000001",
                "_c_aaaa-lock-0000000002",
                "_c_ffff-lock-0000000003",
            ]
        );
    }

    #[test]
    fn foreign_recipes_are_ordered_by_the_same_sequence() {
        // kazoo's `Lock` and the plain recipe's names, among Curator's: by sequence, not name.
        assert_eq!(
            sorted(&[
                "_c_0000-lock-0000000004",
                "9f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e__lock__0000000003",
                "_c_ffff-lock-0000000002",
                "lock-0000000005",
                "x-0000000001",
                "_c_aaaa-__READ__0000000010",
            ]),
            [
                "x-0000000001",
                "_c_ffff-lock-0000000002",
                "9f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e__lock__0000000003",
                "_c_0000-lock-0000000004",
                "lock-0000000005",
                "_c_aaaa-__READ__0000000010",
            ]
        );
        // Curator's rule put the kazoo node last, behind every `lock-` node.
        assert_eq!(
            sorted(&["a__lock__0000000001", "_c_b-lock-0000000002"])[0],
            "a__lock__0000000001"
        );
    }

    #[test]
    fn a_downgraded_read_stands_right_behind_its_writer() {
        assert_eq!(
            sorted(&[
                "_c_b-__WRIT__0000000002",
                "_c_c-__READ__0000000004",
                "_c_a-beside-0000000001-__READ__0000000003",
                "_c_a-__WRIT__0000000001",
                "_c_d-beside-0000000001-__READ__0000000005",
            ]),
            [
                "_c_a-__WRIT__0000000001",
                "_c_a-beside-0000000001-__READ__0000000003",
                "_c_d-beside-0000000001-__READ__0000000005",
                "_c_b-__WRIT__0000000002",
                "_c_c-__READ__0000000004",
            ]
        );
    }

    #[test]
    fn children_without_a_sequence_go_first() {
        // Not sequential nodes (or a sequence ZooKeeper never writes): waited for, in name order.
        assert_eq!(
            sorted(&[
                "_c_0000-lock-0000000001",
                "lock",
                "zz-000000001",
                "lock-00000000x1",
                "écrou-000001",
                "",
                "a-lock--000000001",
            ]),
            [
                "",
                "a-lock--000000001",
                "lock",
                "lock-00000000x1",
                "zz-000000001",
                "écrou-000001",
                "_c_0000-lock-0000000001",
            ]
        );
        // A suffix cut through a multi-byte character is not a sequence either.
        assert_eq!(rank("é123456789"), Rank::Unsequenced("é123456789"));
        assert_eq!(
            rank("1234567890"),
            Rank::Sequenced(1_234_567_890, 0, "1234567890")
        );
    }
}
