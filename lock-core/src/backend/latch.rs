//! The count-down latch, an optional capability. A backend that offers it implements
//! [`LatchBackend`] (in its own `latch.rs`) and hands itself out from
//! [`LockBackend::optional_traits`]; [`CountDownLatch`](crate::CountDownLatch) reaches it that
//! way, and on a backend that does not, answers [`LockError::Unsupported`](crate::LockError)
//! before anything is sent.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::{BoxFuture, LockBackend};
use crate::{LockKey, Result};

/// A backend that keeps count-down latches: a count per key that waiters wait to see reach zero.
/// The latch holds no lease. Declare it in [`Primitives::latch`](super::Primitives::latch) too.
///
/// ```
/// use std::time::Duration;
/// use lock_core::backend::{LatchBackend, LockBackend};
/// use lock_core::{LockKey, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let backend = MemoryBackend::new();
/// assert!(backend.optional_traits().latch.is_some());
/// let key = LockKey::new("", "warm-up")?;
/// assert!(backend.latch_create(&key, 1, Duration::from_secs(60)).await?);
/// assert_eq!(backend.latch_count_down(&key).await?, 0);
/// assert!(backend.latch_wait(&key, None).await?, "open at zero");
/// # Ok(()) }
/// ```
pub trait LatchBackend: LockBackend {
    /// Creates the latch `key` with `count` (at least 1), expiring `expire` after creation;
    /// `Ok(false)`, changing nothing, when a latch with a count above zero exists.
    fn latch_create(
        &self,
        key: &LockKey,
        count: u64,
        expire: Duration,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Counts the latch `key` down by one and returns what is left; at zero the latch is gone
    /// and every waiter is woken. A missing latch stays missing (`Ok(0)`).
    fn latch_count_down(&self, key: &LockKey) -> impl Future<Output = Result<u64>> + Send;

    /// The latch `key`'s count; `0` when it reached zero, expired or never existed.
    fn latch_count(&self, key: &LockKey) -> impl Future<Output = Result<u64>> + Send;

    /// Waits until the latch `key` is at zero (or gone), by push; `Ok(false)` when `deadline`
    /// passed first. Dropping the future leaves nothing behind.
    fn latch_wait(
        &self,
        key: &LockKey,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Result<bool>> + Send;
}

/// The object-safe form of [`LatchBackend`], implemented for every `LatchBackend`.
pub trait DynLatchBackend: Send + Sync {
    /// See [`LatchBackend::latch_create`].
    fn latch_create<'a>(
        &'a self,
        key: &'a LockKey,
        count: u64,
        expire: Duration,
    ) -> BoxFuture<'a, Result<bool>>;
    /// See [`LatchBackend::latch_count_down`].
    fn latch_count_down<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<u64>>;
    /// See [`LatchBackend::latch_count`].
    fn latch_count<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<u64>>;
    /// See [`LatchBackend::latch_wait`].
    fn latch_wait<'a>(
        &'a self,
        key: &'a LockKey,
        deadline: Option<Instant>,
    ) -> BoxFuture<'a, Result<bool>>;
}

impl<B: LatchBackend> DynLatchBackend for B {
    fn latch_create<'a>(
        &'a self,
        key: &'a LockKey,
        count: u64,
        expire: Duration,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(LatchBackend::latch_create(self, key, count, expire))
    }

    fn latch_count_down<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<u64>> {
        Box::pin(LatchBackend::latch_count_down(self, key))
    }

    fn latch_count<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<u64>> {
        Box::pin(LatchBackend::latch_count(self, key))
    }

    fn latch_wait<'a>(
        &'a self,
        key: &'a LockKey,
        deadline: Option<Instant>,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(LatchBackend::latch_wait(self, key, deadline))
    }
}
