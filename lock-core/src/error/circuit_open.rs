//! The error of a call the breaker refused: the source of its [`LockError::Unavailable`].
//!
//! [`LockError::Unavailable`]: crate::LockError::Unavailable

use std::sync::Arc;
use std::time::Duration;

/// Why a call was refused without reaching the server: its backend is known to be down. The
/// [`source`](std::error::Error::source) of the [`LockError::Unavailable`] the call returned;
/// [`LockError::circuit_open`] finds it.
///
/// ```
/// use std::time::Duration;
/// use lock_core::breaker::{Breaker, BreakerOptions};
///
/// let breaker = Breaker::new("redis", BreakerOptions::new().failures(1));
/// breaker.admit()?.unavailable("Connection refused (os error 111)");
/// let refused = breaker.admit().unwrap_err();
/// let open = refused.circuit_open().expect("refused by the breaker");
/// assert_eq!(open.backend(), "redis");
/// assert!(open.retry_after() <= Duration::from_millis(600));
/// assert!(refused.with_causes().contains("Connection refused"));
/// # Ok::<(), lock_core::LockError>(())
/// ```
///
/// [`LockError::Unavailable`]: crate::LockError::Unavailable
/// [`LockError::circuit_open`]: crate::LockError::circuit_open
#[derive(Clone, Debug, thiserror::Error)]
#[error(
    "calls fail fast while the {backend} backend is down (for {} ms; last error: {last_error}); \
     the next probe is due in {} ms",
    down_for.as_millis(),
    retry_after.as_millis()
)]
pub struct CircuitOpen {
    backend: &'static str,
    down_for: Duration,
    retry_after: Duration,
    last_error: Arc<str>,
}

impl CircuitOpen {
    pub(crate) fn new(
        backend: &'static str,
        down_for: Duration,
        retry_after: Duration,
        last_error: Arc<str>,
    ) -> Self {
        Self {
            backend,
            down_for,
            retry_after,
            last_error,
        }
    }

    /// The backend's name.
    #[must_use]
    pub fn backend(&self) -> &'static str {
        self.backend
    }

    /// How long the backend has been known to be down.
    #[must_use]
    pub fn down_for(&self) -> Duration {
        self.down_for
    }

    /// When the next probe is due (zero while one is under way): the earliest a retry can
    /// reach the server. The HTTP layers send it as `Retry-After`, rounded up to seconds.
    #[must_use]
    pub fn retry_after(&self) -> Duration {
        self.retry_after
    }

    /// The last availability failure the server's client reported.
    #[must_use]
    pub fn last_error(&self) -> &str {
        &self.last_error
    }

    /// `Retry-After` in whole seconds: [`retry_after`](Self::retry_after) rounded up, at least 1.
    ///
    /// ```
    /// use lock_core::breaker::{Breaker, BreakerOptions};
    ///
    /// let breaker = Breaker::new("redis", BreakerOptions::new().failures(1));
    /// breaker.admit()?.unavailable("refused");
    /// let refused = breaker.admit().unwrap_err();
    /// assert_eq!(refused.circuit_open().unwrap().retry_after_secs(), 1);
    /// # Ok::<(), lock_core::LockError>(())
    /// ```
    #[must_use]
    pub fn retry_after_secs(&self) -> u64 {
        let millis = u64::try_from(self.retry_after.as_millis()).unwrap_or(u64::MAX);
        millis.div_ceil(1000).max(1)
    }
}
