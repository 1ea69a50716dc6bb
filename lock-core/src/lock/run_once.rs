//! [`RunOnce`]: a scheduled job run by one instance per schedule slot (ShedLock's model), on
//! any backend.

use std::future::Future;
use std::time::Duration;

use crate::lease::validate_ttl;
use crate::{FencingToken, LeaseMode, LockClient, LockError, Result};

/// A job that every instance's scheduler starts at the same slot and one of them runs: the
/// first to take the key runs it, the others skip. From [`LockClient::run_once`].
///
/// - **hold at most** ([`at_most`](Self::at_most), 10 minutes by default): the lease, fixed
///   and never renewed, so an instance that dies mid-job frees the key after that long. A job
///   still running then is not stopped, but no longer excludes others: make it shorter.
/// - **hold at least** ([`at_least`](Self::at_least), zero by default): the key stays taken at
///   least that long after the job started, however quickly it ended, so a scheduler that
///   fires a little later (clock skew, a busy runtime) finds it taken and skips. Set it below
///   the schedule's period and above the spread of the instances' firing times.
///
/// ```
/// use std::time::Duration;
/// use lock_core::{LockClient, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(MemoryBackend::new());
/// let job = || {
///     locks
///         .run_once("nightly-report")
///         .at_least(Duration::from_secs(30))
///         .at_most(Duration::from_secs(600))
///         .run(|fence| async move { format!("report under fence {fence}") })
/// };
/// assert!(job().await?.is_some()); // this instance ran it
/// assert!(job().await?.is_none()); // the same slot again: skipped
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a job runs only when `run` is awaited"]
pub struct RunOnce<'c> {
    client: &'c LockClient,
    key: String,
    at_least: Duration,
    at_most: Duration,
}

impl LockClient {
    /// A job run by one instance per slot, locked on `key` (see [`RunOnce`]).
    pub fn run_once(&self, key: impl Into<String>) -> RunOnce<'_> {
        RunOnce {
            client: self,
            key: key.into(),
            at_least: Duration::ZERO,
            at_most: Duration::from_secs(600),
        }
    }
}

impl RunOnce<'_> {
    /// How long the key stays taken after the job started, at least (see [`RunOnce`]).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # fn f(locks: &lock_core::LockClient) -> lock_core::RunOnce<'_> {
    /// locks.run_once("cleanup").at_least(Duration::from_secs(30))
    /// # }
    /// ```
    pub fn at_least(mut self, at_least: Duration) -> Self {
        self.at_least = at_least;
        self
    }

    /// How long the key stays taken, at most: the job's lease (see [`RunOnce`]).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # fn f(locks: &lock_core::LockClient) -> lock_core::RunOnce<'_> {
    /// locks.run_once("cleanup").at_most(Duration::from_secs(300))
    /// # }
    /// ```
    pub fn at_most(mut self, at_most: Duration) -> Self {
        self.at_most = at_most;
        self
    }

    /// Runs `job` with the grant's fencing token if this instance takes the key (`Some` of
    /// its output), or skips it when another holds it (`None`).
    ///
    /// # Errors
    /// [`LockError::InvalidDuration`] when `at_most` is not a valid lease TTL or `at_least`
    /// exceeds it; [`LockError::InvalidKey`] for a bad key; the backend's error when it
    /// cannot be asked (nothing runs then). The job's own outcome is its output: return a
    /// `Result` from it to report failures.
    pub async fn run<F, Fut, T>(self, job: F) -> Result<Option<T>>
    where
        F: FnOnce(FencingToken) -> Fut,
        Fut: Future<Output = T>,
    {
        validate_ttl(self.at_most)?;
        if self.at_least > self.at_most {
            return Err(LockError::InvalidDuration {
                what: "run-once hold",
                reason: format!(
                    "at least {:?} is longer than at most {:?}",
                    self.at_least, self.at_most
                ),
            });
        }
        let Some(guard) = self
            .client
            .lock(&self.key)
            .lease(LeaseMode::fixed(self.at_most))
            .try_acquire()
            .await?
        else {
            tracing::debug!(key = %self.key, "run-once job skipped: another instance holds its slot");
            return Ok(None);
        };
        let output = job(guard.fencing_token()).await;
        if let Err(error) = guard.release_after(self.at_least).await {
            // The job ran; its key ends with its lease.
            tracing::debug!(key = %self.key, error = %error.with_causes(), "run-once job's hold could not be shortened; it ends with its lease");
        }
        Ok(Some(output))
    }
}
