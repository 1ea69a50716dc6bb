//! Who re-enters a lock: the current async task, or an explicit owner handle.
//!
//! Reentrancy is counted per *owner*, not per thread, because async tasks hop between
//! threads. The owner of an acquisition is, in order:
//! 1. the [`LockOwner`] passed with [`LockRequest::owner`](crate::LockRequest::owner);
//! 2. the [`LockOwner`] whose [`scope`](LockOwner::scope) the caller runs in;
//! 3. the current tokio task ([`tokio::task::try_id`]);
//! 4. outside any task (inside `block_on`), the current thread.
//!
//! The same owner re-acquiring a key it holds gets a counted re-entry; any other owner, in this
//! process or another, waits like a remote one.
//!
//! A guard stays with the owner that acquired it even if it is moved to another task. Tokio
//! reuses a finished task's id, so a guard that outlives the task that took it should be taken
//! under an explicit [`LockOwner`] instead.

use std::sync::atomic::{AtomicU64, Ordering};

tokio::task_local! {
    static SCOPED_OWNER: LockOwner;
}

/// An explicit lock owner: carry it into spawned tasks so they re-enter locks the owner holds.
///
/// ```
/// use lock_core::{LockClient, LockOwner, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(MemoryBackend::new());
/// let owner = LockOwner::new();
/// let outer = locks.lock("job:7").owner(&owner).await?;
/// let helper = tokio::spawn({
///     let (locks, owner) = (locks.clone(), owner.clone());
///     // Another task, same owner: a re-entry, not a deadlock.
///     async move { locks.lock("job:7").owner(&owner).try_acquire().await }
/// });
/// let inner = helper.await.unwrap()?.expect("re-entered");
/// assert_eq!(inner.hold_count(), 2);
/// inner.release().await?;
/// outer.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockOwner {
    id: u64,
}

static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

impl LockOwner {
    /// A new owner, distinct from every task and every other `LockOwner`.
    #[must_use]
    pub fn new() -> Self {
        Self {
            id: NEXT_OWNER.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Runs `future` with this owner as the default for every acquisition inside it.
    pub async fn scope<F: std::future::Future>(&self, future: F) -> F::Output {
        SCOPED_OWNER.scope(self.clone(), future).await
    }
}

impl Default for LockOwner {
    fn default() -> Self {
        Self::new()
    }
}

/// The identity reentrancy is counted under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum OwnerId {
    Handle(u64),
    Task(tokio::task::Id),
    Thread(std::thread::ThreadId),
}

impl OwnerId {
    /// The owner of an acquisition made now, with `explicit` taking precedence.
    pub(crate) fn resolve(explicit: Option<&LockOwner>) -> Self {
        if let Some(owner) = explicit {
            return Self::Handle(owner.id);
        }
        if let Ok(id) = SCOPED_OWNER.try_with(|owner| owner.id) {
            return Self::Handle(id);
        }
        match tokio::task::try_id() {
            Some(task) => Self::Task(task),
            None => Self::Thread(std::thread::current().id()),
        }
    }
}
