//! The semaphore: N permits, each acquired permit a lease of its own.

use crate::backend::{validate_permits, DynSemaphoreBackend, LeaseKind, SemaphoreState};
use crate::{LockClient, LockError, LockKey, LockRequest, Result};

pub use crate::backend::semaphore::MAX_PERMITS;

/// A semaphore whose permits expire: up to N permits held at once, across processes. Made by
/// [`LockClient::semaphore`]; cheap to clone.
///
/// Each [`acquire`](Self::acquire) takes one or more permits as one lease with its own owner
/// token (the permit id) and fencing token, held as a [`LockGuard`](crate::LockGuard): the
/// watchdog keeps it alive, `lost()` says when it is gone, and a holder that dies frees its
/// permits when its lease runs out (Redisson's `PermitExpirableSemaphore`, Curator's
/// `InterProcessSemaphoreV2` leases). Waiting is first come, first served: a request for many
/// permits is not overtaken by later requests for few. Permits are not re-entrant: each
/// acquisition is a permit of its own.
///
/// The size lives in the store: the first acquisition sets it to the `permits` given here if
/// none is set; [`set_permits`](Self::set_permits) changes it at run time. Shrinking it never
/// takes permits away, and nobody gets one until the permits held are below the new size.
///
/// ```
/// use lock_core::{LockClient, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(MemoryBackend::new());
/// let connections = locks.semaphore("db-connections", 3);
/// let two = connections.acquire(2).await?;
/// let one = connections.acquire(1).await?;
/// assert!(connections.acquire(1).try_acquire().await?.is_none(), "all 3 are out");
/// two.release().await?;
/// assert_eq!(connections.available_permits().await?, 2);
/// # drop(one); Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Semaphore {
    client: LockClient,
    name: String,
    permits: u32,
}

impl Semaphore {
    /// The semaphore named `name`; made by [`LockClient::semaphore`].
    pub(crate) fn new(client: LockClient, name: String, permits: u32) -> Self {
        Self {
            client,
            name,
            permits,
        }
    }

    /// Starts a request for `count` permits as one lease. A count of 0, or more than the
    /// semaphore's size, is [`LockError::InvalidInput`] when the request runs.
    ///
    /// ```
    /// # use lock_core::{LockClient, MemoryBackend};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let slots = LockClient::new(MemoryBackend::new()).semaphore("slots", 2);
    /// assert!(slots.acquire(3).try_acquire().await.unwrap_err().is_invalid_input());
    /// let permit = slots.acquire(1).await?;
    /// println!("permit {} fenced {}", permit.owner_token(), permit.fencing_token());
    /// # drop(permit); Ok(()) }
    /// ```
    pub fn acquire(&self, count: u32) -> LockRequest<'_> {
        LockRequest::of_kind(
            &self.client,
            self.name.clone(),
            LeaseKind::Permits {
                count,
                limit: self.permits,
            },
        )
    }

    /// Sets the semaphore's size to `permits` (1 ..= [`MAX_PERMITS`]).
    ///
    /// ```
    /// # use lock_core::{LockClient, MemoryBackend};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let slots = LockClient::new(MemoryBackend::new()).semaphore("slots", 2);
    /// slots.set_permits(5).await?;
    /// assert_eq!(slots.available_permits().await?, 5);
    /// # Ok(()) }
    /// ```
    pub async fn set_permits(&self, permits: u32) -> Result<()> {
        validate_permits("permits", permits)?;
        let (semaphores, key) = self.backend()?;
        semaphores.set_permits(&key, permits).await
    }

    /// The size as the store has it (the `permits` given at creation until one is set) and
    /// the permits held under live leases.
    pub async fn state(&self) -> Result<SemaphoreState> {
        let (semaphores, key) = self.backend()?;
        let mut state = semaphores.semaphore_state(&key).await?;
        state.permits = state.permits.or(Some(self.permits));
        Ok(state)
    }

    /// Permits free right now (0 while more are held than the size).
    pub async fn available_permits(&self) -> Result<u32> {
        let state = self.state().await?;
        Ok(state
            .permits
            .unwrap_or(self.permits)
            .saturating_sub(state.held))
    }

    /// The semaphore's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The backend's semaphores and this semaphore's key; a backend that declares no
    /// semaphore, or does not implement [`SemaphoreBackend`](crate::backend::SemaphoreBackend),
    /// is refused here, before anything is sent.
    fn backend(&self) -> Result<(&dyn DynSemaphoreBackend, LockKey)> {
        let capabilities = self.client.capabilities();
        let semaphores = self
            .client
            .inner
            .backend
            .optional_traits()
            .semaphore
            .filter(|_| capabilities.primitives.semaphore)
            .ok_or(LockError::Unsupported {
                backend: capabilities.backend,
                primitive: "semaphore",
            })?;
        Ok((
            semaphores,
            LockKey::new(&self.client.inner.namespace, &self.name)?,
        ))
    }
}
