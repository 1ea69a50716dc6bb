//! Which primitive a queue belongs to, and what each node in it asks for, told by names alone.
//!
//! Each kind of lease queues in its primitive's own directory (the lock's path plus a suffix,
//! see `path.rs`), and each node's name says what it asks for, before the sequence ZooKeeper
//! appends:
//! - lock and fair lock: `_c_<uuid>-lock-` (Curator's `InterProcessMutex`);
//! - read and write lock: `_c_<uuid>-__READ__` and `_c_<uuid>-__WRIT__` (Curator's
//!   `InterProcessReadWriteLock`, so Curator's readers and writers queue with ours);
//! - a read a writer takes to downgrade: `_c_<uuid>-beside-<writer's sequence>-__READ__`
//!   (still a read node to Curator; `path.rs` puts it right behind its writer);
//! - semaphore: `_c_<uuid>-permits-<count>-`.
//!
//! So one `getChildren` gives every client the whole queue, kinds and permit counts included,
//! and every client applies `queue_rule::admit` to the same list. A node of a name we do not
//! know (another recipe's) counts as an exclusive entry: it blocks readers and writers alike,
//! and takes one permit of a semaphore.

use super::path::{owner_of, owner_prefix, sequence, stem, LOCK_NAME, SEQUENCE_DIGITS};
use crate::backend::queue_rule::QueueEntry;
use crate::backend::LeaseKind;
use crate::OwnerToken;

/// What Curator's read-write lock names its read nodes (before the sequence).
const READ_NAME: &str = "__READ__";
/// What Curator's read-write lock names its write nodes (before the sequence).
const WRITE_NAME: &str = "__WRIT__";
/// The start of a semaphore node's name after the protection prefix: `permits-<count>-`.
const PERMITS_NAME: &str = "permits-";
/// What Curator's `LeaderLatch` names its nodes (before the sequence).
const LATCH_NAME: &str = "latch-";
/// The start of a downgraded read's name after the protection prefix:
/// `beside-<writer's sequence>-__READ__`.
const BESIDE_NAME: &str = "beside-";

/// The primitives with a queue: each is a directory of its own per key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Family {
    /// The lock.
    Lock,
    /// The fair lock.
    Fair,
    /// The read-write lock (both sides in one queue).
    ReadWrite,
    /// The semaphore.
    Semaphore,
    /// An election (Curator's `LeaderLatch`).
    Leader,
}

impl Family {
    /// The primitive whose queue a lease of `kind` joins.
    pub(super) fn of(kind: LeaseKind) -> Self {
        match kind {
            LeaseKind::Exclusive => Self::Lock,
            LeaseKind::Fair => Self::Fair,
            LeaseKind::Read | LeaseKind::Write => Self::ReadWrite,
            LeaseKind::Permits { .. } => Self::Semaphore,
            LeaseKind::Leader => Self::Leader,
        }
    }

    /// What follows the lock's path to make this primitive's directory.
    pub(super) fn suffix(self) -> &'static str {
        match self {
            Self::Lock => "",
            Self::Fair => "%fair",
            Self::ReadWrite => "%rw",
            Self::Semaphore => "%semaphore",
            Self::Leader => "%leader",
        }
    }
}

/// The name (before the sequence) of the node an acquisition of `kind` under `owner` creates.
pub(super) fn node_name(owner: OwnerToken, kind: LeaseKind) -> String {
    let prefix = owner_prefix(owner);
    match kind {
        LeaseKind::Exclusive | LeaseKind::Fair => format!("{prefix}{LOCK_NAME}"),
        LeaseKind::Read => format!("{prefix}{READ_NAME}"),
        LeaseKind::Write => format!("{prefix}{WRITE_NAME}"),
        LeaseKind::Permits { count, .. } => format!("{prefix}{PERMITS_NAME}{count}-"),
        LeaseKind::Leader => format!("{prefix}{LATCH_NAME}"),
    }
}

/// The name (before the sequence) of the read node a writer's owner `owner` creates to
/// downgrade from the write node of sequence `writer`.
pub(super) fn downgrade_name(owner: OwnerToken, writer: u64) -> String {
    format!(
        "{}{BESIDE_NAME}{writer:0width$}-{READ_NAME}",
        owner_prefix(owner),
        width = SEQUENCE_DIGITS
    )
}

/// The writer's sequence a downgraded read's name (without its own sequence) stands beside.
pub(super) fn beside_of(stem: &str) -> Option<u64> {
    let rest = stem.strip_suffix(READ_NAME)?.strip_suffix('-')?;
    let before = rest.get(..rest.len().checked_sub(SEQUENCE_DIGITS)?)?;
    (before == BESIDE_NAME || before.ends_with(&format!("-{BESIDE_NAME}")))
        .then(|| sequence(rest))
        .flatten()
}

/// The queue entry the child `name` stands for.
pub(super) fn entry(name: &str) -> QueueEntry {
    QueueEntry {
        kind: stem(name).map_or(LeaseKind::Exclusive, kind_of_stem),
        owner: owner_of(name),
        // A downgraded read is ordered beside its writer instead (see `path.rs`).
        holds: false,
    }
}

fn kind_of_stem(stem: &str) -> LeaseKind {
    if stem.ends_with(READ_NAME) {
        return LeaseKind::Read;
    }
    if stem.ends_with(WRITE_NAME) {
        return LeaseKind::Write;
    }
    let count = stem
        .strip_suffix('-')
        .and_then(|rest| rest.rsplit_once(PERMITS_NAME))
        .filter(|(before, _)| before.is_empty() || before.ends_with('-'))
        .and_then(|(_, digits)| {
            digits
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| digits.parse::<u32>().ok())
                .flatten()
        })
        .filter(|count| *count > 0);
    match count {
        Some(count) => LeaseKind::Permits {
            count,
            limit: count,
        },
        None => LeaseKind::Exclusive,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> OwnerToken {
        OwnerToken::from_hex("0123456789abcdef0123456789abcdef").unwrap()
    }

    #[test]
    fn names_round_trip_to_entries() {
        for kind in [
            LeaseKind::Exclusive,
            LeaseKind::Read,
            LeaseKind::Write,
            LeaseKind::Permits { count: 3, limit: 3 },
        ] {
            let name = format!("{}0000000042", node_name(token(), kind));
            assert_eq!(
                entry(&name),
                QueueEntry {
                    kind,
                    owner: Some(token()),
                    holds: false,
                },
                "{name}"
            );
        }
        // The fair lock's nodes are the lock's (in a directory of their own).
        assert_eq!(
            node_name(token(), LeaseKind::Fair),
            node_name(token(), LeaseKind::Exclusive)
        );
        assert_eq!(
            node_name(token(), LeaseKind::Write),
            "_c_01234567-89ab-cdef-0123-456789abcdef-__WRIT__"
        );
    }

    #[test]
    fn downgraded_reads_name_their_writer() {
        let name = format!("{}0000000043", downgrade_name(token(), 42));
        assert_eq!(
            name,
            "_c_01234567-89ab-cdef-0123-456789abcdef-beside-0000000042-__READ__0000000043"
        );
        assert_eq!(stem(&name).and_then(beside_of), Some(42));
        assert_eq!(entry(&name).kind, LeaseKind::Read);
        assert_eq!(entry(&name).owner, Some(token()));
        for plain in [
            "_c_01234567-89ab-cdef-0123-456789abcdef-__READ__",
            "xbeside-0000000042-__READ__",
            "beside-000000004-__READ__",
            "beside-0000000042-__WRIT__",
        ] {
            assert_eq!(beside_of(plain), None, "{plain}");
        }
        assert_eq!(beside_of("beside-0000000042-__READ__"), Some(42));
    }

    #[test]
    fn foreign_and_odd_names_are_exclusive() {
        let exclusive = |name: &str| entry(name).kind == LeaseKind::Exclusive;
        // Curator's own read-write nodes, without our owner.
        assert_eq!(entry("__READ__0000000001").kind, LeaseKind::Read);
        assert_eq!(
            entry("_c_9b2f3c4e-0000-4000-8000-00000000c0de-__WRIT__0000000002").kind,
            LeaseKind::Write
        );
        for name in [
            "size",
            "__READ__",
            "lock-0000000001",
            "permits-0-0000000001",
            "permits--0000000001",
            "permits-+1-0000000001",
            "permits-99999999999-0000000001",
            "xpermits-2-0000000001",
        ] {
            assert!(exclusive(name), "{name}");
        }
        assert_eq!(
            entry("permits-2-0000000001").kind,
            LeaseKind::Permits { count: 2, limit: 2 }
        );
    }

    #[test]
    fn each_primitive_has_its_own_suffix() {
        let suffixes = [
            Family::Lock,
            Family::Fair,
            Family::ReadWrite,
            Family::Semaphore,
        ]
        .map(Family::suffix);
        for (i, a) in suffixes.iter().enumerate() {
            assert!(suffixes[i + 1..].iter().all(|b| a != b));
        }
        assert_eq!(Family::of(LeaseKind::Read), Family::of(LeaseKind::Write));
    }
}
