//! The leases a PostgreSQL lock-table backend has granted in this process, by owner token, with
//! their lost signals: how a forced release in any process reaches the holder at once. The
//! release's transaction sends `NOTIFY <table>_revoked, '<owner>\n<operator>\n<reason>\n<lock
//! key>'`; the backend's listener hands it to [`LeaseBook::revoke`], which fires the lost
//! signal of the lease it names with [`LostReason::Revoked`].
//!
//! A lease is in the book from its grant until its [`SqlLease`](super::SqlLease) is dropped
//! (its [`Registration`] goes with it), so the book never holds more than the leases alive.
//! MySQL has no server push, so a MySQL backend's book stays empty.
#![cfg_attr(not(feature = "postgres"), allow(dead_code))]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::sync::lock;
use crate::{LossSignal, LostReason};

/// The `NOTIFY` channel of the revocations of the leases of the lock table `table` (its
/// waiters' is the table's name).
pub(crate) fn revoke_channel(table: &str) -> String {
    format!("{table}_revoked")
}

/// The leases granted in this process, by owner token (hex).
#[derive(Default)]
pub(crate) struct LeaseBook {
    leases: Mutex<HashMap<String, Entry>>,
    next: AtomicU64,
}

struct Entry {
    /// Tells this registration from a later one of the same owner (a retried grant).
    id: u64,
    lock_key: String,
    loss: LossSignal,
}

/// A lease's place in the book; dropping it takes the lease out.
pub(crate) struct Registration {
    book: Arc<LeaseBook>,
    owner: String,
    id: u64,
}

impl LeaseBook {
    /// Enters the lease of `owner` (hex) on `lock_key`: its lost signal, and the registration
    /// that keeps it in the book.
    pub(crate) fn register(
        self: &Arc<Self>,
        lock_key: &str,
        owner: &str,
    ) -> (Registration, LossSignal) {
        let loss = LossSignal::new();
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.leases).insert(
            owner.to_owned(),
            Entry {
                id,
                lock_key: lock_key.to_owned(),
                loss: loss.clone(),
            },
        );
        let registration = Registration {
            book: self.clone(),
            owner: owner.to_owned(),
            id,
        };
        (registration, loss)
    }

    /// Takes a revocation notification's payload (`<owner>\n<operator>\n<reason>\n<lock
    /// key>`: operator and reason hold no control characters, the lock key goes last as it
    /// may hold anything) and fires the lost signal of the lease it names, if it is in the
    /// book. Returns whether it was.
    pub(crate) fn revoke(&self, payload: &str) -> bool {
        let Some(revocation) = Revocation::parse(payload) else {
            tracing::debug!("a revocation notification that does not parse; ignored");
            return false;
        };
        let loss = lock(&self.leases)
            .get(revocation.owner)
            .filter(|e| e.lock_key == revocation.lock_key)
            .map(|e| e.loss.clone());
        let Some(loss) = loss else {
            return false;
        };
        loss.fire(LostReason::Revoked {
            operator: revocation.operator.to_owned(),
            reason: revocation.reason.to_owned(),
        });
        true
    }

    /// How many leases the book holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.leases).len()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut leases = lock(&self.book.leases);
        if leases.get(&self.owner).is_some_and(|e| e.id == self.id) {
            leases.remove(&self.owner);
        }
    }
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// A revocation notification's payload, read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Revocation<'a> {
    pub(crate) owner: &'a str,
    pub(crate) operator: &'a str,
    pub(crate) reason: &'a str,
    pub(crate) lock_key: &'a str,
}

impl<'a> Revocation<'a> {
    /// The payload of a revocation of `owner`'s lease on `lock_key`.
    pub(crate) fn payload(owner: &str, operator: &str, reason: &str, lock_key: &str) -> String {
        format!("{owner}\n{operator}\n{reason}\n{lock_key}")
    }

    fn parse(payload: &'a str) -> Option<Self> {
        let mut parts = payload.splitn(4, '\n');
        Some(Self {
            owner: parts.next()?,
            operator: parts.next()?,
            reason: parts.next()?,
            lock_key: parts.next()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revocation_fires_the_named_lease_only_while_it_is_booked() {
        let book = Arc::new(LeaseBook::default());
        let (kept, kept_loss) = book.register("ns:a", "aa");
        let (other, other_loss) = book.register("ns:b\nwith a line", "bb");
        // Another key of the same owner, or a payload that does not parse: nothing fires.
        assert!(!book.revoke(&Revocation::payload("aa", "ops", "why", "ns:b")));
        assert!(!book.revoke("aa\nops"));
        assert!(!kept_loss.is_fired());
        let payload = Revocation::payload("bb", "alice", "stuck job", "ns:b\nwith a line");
        assert!(book.revoke(&payload));
        assert_eq!(
            other_loss.reason(),
            Some(LostReason::Revoked {
                operator: "alice".into(),
                reason: "stuck job".into()
            })
        );
        assert!(!kept_loss.is_fired());
        drop(other);
        assert_eq!(book.len(), 1);
        // A later registration of the same owner is not removed by an earlier one's drop.
        let (again, _) = book.register("ns:a", "aa");
        drop(kept);
        assert_eq!(book.len(), 1);
        drop(again);
        assert_eq!(book.len(), 0);
    }
}
