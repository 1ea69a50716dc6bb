//! The semaphore's administration, an optional capability: its size and its state. The permits
//! themselves are leases ([`LeaseKind::Permits`](super::LeaseKind::Permits)) granted by
//! [`LockBackend::acquire`]; a backend that offers them implements [`SemaphoreBackend`] (in its
//! own `semaphore.rs`) and hands itself out from [`LockBackend::optional_traits`].

use std::future::Future;

use super::{BoxFuture, LockBackend};
use crate::{LockError, LockKey, Result};

/// A backend that keeps a size for each semaphore and can say how many permits are out.
/// Declare it in [`Primitives::semaphore`](super::Primitives::semaphore) too.
///
/// ```
/// use lock_core::backend::{LockBackend, SemaphoreBackend};
/// use lock_core::{LockKey, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let backend = MemoryBackend::new();
/// assert!(backend.optional_traits().semaphore.is_some());
/// let key = LockKey::new("", "pdf-render")?;
/// backend.set_permits(&key, 4).await?;
/// let state = backend.semaphore_state(&key).await?;
/// assert_eq!((state.permits, state.held), (Some(4), 0));
/// # Ok(()) }
/// ```
pub trait SemaphoreBackend: LockBackend {
    /// Sets the size of the semaphore `key` to `permits` (at least 1). Leases already granted
    /// stay; while more permits are held than the new size, nobody else gets one.
    fn set_permits(&self, key: &LockKey, permits: u32) -> impl Future<Output = Result<()>> + Send;

    /// The semaphore `key`'s size (`None` when the store has none set yet) and the permits
    /// held under live leases.
    fn semaphore_state(&self, key: &LockKey)
        -> impl Future<Output = Result<SemaphoreState>> + Send;
}

/// A semaphore as the store has it (see [`SemaphoreBackend::semaphore_state`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SemaphoreState {
    /// The number of permits, `None` when none was set yet.
    pub permits: Option<u32>,
    /// Permits held under leases that have not run out.
    pub held: u32,
}

impl SemaphoreState {
    /// A state with `permits` and `held`.
    #[must_use]
    pub fn new(permits: Option<u32>, held: u32) -> Self {
        Self { permits, held }
    }
}

/// The object-safe form of [`SemaphoreBackend`], implemented for every `SemaphoreBackend`.
pub trait DynSemaphoreBackend: Send + Sync {
    /// See [`SemaphoreBackend::set_permits`].
    fn set_permits<'a>(&'a self, key: &'a LockKey, permits: u32) -> BoxFuture<'a, Result<()>>;
    /// See [`SemaphoreBackend::semaphore_state`].
    fn semaphore_state<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<SemaphoreState>>;
}

impl<B: SemaphoreBackend> DynSemaphoreBackend for B {
    fn set_permits<'a>(&'a self, key: &'a LockKey, permits: u32) -> BoxFuture<'a, Result<()>> {
        Box::pin(SemaphoreBackend::set_permits(self, key, permits))
    }

    fn semaphore_state<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<SemaphoreState>> {
        Box::pin(SemaphoreBackend::semaphore_state(self, key))
    }
}

/// The most permits a semaphore can have.
pub const MAX_PERMITS: u32 = 1_000_000;

/// Checks a permit count (a request's or a size): 1 ..= [`MAX_PERMITS`].
pub(crate) fn validate_permits(what: &'static str, permits: u32) -> Result<()> {
    if permits == 0 || permits > MAX_PERMITS {
        return Err(LockError::InvalidInput {
            what,
            reason: format!("{permits} is outside 1..={MAX_PERMITS}"),
        });
    }
    Ok(())
}
