//! The fair lock: granted in arrival order, never to a newcomer while others wait.

use crate::backend::LeaseKind;
use crate::{LockClient, LockRequest};

impl LockClient {
    /// Starts a request for the fair lock named `key`: waiters are served strictly in the
    /// order they arrived, and a newcomer never takes it while others wait (no barging), so
    /// every waiter gets its turn. On Redis the release hands the lock to the next waiter
    /// inside the release itself: the waiter wakes up holding it.
    ///
    /// A fair lock is its own lock: `fair_lock("k")` and [`lock("k")`](Self::lock) do not
    /// exclude each other. Everything else is the lock's: the returned [`LockRequest`], the
    /// [`LockGuard`](crate::LockGuard), reentrancy, fencing tokens and `lost()`. The backend
    /// must offer it ([`Primitives::fair`](crate::backend::Primitives::fair)); otherwise
    /// [`LockError::Unsupported`](crate::LockError::Unsupported).
    ///
    /// ```
    /// use lock_core::{LockClient, MemoryBackend};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let locks = LockClient::new(MemoryBackend::new());
    /// let turn = locks.fair_lock("printer").await?;
    /// // ... print, fenced with turn.fencing_token() ...
    /// turn.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn fair_lock(&self, key: impl Into<String>) -> LockRequest<'_> {
        LockRequest::of_kind(self, key.into(), LeaseKind::Fair)
    }
}
