//! The guard: proof of holding a lock, and the handle to release, extend or watch it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::lease::{renew_interval, valid_until, validate_ttl};
use crate::lock::client::ClientInner;
use crate::lock::held::HeldLease;
use crate::lock::owner::OwnerId;
use crate::metrics;
use crate::sync::lock;
use crate::{FencingToken, LeaseMode, LockError, LockKey, LostReason, OwnerToken, Result};

/// A held lock. Release it with [`release`](Self::release); dropping it releases too, but
/// only on a best-effort basis.
///
/// The guard carries the lock's key, the random owner token and the fencing token of this
/// grant, and it can tell when the lease is lost ([`lost`](Self::lost)). Re-entrant
/// acquisitions by the same owner return guards that share one lease; the lock is released
/// when the last of them goes.
///
/// **Drop** spawns the release on the current tokio runtime and returns at once; if there is
/// no runtime, or the release fails, the lease's TTL frees the lock. Prefer `release().await`
/// where the outcome matters. A `release()` future dropped before it finishes (a timeout
/// around it, a cancelled task) also hands the release to a task of its own.
///
/// ```
/// use lock_core::{LockClient, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(MemoryBackend::new());
/// let guard = locks.lock("report:2026-11").await?;
/// println!("fence {} for {}", guard.fencing_token(), guard.key().name());
/// tokio::select! {
///     reason = guard.lost() => println!("stop: {reason}"),
///     () = async { /* the protected work */ } => {}
/// }
/// assert!(guard.release().await?, "still held when released");
/// # Ok(()) }
/// ```
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct LockGuard {
    lease: Arc<HeldLease>,
    client: Arc<ClientInner>,
    owner: OwnerId,
    done: bool,
}

impl LockGuard {
    pub(crate) fn new(lease: Arc<HeldLease>, client: Arc<ClientInner>, owner: OwnerId) -> Self {
        Self {
            lease,
            client,
            owner,
            done: false,
        }
    }

    /// The lock's key.
    #[must_use]
    pub fn key(&self) -> &LockKey {
        &self.lease.key
    }

    /// The random token this lease is stored under (prints redacted).
    #[must_use]
    pub fn owner_token(&self) -> OwnerToken {
        self.lease.token
    }

    /// The fencing token of this grant: larger than that of every earlier grant of the key.
    #[must_use]
    pub fn fencing_token(&self) -> FencingToken {
        self.lease.fence
    }

    /// The lease mode and length in force.
    #[must_use]
    pub fn lease_mode(&self) -> LeaseMode {
        self.lease.mode()
    }

    /// How much longer the lease is trusted without another renewal (zero once lost).
    #[must_use]
    pub fn remaining(&self) -> Duration {
        if self.is_lost() {
            return Duration::ZERO;
        }
        self.lease
            .valid_until()
            .saturating_duration_since(Instant::now())
    }

    /// How many guards this owner holds on this lease (2 after one re-entry).
    #[must_use]
    pub fn hold_count(&self) -> usize {
        self.client.held.count(self.owner, &self.lease)
    }

    /// True once the lease is lost, including when its trusted validity has run out and
    /// nothing has said so yet (a paused process checks the clock, not only the signal).
    #[must_use]
    pub fn is_lost(&self) -> bool {
        self.lease.lost_reason().is_some()
    }

    /// Resolves when the lease is lost: the lock was deleted or taken over behind this
    /// holder's back, renewal failed until the lease ran out, or a fixed lease expired. Never
    /// resolves while the lease is held. The future owns what it needs, so it can be moved
    /// into another task.
    /// It also resolves at the end of the lease's trusted validity, on its own timer, should
    /// the watchdog not have run by then.
    pub fn lost(&self) -> impl Future<Output = LostReason> + Send + 'static {
        let lease = self.lease.clone();
        async move { lease.lost().await }
    }

    /// An error for work that must stop because the lease is gone, if it is: lost by signal,
    /// or past its trusted validity by the monotonic clock.
    pub fn ensure_held(&self) -> Result<()> {
        match self.lease.lost_reason() {
            Some(reason) => Err(LockError::LeaseLost {
                key: self.lease.key.name().to_owned(),
                reason,
            }),
            None => Ok(()),
        }
    }

    /// Sets the lease's remaining time to `ttl` now; the watchdog (if any) renews with `ttl`
    /// from then on. Returns `Ok(false)`, and fires the lost signal, when the lease was no
    /// longer this owner's.
    pub async fn extend(&self, ttl: Duration) -> Result<bool> {
        validate_ttl(ttl)?;
        self.ensure_held()?;
        let sent = Instant::now();
        let held = self.lease.lease.renew(Some(ttl)).await?;
        if held {
            self.lease.set_ttl(ttl);
            {
                let mut times = lock(&self.lease.times);
                times.valid_until = valid_until(sent, ttl);
                times.next_attempt = sent + renew_interval(ttl);
            }
            self.client.watchdog.replan(&self.lease);
            tracing::debug!(key = %self.lease.key, ?ttl, "lease extended");
        } else {
            let reason = self
                .lease
                .lease
                .lost_reason(&self.lease.key, self.lease.token)
                .await;
            self.lease.lose(reason);
        }
        Ok(held)
    }

    /// Keeps what makes this key's next fencing token larger than this lease's at least
    /// `at_least` from now, for data written under this token that outlives the lease (a cache
    /// entry, say): on Redis the fencing counter's TTL is raised to it (never lowered); most
    /// backends need nothing, their tokens coming from a source that is kept for good. Useful
    /// with a short [`fence_retention`](crate::LockClientBuilder::fence_retention).
    ///
    /// ```
    /// use std::time::Duration;
    /// use lock_core::{LockClient, MemoryBackend};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let locks = LockClient::new(MemoryBackend::new());
    /// let guard = locks.lock("report").await?;
    /// guard.keep_fence_for(Duration::from_secs(3600)).await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn keep_fence_for(&self, at_least: Duration) -> Result<()> {
        self.lease.lease.keep_fence(at_least).await
    }

    /// Gives this hold back. The last hold of a lease releases it in the backend, owner-checked:
    /// `Ok(true)` when the backend still had the lock under this owner, `Ok(false)` when it was
    /// gone (expired, deleted, taken over) and nothing was released. (Just after `lost()` fired
    /// for an expiring lease the backend may still have it for the drift margin: then `true`.)
    /// Inner re-entrant holds return `Ok(true)` while the lease is not lost.
    pub async fn release(mut self) -> Result<bool> {
        self.done = true;
        if !self.client.held.leave(self.owner, &self.lease) {
            return Ok(!self.is_lost());
        }
        self.stop_watching();
        if self.released_at_shutdown() {
            return Ok(false);
        }
        // Should this future be dropped before the backend answers (a timeout around the
        // release, a cancelled task), the release goes on in a task of its own, as on drop.
        let unfinished = ReleaseUnfinished(Some(self.lease.clone()));
        let released = self.lease.lease.release().await;
        unfinished.finished();
        match &released {
            Ok(held) => {
                tracing::debug!(key = %self.lease.key, fence = %self.lease.fence, freed = held, "released")
            }
            // The backend's breaker reports an outage once; each release in it is DEBUG.
            Err(error) if error.is_unavailable() => {
                tracing::debug!(key = %self.lease.key, error = %error.with_causes(), "release failed; the lease's TTL will free the lock")
            }
            Err(error) => {
                tracing::warn!(key = %self.lease.key, error = %error.with_causes(), "release failed; the lease's TTL will free the lock")
            }
        }
        released
    }
}

impl LockGuard {
    /// Releases the lock, but not before it has been held `at_least` since it was granted
    /// (ShedLock's "lock at least for"): at once when that much time has passed; otherwise the
    /// lease is set to end then (never below [`MIN_LEASE_TTL`](crate::lease::MIN_LEASE_TTL))
    /// and left to run out, so that another instance whose schedule fires a little later finds
    /// the key still taken and skips. `Ok(false)` when the lease was no longer this owner's.
    /// An inner re-entrant hold is given back at once, as [`release`](Self::release) does.
    ///
    /// ```
    /// use std::time::Duration;
    /// use lock_core::{LockClient, MemoryBackend};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let locks = LockClient::new(MemoryBackend::new());
    /// let guard = locks.lock("nightly-report").await?;
    /// // ... the job, which took less than a second ...
    /// assert!(guard.release_after(Duration::from_secs(1)).await?);
    /// // Still taken for the rest of that second:
    /// assert!(locks.lock("nightly-report").try_acquire().await?.is_none());
    /// # Ok(()) }
    /// ```
    pub async fn release_after(self, at_least: Duration) -> Result<bool> {
        let held_for = self.lease.granted_at.elapsed();
        if held_for >= at_least || self.hold_count() > 1 || self.is_lost() {
            return self.release().await;
        }
        let left = (at_least - held_for).max(crate::lease::MIN_LEASE_TTL);
        let extended = self.extend(left).await;
        // Whatever the answer, the lease now ends by itself: at `left`, or (when the backend
        // could not be told) at its old end, which is later.
        self.abandon();
        extended
    }
}

impl LockGuard {
    /// Stops renewing and forgets this hold without releasing the lock, as a crashed process
    /// would: other owners get the key when the lease runs out. For failure tests and for
    /// handing a lock's fate to its TTL on purpose.
    pub fn abandon(mut self) {
        self.done = true;
        if self.client.held.leave(self.owner, &self.lease) {
            self.stop_watching();
        }
    }
}

impl LockGuard {
    /// True when [`LockClient::shutdown`](crate::LockClient::shutdown) released this lease
    /// already: nothing is left to release.
    fn released_at_shutdown(&self) -> bool {
        self.lease.loss.reason() == Some(LostReason::ShutDown)
    }

    fn stop_watching(&self) {
        self.client.live.remove(&self.lease);
        metrics::released(
            self.lease.backend,
            self.lease.key.namespace(),
            self.lease.granted_at.elapsed(),
        );
        self.lease.stop.cancel();
        self.client.watchdog.forget(&self.lease);
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.done || !self.client.held.leave(self.owner, &self.lease) {
            return;
        }
        self.stop_watching();
        if !self.released_at_shutdown() {
            release_in_background(self.lease.clone());
        }
    }
}

/// A release in progress; dropped before [`finished`](Self::finished), it hands the release
/// to a task of its own.
struct ReleaseUnfinished(Option<Arc<HeldLease>>);

impl ReleaseUnfinished {
    fn finished(mut self) {
        self.0 = None;
    }
}

impl Drop for ReleaseUnfinished {
    fn drop(&mut self) {
        if let Some(lease) = self.0.take() {
            release_in_background(lease);
        }
    }
}

/// Spawns the owner-checked release of `lease` on the current runtime; without one, or if it
/// fails, the lease's TTL frees the lock.
fn release_in_background(lease: Arc<HeldLease>) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            match lease.lease.release().await {
                Ok(_) => {}
                // The backend's breaker reports an outage once.
                Err(error) if error.is_unavailable() => {
                    tracing::debug!(key = %lease.key, error = %error.with_causes(), "release in the background failed; the lease's TTL will free the lock");
                }
                Err(error) => {
                    tracing::warn!(key = %lease.key, error = %error.with_causes(), "release in the background failed; the lease's TTL will free the lock");
                }
            }
        });
    } else {
        tracing::warn!(key = %lease.key, "guard let go outside a tokio runtime; the lease's TTL will free the lock");
    }
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("key", &self.lease.key)
            .field("owner_token", &self.lease.token)
            .field("fence", &self.lease.fence)
            .field("lost", &self.is_lost())
            .finish_non_exhaustive()
    }
}
