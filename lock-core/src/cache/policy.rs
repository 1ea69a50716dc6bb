//! How long a computed value is served, and what happens around its expiry.

use std::time::Duration;

use crate::LockError;

/// The longest any window of a [`Freshness`] may be.
pub const MAX_WINDOW: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// The life of a cached value, after the moment it was stored:
///
/// ```text
/// stored ──── fresh ────┬──── stale-while-revalidate ────┬── gone
///                       └──────── stale-if-error ────────────┴── gone
/// ```
///
/// - **fresh**: served as is, no lock taken (one read).
/// - **stale-while-revalidate** (RFC 5861): the stale value is served at once, while exactly
///   one background refresh runs across all instances.
/// - **stale-if-error** (RFC 5861): when computing a new value fails, a value stale by no more
///   than this is served instead of the error.
/// - **negative**: a failed computation is remembered this long and handed to the callers
///   meanwhile, without computing (0: handed only to the callers waiting for it when it
///   failed). A failure while a value is still there (stale, or within stale-if-error) keeps
///   that value: it is served in the failure's stead, and not recomputed, for as long.
/// - **pass-through**: a computation that says its value must not be shared (see
///   [`CacheRequest::try_get_with_freshness`](super::CacheRequest::try_get_with_freshness))
///   marks the key this long: callers compute their own at once, without a lease or waiting
///   for anyone (0: only the callers waiting for it when it ended do).
///
/// ```
/// use std::time::Duration;
/// use lock_core::cache::Freshness;
///
/// let policy = Freshness::fresh_for(Duration::from_secs(60))
///     .stale_while_revalidate(Duration::from_secs(300))
///     .stale_if_error(Duration::from_secs(3600));
/// assert!(policy.validate().is_ok());
/// assert!(Freshness::fresh_for(Duration::ZERO).validate().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Freshness {
    /// How long a stored value is fresh.
    pub fresh: Duration,
    /// How long after that it is served stale while one refresh runs.
    pub stale_while_revalidate: Duration,
    /// How long after it stops being fresh it is served when a refresh fails.
    pub stale_if_error: Duration,
    /// How long a failure is remembered and handed to callers (0: only to those waiting for
    /// it).
    pub negative: Duration,
    /// How long a value that must not be shared marks its key, so callers compute their own
    /// without a lease (0: not at all).
    pub pass_through: Duration,
    /// XFetch's β (Vattani et al., VLDB 2015): a fresh value is refreshed early, in the
    /// background, when `now − Δ·β·ln(rand) ≥ fresh until` (Δ: how long it took to compute).
    /// 0 turns early refresh off; 1 is the paper's optimum.
    pub early_refresh_beta: f64,
}

impl Freshness {
    /// Fresh for `fresh`, no stale windows, errors not cached, no pass-through marks, no early
    /// refresh.
    #[must_use]
    pub const fn fresh_for(fresh: Duration) -> Self {
        Self {
            fresh,
            stale_while_revalidate: Duration::ZERO,
            stale_if_error: Duration::ZERO,
            negative: Duration::ZERO,
            pass_through: Duration::ZERO,
            early_refresh_beta: 0.0,
        }
    }

    /// Serves the value stale for `window` after it stops being fresh, while one refresh runs.
    #[must_use]
    pub const fn stale_while_revalidate(mut self, window: Duration) -> Self {
        self.stale_while_revalidate = window;
        self
    }

    /// Serves the value stale for `window` after it stops being fresh when a refresh fails.
    #[must_use]
    pub const fn stale_if_error(mut self, window: Duration) -> Self {
        self.stale_if_error = window;
        self
    }

    /// Remembers a failed computation for `ttl` and hands it to callers meanwhile.
    #[must_use]
    pub const fn negative_ttl(mut self, ttl: Duration) -> Self {
        self.negative = ttl;
        self
    }

    /// Marks the key pass-through for `ttl` when a computation says its value must not be
    /// shared: callers compute their own meanwhile, without a lease.
    #[must_use]
    pub const fn pass_through(mut self, ttl: Duration) -> Self {
        self.pass_through = ttl;
        self
    }

    /// Refreshes fresh values early (XFetch) with this β; 0 turns it off.
    #[must_use]
    pub const fn early_refresh(mut self, beta: f64) -> Self {
        self.early_refresh_beta = beta;
        self
    }

    /// Checks the windows: `fresh` positive, every window at most [`MAX_WINDOW`], β finite and
    /// not negative.
    pub fn validate(self) -> Result<Self, LockError> {
        let refuse = |reason: String| LockError::InvalidDuration {
            what: "cache freshness",
            reason,
        };
        if self.fresh.is_zero() {
            return Err(refuse("the fresh window must be positive".into()));
        }
        for (name, window) in [
            ("fresh", self.fresh),
            ("stale-while-revalidate", self.stale_while_revalidate),
            ("stale-if-error", self.stale_if_error),
            ("negative", self.negative),
            ("pass-through", self.pass_through),
        ] {
            if window > MAX_WINDOW {
                return Err(refuse(format!(
                    "the {name} window {window:?} is longer than {MAX_WINDOW:?}"
                )));
            }
        }
        if !self.early_refresh_beta.is_finite() || self.early_refresh_beta < 0.0 {
            return Err(refuse(format!(
                "the early refresh β {} must be finite and not negative",
                self.early_refresh_beta
            )));
        }
        Ok(self)
    }
}

/// Checks how long a caller may wait for another's computation: within (0, [`MAX_WINDOW`]].
pub(crate) fn validate_wait(what: &'static str, wait: Duration) -> Result<Duration, LockError> {
    if wait.is_zero() || wait > MAX_WINDOW {
        return Err(LockError::InvalidDuration {
            what,
            reason: format!("{wait:?} is not within (0, {MAX_WINDOW:?}]"),
        });
    }
    Ok(wait)
}

/// What a caller waiting for another instance's computation does when its wait ends without
/// a value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnWaitTimeout {
    /// Compute the value itself and return it without storing it (nginx's
    /// `proxy_cache_lock_timeout`): the caller is served, the computation in progress elsewhere
    /// still stores its result.
    #[default]
    ComputeWithoutStoring,
    /// Fail with [`CacheError::WaitTimedOut`](super::CacheError::WaitTimedOut).
    Fail,
}

/// What the cache does when its backend cannot be reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnBackendError {
    /// Compute without collapsing across instances (callers in this process still share one
    /// computation) and say so in the status: a stampede lock is an efficiency lock.
    #[default]
    FailOpen,
    /// Fail with [`CacheError::Lock`](super::CacheError::Lock).
    FailClosed,
}
