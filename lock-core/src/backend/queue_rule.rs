//! Who holds what in an ordered queue: the grant rule of every primitive for the backends
//! whose waiters line up as ordered entries (ZooKeeper's sequential nodes, etcd's keys by
//! create revision). Each acquisition adds one entry and keeps it while it holds; an entry's
//! kind (and permit count) travels in its name or value, so every client applies the same
//! rule to the same list. The memory backend states the same rules in its own terms
//! (`memory/state.rs`).

use crate::backend::LeaseKind;
use crate::{LockError, OwnerToken, Result};

/// One entry of a queue, in queue order, as a backend reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QueueEntry {
    /// What the entry asks for.
    pub(crate) kind: LeaseKind,
    /// Whose entry it is (`None` for an entry another recipe wrote, owner unknown).
    pub(crate) owner: Option<OwnerToken>,
    /// The entry is known to hold what it asked for (a backend that marks holders says so;
    /// one that cannot says `false`). A holder behind the first entry is a writer's
    /// downgraded read: it still blocks the writers ahead of it.
    pub(crate) holds: bool,
}

/// What an entry may do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// It holds what it asked for.
    Granted,
    /// It waits until the entry at this index is gone (then looks again).
    WaitFor(usize),
    /// It waits for any entry ahead of it to go (a semaphore: whoever leaves frees permits).
    WaitForAnyAhead,
}

/// The admission of the entry at `me` in `entries` (queue order). `size` is the semaphore's
/// size (ignored by the other kinds); `downgrade_from` the owner token of the caller's own
/// write entry, which does not block its read.
///
/// - Lock, fair lock, write lock, leadership: only the first entry holds, and only while no entry behind
///   it holds (a writer's downgraded read, read beside its writer, outlives that writer's
///   entry); each waiter watches the entry just ahead of it (no herd), or that holder.
/// - Read lock: held while no write entry is ahead (a waiting writer blocks newer readers);
///   a reader watches the last write entry ahead of it.
/// - Permits: held while the permits of every entry up to and including this one fit the
///   size, so waiting is first come, first served.
pub(crate) fn admit(
    entries: &[QueueEntry],
    me: usize,
    size: u32,
    downgrade_from: Option<OwnerToken>,
) -> Result<Admission> {
    let Some(entry) = entries.get(me) else {
        return Err(LockError::Protocol {
            backend: "queue",
            detail: format!("entry {me} of a queue of {}", entries.len()),
        });
    };
    let ahead = &entries[..me];
    Ok(match entry.kind {
        LeaseKind::Read => {
            // The caller's own write entry holds the lock (the client asks to downgrade only
            // from a live write lease): its read goes in beside it, ahead of the writers
            // queued behind it, which would otherwise wait for each other.
            let downgrading = downgrade_from.is_some()
                && ahead
                    .iter()
                    .any(|e| e.kind == LeaseKind::Write && e.owner == downgrade_from);
            let blocking_writer = ahead
                .iter()
                .rposition(|e| !matches!(e.kind, LeaseKind::Read | LeaseKind::Permits { .. }));
            match blocking_writer {
                Some(index) if !downgrading => Admission::WaitFor(index),
                _ => Admission::Granted,
            }
        }
        LeaseKind::Permits { count, .. } => {
            if count > size {
                return Err(LockError::InvalidInput {
                    what: "permit count",
                    reason: format!("{count} is more than the semaphore's {size} permits"),
                });
            }
            let wanted: u64 = entries[..=me]
                .iter()
                .map(|e| u64::from(permits(e.kind)))
                .sum();
            if wanted <= u64::from(size) {
                Admission::Granted
            } else {
                Admission::WaitForAnyAhead
            }
        }
        _ if me > 0 => Admission::WaitFor(me - 1),
        _ => match entries[1..].iter().position(|e| e.holds) {
            Some(index) => Admission::WaitFor(index + 1),
            None => Admission::Granted,
        },
    })
}

/// Permits an entry takes: its count for a semaphore entry, 1 for anything else that found
/// its way into a semaphore's queue.
fn permits(kind: LeaseKind) -> u32 {
    match kind {
        LeaseKind::Permits { count, .. } => count,
        _ => 1,
    }
}

/// The permits holders of leases of `kinds` take together (see [`permits`]), at most
/// `u32::MAX`: a semaphore's permits in use.
pub(crate) fn permits_held(kinds: impl IntoIterator<Item = LeaseKind>) -> u32 {
    kinds.into_iter().map(permits).fold(0, u32::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(byte: u8) -> OwnerToken {
        OwnerToken::from_hex(&format!("{byte:02x}").repeat(16)).unwrap()
    }

    fn entry(kind: LeaseKind, owner: u8) -> QueueEntry {
        QueueEntry {
            kind,
            owner: Some(token(owner)),
            holds: false,
        }
    }

    #[test]
    fn exclusive_kinds_hold_first_and_watch_the_one_ahead() {
        for kind in [LeaseKind::Exclusive, LeaseKind::Fair, LeaseKind::Write] {
            let queue = [entry(kind, 1), entry(kind, 2), entry(kind, 3)];
            assert_eq!(admit(&queue, 0, 0, None).unwrap(), Admission::Granted);
            assert_eq!(admit(&queue, 2, 0, None).unwrap(), Admission::WaitFor(1));
        }
    }

    #[test]
    fn readers_share_until_a_writer_is_ahead() {
        let queue = [
            entry(LeaseKind::Read, 1),
            entry(LeaseKind::Read, 2),
            entry(LeaseKind::Write, 3),
            entry(LeaseKind::Read, 4),
            entry(LeaseKind::Write, 5),
            entry(LeaseKind::Read, 6),
        ];
        assert_eq!(admit(&queue, 1, 0, None).unwrap(), Admission::Granted);
        assert_eq!(admit(&queue, 2, 0, None).unwrap(), Admission::WaitFor(1));
        assert_eq!(admit(&queue, 3, 0, None).unwrap(), Admission::WaitFor(2));
        assert_eq!(admit(&queue, 5, 0, None).unwrap(), Admission::WaitFor(4));
    }

    #[test]
    fn a_writer_reads_beside_its_own_write_entry() {
        let queue = [
            entry(LeaseKind::Write, 1),
            entry(LeaseKind::Write, 2),
            entry(LeaseKind::Read, 1),
        ];
        let own_write_then_read = [queue[0], queue[2]];
        assert_eq!(
            admit(&own_write_then_read, 1, 0, Some(token(1))).unwrap(),
            Admission::Granted
        );
        // Another writer queued behind the holding writer waits for it, so it must not block
        // the holder's own read.
        assert_eq!(
            admit(&queue, 2, 0, Some(token(1))).unwrap(),
            Admission::Granted
        );
        // Someone else's read waits for the writers.
        assert_eq!(
            admit(&queue, 2, 0, Some(token(9))).unwrap(),
            Admission::WaitFor(1)
        );
    }

    #[test]
    fn permits_are_first_come_first_served() {
        let permits = |count| LeaseKind::Permits { count, limit: 3 };
        let queue = [
            entry(permits(2), 1),
            entry(permits(2), 2),
            entry(permits(1), 3),
        ];
        assert_eq!(admit(&queue, 0, 3, None).unwrap(), Admission::Granted);
        assert_eq!(
            admit(&queue, 1, 3, None).unwrap(),
            Admission::WaitForAnyAhead
        );
        // One free permit, but the request for two came first.
        assert_eq!(
            admit(&queue, 2, 3, None).unwrap(),
            Admission::WaitForAnyAhead
        );
        assert!(admit(&queue, 0, 1, None).unwrap_err().is_invalid_input());
    }

    /// W(a) held, W(b) queued, a read beside W(a) (a downgrade), then W(a) released: the queue
    /// is [W(b), R(a) holding]. W(b) is first, but the downgraded reader still reads.
    #[test]
    fn a_writer_waits_for_a_downgraded_reader_behind_it() {
        let mut reader = entry(LeaseKind::Read, 1);
        reader.holds = true;
        let queue = [entry(LeaseKind::Write, 2), reader];
        assert_eq!(admit(&queue, 0, 0, None).unwrap(), Admission::WaitFor(1));
        let fair = [entry(LeaseKind::Fair, 2), entry(LeaseKind::Fair, 3)];
        assert_eq!(admit(&fair, 0, 0, None).unwrap(), Admission::Granted);
    }
}
