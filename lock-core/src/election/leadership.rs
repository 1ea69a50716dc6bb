//! [`Leadership`]: a won campaign, held until resigned or lost.

use std::future::Future;
use std::sync::Arc;

use crate::{FencingToken, LockGuard, LostReason, Result};

/// This participant leads its election: the term, the lost signal and the resignation. The
/// lease behind it is renewed by the client's watchdog while this lives; dropping it resigns in
/// the background.
///
/// ```
/// use lock_core::{LockClient, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(MemoryBackend::new());
/// let leadership = locks.election("indexer").participant("node-1").campaign().await?;
/// assert_eq!(leadership.participant(), "node-1");
/// leadership.ensure_leading()?; // before each step of the leader's work
/// assert!(leadership.resign().await?);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Leadership {
    guard: LockGuard,
    participant: Arc<str>,
}

impl Leadership {
    pub(super) fn new(guard: LockGuard, participant: Arc<str>) -> Self {
        Self { guard, participant }
    }

    /// The term: the leadership lease's fencing token, larger than every earlier leader's of
    /// this election. Hand it to what the leader writes, so that a store which refuses older
    /// terms refuses a former leader's late writes.
    #[must_use]
    pub fn fencing_token(&self) -> FencingToken {
        self.guard.fencing_token()
    }

    /// The id this participant campaigned as.
    #[must_use]
    pub fn participant(&self) -> &str {
        &self.participant
    }

    /// True once leadership is known lost.
    #[must_use]
    pub fn is_lost(&self) -> bool {
        self.guard.is_lost()
    }

    /// Resolves when leadership is lost behind the leader's back: its lease expired or could
    /// not be renewed, its session ended, or its entry was deleted. Never while it leads.
    pub fn lost(&self) -> impl Future<Output = LostReason> + Send + 'static {
        self.guard.lost()
    }

    /// An error ([`LockError::LeaseLost`](crate::LockError::LeaseLost)) when leadership is
    /// gone, by signal or by the clock: call it before each step of the leader's work.
    pub fn ensure_leading(&self) -> Result<()> {
        self.guard.ensure_held()
    }

    /// Steps down, handing leadership to the next candidate: `Ok(true)` when this participant
    /// still led until now, `Ok(false)` when it had already lost it.
    pub async fn resign(self) -> Result<bool> {
        self.guard.release().await
    }

    /// The lease behind the leadership, for what a [`LockGuard`] offers beyond the above.
    pub fn guard(&self) -> &LockGuard {
        &self.guard
    }
}
