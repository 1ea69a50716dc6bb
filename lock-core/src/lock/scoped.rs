//! Scoped holds: [`LockRequest::with_lock`] (and [`LockClient::with_lock`]) take a lock, run a
//! body racing the lease's loss, and release on every path; [`race_lost`] is the race itself,
//! shared with the HTTP middleware.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::Poll;

use crate::{LockClient, LockError, LockGuard, LockRequest, LostReason, Result};

impl LockRequest<'_> {
    /// Takes the lock (waiting as long as it takes, like `.await`), runs `body` with the
    /// guard, and releases it on every path: the body's output, or
    /// [`LockError::LeaseLost`] when the lease was lost first (the body is then dropped, so
    /// work after its next `.await` never runs without the lock). What a caller otherwise
    /// writes by hand as a `select!` of the body against [`LockGuard::lost`]. Works for every
    /// kind of request: `locks.fair_lock(..)`, `rw.write()`, `semaphore.acquire(n)`, with
    /// their lease settings. A body that panics releases through the guard's drop.
    ///
    /// ```
    /// use lock_core::{LockClient, MemoryBackend};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let locks = LockClient::new(MemoryBackend::new());
    /// let slots = locks.semaphore("exports", 2);
    /// let rows = slots
    ///     .acquire(1)
    ///     .with_lock(async |permit| {
    ///         // ... write with permit.fencing_token() ...
    ///         permit.fencing_token().get() > 0
    ///     })
    ///     .await?;
    /// assert!(rows);
    /// assert_eq!(slots.available_permits().await?, 2, "released");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The acquisition's error (nothing ran), or [`LockError::LeaseLost`] with the reason when
    /// the lease was lost while the body ran (it was cancelled).
    pub async fn with_lock<T>(self, body: impl AsyncFnOnce(&LockGuard) -> T) -> Result<T> {
        let guard = self.await?;
        match race_lost(body(&guard), guard.lost()).await {
            Ok(output) => {
                if let Err(error) = guard.release().await {
                    // The body finished under the lease; the lock ends with its TTL.
                    tracing::debug!(error = %error.with_causes(), "release after a scoped hold failed; the lease's TTL will free the lock");
                }
                Ok(output)
            }
            Err(reason) => {
                let key = guard.key().name().to_owned();
                drop(guard);
                Err(LockError::LeaseLost { key, reason })
            }
        }
    }
}

impl LockClient {
    /// [`LockRequest::with_lock`] on the lock named `key`: takes it, runs `body` racing the
    /// lease's loss, releases on every path.
    ///
    /// ```
    /// use lock_core::{LockClient, MemoryBackend};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let locks = LockClient::new(MemoryBackend::new());
    /// let fence = locks
    ///     .with_lock("invoice:7", async |guard| {
    ///         // ... the protected work, writing with guard.fencing_token() ...
    ///         guard.fencing_token()
    ///     })
    ///     .await?;
    /// println!("written under fence {fence}");
    /// assert!(locks.lock("invoice:7").try_acquire().await?.is_some(), "released");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`LockRequest::with_lock`].
    pub async fn with_lock<T>(
        &self,
        key: impl Into<String>,
        body: impl AsyncFnOnce(&LockGuard) -> T,
    ) -> Result<T> {
        self.lock(key).with_lock(body).await
    }
}

/// Runs `work` until it finishes or `lost` resolves, whichever is first: `Ok` with the
/// work's output (also when both are ready in the same poll: work that finished is
/// answered), or `Err` with the reason, `work` dropped (cancelled). How the adapters run a
/// handler under a lease, and [`LockRequest::with_lock`] a body: a lock's
/// ([`LockGuard::lost`]) or an idempotency claim's (`Claim::lost`).
///
/// ```
/// use std::future::{pending, ready};
/// use lock_core::race_lost;
/// use lock_core::LostReason;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let done = race_lost(async { "sold" }, pending::<LostReason>()).await;
/// assert_eq!(done, Ok("sold"));
/// let lost = race_lost(pending::<&str>(), ready(LostReason::Expired)).await;
/// assert_eq!(lost, Err(LostReason::Expired));
/// let both = race_lost(ready("sold"), ready(LostReason::Expired)).await;
/// assert_eq!(both, Ok("sold"));
/// # }
/// ```
pub async fn race_lost<F: Future>(
    work: F,
    lost: impl Future<Output = LostReason>,
) -> Result<F::Output, LostReason> {
    let (mut work, mut lost) = (pin!(work), pin!(lost));
    poll_fn(|cx| {
        if let Poll::Ready(output) = work.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        lost.as_mut().poll(cx).map(Err)
    })
    .await
}
