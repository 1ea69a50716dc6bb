//! Metrics of the cache primitive ([`Cache`](super::Cache), `#[single_flight]`, and the
//! response cache underneath), through the [`metrics`](https://docs.rs/metrics) facade
//! (feature `metrics`; see [`lock_core::metrics`](crate::metrics) for the whole catalogue).
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | [`CACHE_REQUESTS_TOTAL`](crate::metrics::CACHE_REQUESTS_TOTAL) | counter | `cache`, `result` | calls by result: `hit`, `stale`, `computed`, `collapsed`, `stale_if_error`, `fail_open`, `wait_timed_out`, `uncacheable`, `pass_through` (a key marked pass-through: computed at once, without a lease), or a failure: `compute_failed`, `shared_failure` (another caller's failure, handed over or remembered for the negative TTL), `too_large`, `timeout`, `unavailable`, `error` |
//! | [`CACHE_COMPUTE_SECONDS`](crate::metrics::CACHE_COMPUTE_SECONDS) | histogram | `cache` | how long the computations of calls that computed (`computed`, `uncacheable`, `pass_through`) took; background refreshes are not timed |
//!
//! `cache` is the [`Cache`](super::Cache)'s [namespace](super::Cache::namespace) (`""`
//! without one), so two caches are told apart; the locks of their computations are counted
//! in the lock metrics under the namespace `cache.<namespace>`.
//!
//! ```
//! assert_eq!(lock_core::metrics::CACHE_REQUESTS_TOTAL, "lock_cache_requests_total");
//! ```

use std::time::Duration;

use super::{CacheError, CacheStatus};
#[cfg(feature = "metrics")]
use crate::metrics::{CACHE_COMPUTE_SECONDS, CACHE_REQUESTS_TOTAL};

/// The `result` label of a cache call that gave a value.
pub(crate) fn cache_status_label(status: CacheStatus) -> &'static str {
    match status {
        CacheStatus::Hit => "hit",
        CacheStatus::Stale => "stale",
        CacheStatus::Computed => "computed",
        CacheStatus::Collapsed => "collapsed",
        CacheStatus::StaleIfError => "stale_if_error",
        CacheStatus::FailOpen => "fail_open",
        CacheStatus::WaitTimedOut => "wait_timed_out",
        CacheStatus::Uncacheable => "uncacheable",
        CacheStatus::PassThrough => "pass_through",
    }
}

/// The `result` label of a cache call that failed.
pub(crate) fn cache_error_label<E>(error: &CacheError<E>) -> &'static str {
    match error {
        CacheError::Compute(_) => "compute_failed",
        CacheError::Shared(_) | CacheError::Elsewhere(_) => "shared_failure",
        CacheError::TooLarge { .. } => "too_large",
        CacheError::WaitTimedOut(_) => "timeout",
        CacheError::Lock(error) if error.is_unavailable() => "unavailable",
        _ => "error",
    }
}

/// Records one call of the cache of namespace `cache` by its `result` label, and how long its
/// computation took when this call computed (`computed_in`).
pub(crate) fn cache_call(cache: &str, result: &'static str, computed_in: Option<Duration>) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!(CACHE_REQUESTS_TOTAL, "cache" => cache.to_owned(), "result" => result)
            .increment(1);
        if let Some(took) = computed_in {
            metrics::histogram!(CACHE_COMPUTE_SECONDS, "cache" => cache.to_owned())
                .record(took.as_secs_f64());
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (cache, result, computed_in);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        let timed_out: CacheError<()> = CacheError::WaitTimedOut(Duration::from_secs(1));
        assert_eq!(cache_error_label(&timed_out), "timeout");
        assert_eq!(cache_status_label(CacheStatus::PassThrough), "pass_through");
    }
}
