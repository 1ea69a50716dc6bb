//! The count-down latch: wait until N things have happened, across processes.

use std::time::Duration;

use tokio::time::Instant;

use crate::backend::DynLatchBackend;
use crate::{LockClient, LockError, LockKey, Result, WaitPolicy};

/// How long a latch lives by default after it is set: a day.
pub const DEFAULT_LATCH_EXPIRY: Duration = Duration::from_secs(24 * 60 * 60);
/// The longest a latch can live: 30 days.
pub const MAX_LATCH_EXPIRY: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// A count-down latch shared across processes (Redisson's `RCountDownLatch`, Java's
/// `CountDownLatch`). Made by [`LockClient::latch`]; cheap to clone.
///
/// [`try_set_count`](Self::try_set_count) starts it at N; each
/// [`count_down`](Self::count_down) takes one off; [`wait`](Self::wait) returns once it is at
/// zero, woken by the store (push), not by polling. A latch that was never set, or has
/// expired, counts as zero. It expires [`expire_after`](Self::expire_after) its setting
/// (default a day), so a latch nobody counts down does not live forever.
///
/// ```
/// use lock_core::{LockClient, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(MemoryBackend::new());
/// let warmed = locks.latch("caches-warmed");
/// assert!(warmed.try_set_count(2).await?);
/// let waiter = tokio::spawn({
///     let warmed = warmed.clone();
///     async move { warmed.wait().await }
/// });
/// warmed.count_down().await?;
/// assert_eq!(warmed.count_down().await?, 0);
/// waiter.await.unwrap()?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct CountDownLatch {
    client: LockClient,
    name: String,
    expire: Duration,
}

impl CountDownLatch {
    /// The latch named `name`, with the default expiry; made by [`LockClient::latch`].
    pub(crate) fn new(client: LockClient, name: String) -> Self {
        Self {
            client,
            name,
            expire: DEFAULT_LATCH_EXPIRY,
        }
    }

    /// How long a latch set by [`try_set_count`](Self::try_set_count) lives (1 ms ..=
    /// [`MAX_LATCH_EXPIRY`], checked when it is set).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use lock_core::{LockClient, MemoryBackend};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let batch = LockClient::new(MemoryBackend::new()).latch("batch-7").expire_after(Duration::from_secs(600));
    /// batch.try_set_count(10).await?;
    /// # Ok(()) }
    /// ```
    pub fn expire_after(mut self, expire: Duration) -> Self {
        self.expire = expire;
        self
    }

    /// Sets the count to `count` (at least 1) if the latch is not running: `Ok(false)`, and
    /// nothing changed, when it already has a count above zero.
    pub async fn try_set_count(&self, count: u64) -> Result<bool> {
        if count == 0 {
            return Err(LockError::InvalidInput {
                what: "latch count",
                reason: "0: a latch starts at 1 or more".into(),
            });
        }
        if self.expire < Duration::from_millis(1) || self.expire > MAX_LATCH_EXPIRY {
            return Err(LockError::InvalidDuration {
                what: "latch expiry",
                reason: format!("{:?} is outside 1ms..={MAX_LATCH_EXPIRY:?}", self.expire),
            });
        }
        let (latches, key) = self.backend()?;
        latches.latch_create(&key, count, self.expire).await
    }

    /// Counts down by one; returns the count left (0: the latch opened, or was not set).
    ///
    /// ```
    /// # use lock_core::{LockClient, MemoryBackend};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let latch = LockClient::new(MemoryBackend::new()).latch("l");
    /// assert_eq!(latch.count_down().await?, 0, "never set: nothing to count");
    /// # Ok(()) }
    /// ```
    pub async fn count_down(&self) -> Result<u64> {
        let (latches, key) = self.backend()?;
        latches.latch_count_down(&key).await
    }

    /// The count now (0 when open, expired or never set).
    pub async fn count(&self) -> Result<u64> {
        let (latches, key) = self.backend()?;
        latches.latch_count(&key).await
    }

    /// Waits until the count is zero, as long as it takes.
    pub async fn wait(&self) -> Result<()> {
        self.wait_with(WaitPolicy::Forever).await.map(|_| ())
    }

    /// Waits up to `wait` for the count to reach zero: `Ok(false)` if it had not by then.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use lock_core::{LockClient, MemoryBackend};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let latch = LockClient::new(MemoryBackend::new()).latch("l");
    /// latch.try_set_count(1).await?;
    /// assert!(!latch.wait_within(Duration::from_millis(10)).await?);
    /// # Ok(()) }
    /// ```
    pub async fn wait_within(&self, wait: Duration) -> Result<bool> {
        self.wait_with(WaitPolicy::from(wait)).await
    }

    /// Waits as `policy` says (a [`WaitPolicy::Try`] only looks).
    pub async fn wait_with(&self, policy: WaitPolicy) -> Result<bool> {
        let (latches, key) = self.backend()?;
        let deadline = policy.deadline(Instant::now());
        latches.latch_wait(&key, deadline).await
    }

    /// The latch's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The backend's latches and this latch's key; a backend that declares no latch, or does
    /// not implement [`LatchBackend`](crate::backend::LatchBackend), is refused here, before
    /// anything is sent.
    fn backend(&self) -> Result<(&dyn DynLatchBackend, LockKey)> {
        let capabilities = self.client.capabilities();
        let latches = self
            .client
            .inner
            .backend
            .optional_traits()
            .latch
            .filter(|_| capabilities.primitives.latch)
            .ok_or(LockError::Unsupported {
                backend: capabilities.backend,
                primitive: "count-down latch",
            })?;
        Ok((
            latches,
            LockKey::new(&self.client.inner.namespace, &self.name)?,
        ))
    }
}
