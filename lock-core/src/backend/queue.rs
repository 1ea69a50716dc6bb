//! Queue inspection, an optional capability: how many acquisitions wait for a key, for backends
//! that keep their waiters' queue in the store (memory, Redis, ZooKeeper, etcd). The SQL
//! backends keep none (their waiters wait in their own process) and do not implement it.

use std::future::Future;

use super::{BoxFuture, LeaseKind, LockBackend};
use crate::{LockKey, Result};

/// A backend whose waiters queue in the store, where they can be counted (for monitoring and
/// tests). It hands itself out from [`LockBackend::optional_traits`].
///
/// ```
/// use lock_core::backend::{LeaseKind, LockBackend, QueueBackend};
/// use lock_core::{LockKey, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let backend = MemoryBackend::new();
/// assert!(backend.optional_traits().queue.is_some());
/// let key = LockKey::new("", "printer")?;
/// assert_eq!(backend.queue_length(&key, LeaseKind::Fair).await?, 0);
/// # Ok(()) }
/// ```
pub trait QueueBackend: LockBackend {
    /// How many acquisitions of `kind` wait on `key` right now, across every process.
    fn queue_length(
        &self,
        key: &LockKey,
        kind: LeaseKind,
    ) -> impl Future<Output = Result<usize>> + Send;
}

/// The object-safe form of [`QueueBackend`], implemented for every `QueueBackend`.
pub trait DynQueueBackend: Send + Sync {
    /// See [`QueueBackend::queue_length`].
    fn queue_length<'a>(
        &'a self,
        key: &'a LockKey,
        kind: LeaseKind,
    ) -> BoxFuture<'a, Result<usize>>;
}

impl<B: QueueBackend> DynQueueBackend for B {
    fn queue_length<'a>(
        &'a self,
        key: &'a LockKey,
        kind: LeaseKind,
    ) -> BoxFuture<'a, Result<usize>> {
        Box::pin(QueueBackend::queue_length(self, key, kind))
    }
}
