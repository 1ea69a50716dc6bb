//! Lease settings and the arithmetic that decides how long a lease can be trusted.
//!
//! All lease arithmetic runs on tokio's monotonic clock ([`tokio::time::Instant`]), never on
//! wall-clock time, so a clock step on the host cannot stretch a lease, and tests can pause and
//! advance time (`tokio::time::pause`) to check renewal and expiry deterministically.

use std::time::Duration;

use tokio::time::Instant;

use crate::LockError;

/// The lease a lock is taken with when none is asked for: 30 s, renewed by the watchdog.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// The shortest lease accepted. Shorter leases leave no room for a renewal round trip.
pub const MIN_LEASE_TTL: Duration = Duration::from_millis(30);

/// The longest lease accepted.
pub const MAX_LEASE_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How a lease is kept alive.
///
/// ```
/// use std::time::Duration;
/// use lock_core::LeaseMode;
///
/// let renewed = LeaseMode::watchdog(Duration::from_secs(10));
/// assert_eq!(renewed.ttl(), Duration::from_secs(10));
/// assert!(renewed.is_renewed());
/// assert!(!LeaseMode::fixed(Duration::from_secs(5)).is_renewed());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseMode {
    /// The watchdog renews the lease every `ttl / 3` while the guard lives; a crashed holder's
    /// lock is freed at most `ttl` after its last renewal.
    Watchdog {
        /// The lease length set on each renewal.
        ttl: Duration,
    },
    /// The lease lasts `ttl` and is never renewed (but can be [extended] by hand); the guard's
    /// lost signal fires when it runs out.
    ///
    /// [extended]: crate::LockGuard::extend
    Fixed {
        /// The lease length.
        ttl: Duration,
    },
}

impl LeaseMode {
    /// A lease of `ttl` renewed by the watchdog.
    #[must_use]
    pub const fn watchdog(ttl: Duration) -> Self {
        Self::Watchdog { ttl }
    }

    /// A lease of `ttl` that is never renewed.
    #[must_use]
    pub const fn fixed(ttl: Duration) -> Self {
        Self::Fixed { ttl }
    }

    /// The lease length.
    #[must_use]
    pub const fn ttl(self) -> Duration {
        match self {
            Self::Watchdog { ttl } | Self::Fixed { ttl } => ttl,
        }
    }

    /// True for watchdog leases.
    #[must_use]
    pub const fn is_renewed(self) -> bool {
        matches!(self, Self::Watchdog { .. })
    }

    /// Checks the TTL against [`MIN_LEASE_TTL`] and [`MAX_LEASE_TTL`].
    pub fn validate(self) -> Result<Self, LockError> {
        validate_ttl(self.ttl())?;
        Ok(self)
    }
}

impl Default for LeaseMode {
    fn default() -> Self {
        Self::watchdog(DEFAULT_LEASE_TTL)
    }
}

/// Checks a lease length.
pub(crate) fn validate_ttl(ttl: Duration) -> Result<(), LockError> {
    if ttl < MIN_LEASE_TTL || ttl > MAX_LEASE_TTL {
        return Err(LockError::InvalidDuration {
            what: "lease TTL",
            reason: format!("{ttl:?} is outside {MIN_LEASE_TTL:?}..={MAX_LEASE_TTL:?}"),
        });
    }
    Ok(())
}

/// The part of a lease not trusted because the server's clock may run faster than ours:
/// 1% of the TTL plus 2 ms (the allowance Redlock's analysis uses).
#[must_use]
pub fn drift_margin(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2)
}

/// Until when a lease granted (or renewed) by a command sent at `sent_at` can be trusted:
/// `sent_at + ttl - drift`. Counting from the send, not the reply, means a slow reply
/// shortens the lease instead of stretching it.
#[must_use]
pub fn valid_until(sent_at: Instant, ttl: Duration) -> Instant {
    sent_at + ttl.saturating_sub(drift_margin(ttl))
}

/// How often the watchdog renews (or, for fixed leases, checks) a lease of `ttl`.
#[must_use]
pub fn renew_interval(ttl: Duration) -> Duration {
    ttl / 3
}

/// How long to wait for a lock.
///
/// ```
/// use std::time::Duration;
/// use lock_core::WaitPolicy;
///
/// assert_eq!(WaitPolicy::from(Duration::ZERO), WaitPolicy::Try);
/// assert_eq!(WaitPolicy::from(Duration::from_secs(3)), WaitPolicy::Within(Duration::from_secs(3)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitPolicy {
    /// Do not wait: a busy lock is `Ok(None)` at once.
    Try,
    /// Wait up to this long.
    Within(Duration),
    /// Wait until granted (or the backend fails).
    Forever,
}

impl From<Duration> for WaitPolicy {
    fn from(wait: Duration) -> Self {
        if wait.is_zero() {
            Self::Try
        } else {
            Self::Within(wait)
        }
    }
}

impl WaitPolicy {
    /// The instant waiting ends, measured from `start`; `None` means never (a wait too long to
    /// represent counts as forever).
    #[must_use]
    pub fn deadline(self, start: Instant) -> Option<Instant> {
        match self {
            Self::Try => Some(start),
            Self::Within(wait) => start.checked_add(wait),
            Self::Forever => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_bounds_are_enforced() {
        assert!(LeaseMode::watchdog(Duration::from_millis(29))
            .validate()
            .is_err());
        assert!(LeaseMode::fixed(MIN_LEASE_TTL).validate().is_ok());
        assert!(LeaseMode::fixed(MAX_LEASE_TTL + Duration::from_secs(1))
            .validate()
            .is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn validity_counts_from_the_send_and_leaves_a_margin() {
        let sent = Instant::now();
        let ttl = Duration::from_secs(10);
        assert_eq!(
            valid_until(sent, ttl),
            sent + Duration::from_secs(10) - Duration::from_millis(102)
        );
        assert_eq!(WaitPolicy::Try.deadline(sent), Some(sent));
        assert_eq!(WaitPolicy::Within(Duration::MAX).deadline(sent), None);
    }
}
