//! The settings of a [`Breaker`](super::Breaker): what opens it, how long it stays open, how it
//! reports.

use std::time::Duration;

use crate::{LockError, Result};

/// When a [`Breaker`](super::Breaker) opens and how it comes back; every backend builder takes
/// one (`RedisBackend::builder(url).breaker(...)`, ...).
///
/// The defaults: open after **3** availability failures in a row within **10 s**; then refuse
/// calls for a cool-down of **500 ms**, doubled after each failed probe up to **5 s**, each
/// spread by ±20% (never past the 5 s) so that many processes do not probe together; a probe
/// that has not answered
/// within **10 s** counts as failed and another may go; while open, at most one summary line
/// every **30 s**.
///
/// ```
/// use std::time::Duration;
/// use lock_core::breaker::BreakerOptions;
///
/// let options = BreakerOptions::new()
///     .failures(5)
///     .window(Duration::from_secs(2))
///     .cool_down(Duration::from_millis(200), Duration::from_secs(2));
/// assert_eq!(options.failures_to_open(), 5);
/// assert_eq!(options.max_cool_down(), Duration::from_secs(2));
/// assert!(options.fails_fast());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub struct BreakerOptions {
    failures: u32,
    window: Duration,
    cool_down: Duration,
    max_cool_down: Duration,
    probe_timeout: Duration,
    summary_every: Duration,
    fail_fast: bool,
}

impl Default for BreakerOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl BreakerOptions {
    /// The defaults (see the type's docs).
    pub const fn new() -> Self {
        Self {
            failures: 3,
            window: Duration::from_secs(10),
            cool_down: Duration::from_millis(500),
            max_cool_down: Duration::from_secs(5),
            probe_timeout: Duration::from_secs(10),
            summary_every: Duration::from_secs(30),
            fail_fast: true,
        }
    }

    /// How many availability failures in a row (no success between them) open the breaker
    /// (default 3; at least 1).
    pub const fn failures(mut self, failures: u32) -> Self {
        self.failures = failures;
        self
    }

    /// How close together those failures must be: a streak whose first failure is older than
    /// this starts again (default 10 s), so rare failures hours apart never add up.
    pub const fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// How long calls are refused before the first probe (`first`, default 500 ms), and the
    /// most that grows to as failed probes double it (`max`, default 5 s). The longest a
    /// backend that came back is still skipped is about `max`.
    pub const fn cool_down(mut self, first: Duration, max: Duration) -> Self {
        self.cool_down = first;
        self.max_cool_down = max;
        self
    }

    /// How long a probe may go unanswered before it counts as failed and another call may
    /// probe (default 10 s: longer than a call's own timeouts and retries).
    pub const fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// The least time between two "still down" lines while the breaker is open (default 30 s).
    pub const fn summary_every(mut self, every: Duration) -> Self {
        self.summary_every = every;
        self
    }

    /// Whether calls are refused while the breaker is open (default true). With `false` the
    /// breaker only watches and reports (one line when the backend goes down, one when it is
    /// back): every call still goes to the server and waits for its timeouts.
    pub const fn fail_fast(mut self, fail_fast: bool) -> Self {
        self.fail_fast = fail_fast;
        self
    }

    /// See [`failures`](Self::failures).
    #[must_use]
    pub const fn failures_to_open(&self) -> u32 {
        self.failures
    }

    /// See [`window`](Self::window).
    #[must_use]
    pub const fn failure_window(&self) -> Duration {
        self.window
    }

    /// The first cool-down (see [`cool_down`](Self::cool_down)).
    #[must_use]
    pub const fn first_cool_down(&self) -> Duration {
        self.cool_down
    }

    /// The longest cool-down (see [`cool_down`](Self::cool_down)).
    #[must_use]
    pub const fn max_cool_down(&self) -> Duration {
        self.max_cool_down
    }

    /// See [`probe_timeout`](Self::probe_timeout).
    #[must_use]
    pub const fn probe_timeout_after(&self) -> Duration {
        self.probe_timeout
    }

    /// See [`summary_every`](Self::summary_every).
    #[must_use]
    pub const fn summary_interval(&self) -> Duration {
        self.summary_every
    }

    /// See [`fail_fast`](Self::fail_fast).
    #[must_use]
    pub const fn fails_fast(&self) -> bool {
        self.fail_fast
    }

    /// Refuses settings the breaker cannot work with.
    ///
    /// ```
    /// use std::time::Duration;
    /// use lock_core::breaker::BreakerOptions;
    ///
    /// assert!(BreakerOptions::new().validate().is_ok());
    /// assert!(BreakerOptions::new().failures(0).validate().is_err());
    /// let backwards = BreakerOptions::new().cool_down(Duration::from_secs(2), Duration::from_secs(1));
    /// assert!(backwards.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<()> {
        let problem = if self.failures == 0 {
            Some("failures must be at least 1")
        } else if self.window.is_zero() || self.cool_down.is_zero() || self.probe_timeout.is_zero()
        {
            Some("window, cool-down and probe timeout must be positive")
        } else if self.max_cool_down < self.cool_down {
            Some("the longest cool-down must not be shorter than the first")
        } else {
            None
        };
        match problem {
            Some(problem) => Err(LockError::InvalidConfig(format!(
                "circuit breaker: {problem}"
            ))),
            None => Ok(()),
        }
    }
}
