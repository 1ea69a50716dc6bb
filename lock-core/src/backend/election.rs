//! Leader election, an optional capability: reading who leads an election. Campaigning is a
//! lease of [`LeaseKind::Leader`](super::LeaseKind::Leader), granted, renewed and released as
//! any lease is; what an election needs beyond that is for everyone, candidate or not, to read
//! the leader's participant id and term.

use std::future::Future;

use tokio::time::Instant;

use super::{BoxFuture, LockBackend};
use crate::{FencingToken, LockKey, Result};

/// Who leads an election, as read from the store.
///
/// ```
/// use lock_core::{FencingToken, Leader};
///
/// let leader = Leader::new("scheduler-1", FencingToken::new(7));
/// assert_eq!(leader.participant, "scheduler-1");
/// assert!(leader.fencing_token > FencingToken::new(6));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leader {
    /// The id the leader campaigned with (for a Curator `LeaderLatch` on ZooKeeper, its id).
    pub participant: String,
    /// The leader's term: its lease's fencing token, larger than every earlier leader's.
    pub fencing_token: FencingToken,
}

impl Leader {
    /// A leader read from a store.
    #[must_use]
    pub fn new(participant: impl Into<String>, fencing_token: FencingToken) -> Self {
        Self {
            participant: participant.into(),
            fencing_token,
        }
    }
}

/// What [`ElectionBackend::leader_after`] waits on: the election `key`, the leader the caller
/// has `seen` (`None`: nobody), and the instant `until` which it waits at most.
///
/// ```
/// use lock_core::backend::{ElectionBackend, LeaderWait};
/// use lock_core::{LockKey, MemoryBackend};
/// use tokio::time::{Duration, Instant};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let key = LockKey::new("", "scheduler")?;
/// let until = Instant::now() + Duration::from_millis(10);
/// // Nobody leads, and nobody did: the answer comes at `until`.
/// let leader = MemoryBackend::new().leader_after(LeaderWait { key: &key, seen: None, until }).await?;
/// assert_eq!(leader, None);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct LeaderWait<'a> {
    /// The election.
    pub key: &'a LockKey,
    /// The leader the caller knows of.
    pub seen: Option<&'a Leader>,
    /// When to answer whatever the leader is.
    pub until: Instant,
}

/// A backend that holds elections: it grants [`LeaseKind::Leader`](super::LeaseKind::Leader)
/// leases in campaign order and keeps each candidate's participant id with its lease, so that
/// anyone can read the leader. It hands itself out from [`LockBackend::optional_traits`].
///
/// ```
/// use lock_core::backend::{ElectionBackend, LockBackend};
/// use lock_core::{LockKey, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let backend = MemoryBackend::new();
/// assert!(backend.optional_traits().election.is_some());
/// let key = LockKey::new("", "scheduler")?;
/// assert_eq!(backend.leader(&key).await?, None);
/// # Ok(()) }
/// ```
pub trait ElectionBackend: LockBackend {
    /// The current leader of the election `key`: the live holder of its leadership lease, with
    /// the participant id it campaigned with and its fencing token as the term; `None` when
    /// nobody leads.
    fn leader(&self, key: &LockKey) -> impl Future<Output = Result<Option<Leader>>> + Send;

    /// Answers the leader of `key` as soon as it differs from `seen` (another participant, a
    /// new term, or nobody), or whatever it is at `until` (the caller asks again). The default
    /// reads the leader and, while it is `seen`, once more at `until`; a store that can say when
    /// an election changes (a watch, a published message, a lease's known end) waits for that.
    fn leader_after(
        &self,
        wait: LeaderWait<'_>,
    ) -> impl Future<Output = Result<Option<Leader>>> + Send {
        let LeaderWait { key, seen, until } = wait;
        async move {
            let leader = self.leader(key).await?;
            if leader.as_ref() != seen {
                return Ok(leader);
            }
            tokio::time::sleep_until(until).await;
            self.leader(key).await
        }
    }
}

/// The object-safe form of [`ElectionBackend`], implemented for every `ElectionBackend`.
pub trait DynElectionBackend: Send + Sync {
    /// See [`ElectionBackend::leader`].
    fn leader<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<Option<Leader>>>;

    /// See [`ElectionBackend::leader_after`].
    fn leader_after<'a>(&'a self, wait: LeaderWait<'a>) -> BoxFuture<'a, Result<Option<Leader>>>;
}

impl<B: ElectionBackend> DynElectionBackend for B {
    fn leader<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<Option<Leader>>> {
        Box::pin(ElectionBackend::leader(self, key))
    }

    fn leader_after<'a>(&'a self, wait: LeaderWait<'a>) -> BoxFuture<'a, Result<Option<Leader>>> {
        Box::pin(ElectionBackend::leader_after(self, wait))
    }
}
