//! The metrics catalogue, and the metrics of the lock and its backends' breakers, through the [`metrics`](https://docs.rs/metrics) facade (feature
//! `metrics`): nothing is recorded until the application installs a recorder, and no exporter
//! is forced on it. Without the feature these names are all there is and nothing is recorded.
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | [`ACQUIRE_TOTAL`] | counter | `backend`, `outcome` | acquisitions by outcome: `acquired`, `busy` (the wait ended), `timeout`, `unavailable`, `invalid`, `error` |
//! | [`ACQUIRE_WAIT_SECONDS`] | histogram | `backend`, `outcome` | how long an acquisition took, waiting included |
//! | [`HOLD_SECONDS`] | histogram | `backend` | how long a lease was held, grant to release |
//! | [`LOST_TOTAL`] | counter | `backend`, `reason` | leases lost: `expired`, `renewal_failed`, `not_owner`, `session_lost` |
//! | [`RENEWALS_TOTAL`] | counter | `backend`, `result` | watchdog renewals (or checks): `ok`, `failed` (retried while the lease lasts) |
//! | [`BACKEND_AVAILABLE`] | gauge | `backend` | 1 while the backend's [circuit breaker](crate::breaker) is closed, 0 while it is open or half-open (one series per backend name: with several breakers of one kind, the latest transition shows) |
//! | [`BREAKER_TRANSITIONS_TOTAL`] | counter | `backend`, `state` | the breaker's transitions, by the state entered: `open` (the backend went down, or a probe failed), `half_open` (a probe goes), `closed` (it is back) |
//! | [`BREAKER_REFUSED_TOTAL`] | counter | `backend` | calls refused without reaching the server while the breaker was open |
//! | [`HTTP_RESPONSES_TOTAL`](crate::http::metrics::HTTP_RESPONSES_TOTAL) | counter | `layer`, `status`, `outcome` | answers of the HTTP layers, counted once where lock-core decides them: `layer` is `keyed_lock` (outcome `ran`, without `status`: the handler's, or a rejection kind: `busy`, `unavailable`, `lost`, `bad_key`, `internal`, …), `idempotency` (outcome [`Outcome::as_str`](crate::http::idempotency::Outcome::as_str); `not_stored` from a handler error has no `status`) or `response_cache` (outcome read from the answer's own `Cache-Status`, see below) |
//! | [`CACHE_REQUESTS_TOTAL`](crate::cache::metrics::CACHE_REQUESTS_TOTAL) | counter | `result` | calls of the cache primitive ([`lock_core::cache`](crate::cache), `#[single_flight]`, and the response cache underneath): `hit`, `stale`, `computed`, `collapsed`, `stale_if_error`, `fail_open`, `wait_timed_out`, `uncacheable`, `pass_through` (a key marked pass-through: computed at once, without a lease), or a failure: `compute_failed`, `shared_failure` (another caller's failure, handed over or remembered for the negative TTL), `too_large`, `timeout`, `unavailable`, `error` |
//! | [`CACHE_COMPUTE_SECONDS`](crate::cache::metrics::CACHE_COMPUTE_SECONDS) | histogram | — | how long the computations of calls that computed (`computed`, `uncacheable`, `pass_through`) took; background refreshes are not timed |
//!
//! The response cache's `outcome`s, from its `Cache-Status` member: `hit`, `stale` (within
//! stale-while-revalidate), `stale_if_error`, `collapsed` (another request's response, or its
//! failure), `negative` (a failure remembered for the negative TTL), `miss` (this request's
//! response, stored), `uncacheable` (forwarded, not stored), `pass_through` (forwarded at once
//! for a key marked pass-through), `refresh`
//! (`fwd=request`: `no-cache`, `max-age=0`, `Authorization`), `bypass` (not cacheable: no
//! `status`, the application answers), `fail_open`, `wait_timed_out`, `not_cached` (504 for
//! `only-if-cached`), `unavailable` (503, failing closed), `error` (500), and `origin_error`
//! (the application failed; no `status`). `status` is the status sent, the application's
//! included. Hit ratio: `outcome=~"hit|stale|collapsed"` over all.
//!
//! ```
//! // With a Prometheus exporter installed, these appear as e.g.
//! // lock_acquire_total{backend="redis",outcome="acquired"} 1042
//! assert_eq!(lock_core::metrics::ACQUIRE_TOTAL, "lock_acquire_total");
//! ```

use std::time::Duration;

use crate::{LockError, LostReason};

/// Acquisitions by outcome (counter; labels `backend`, `outcome`).
pub const ACQUIRE_TOTAL: &str = "lock_acquire_total";
/// How long acquisitions took, waiting included (histogram, seconds; labels `backend`,
/// `outcome`).
pub const ACQUIRE_WAIT_SECONDS: &str = "lock_acquire_wait_seconds";
/// How long leases were held, grant to release (histogram, seconds; label `backend`).
pub const HOLD_SECONDS: &str = "lock_hold_seconds";
/// Leases lost (counter; labels `backend`, `reason`).
pub const LOST_TOTAL: &str = "lock_lost_total";
/// Watchdog renewals and ownership checks (counter; labels `backend`, `result`).
pub const RENEWALS_TOTAL: &str = "lock_renewals_total";

/// 1 while the backend's circuit breaker is closed, 0 while it is open or half-open (gauge;
/// label `backend`).
pub const BACKEND_AVAILABLE: &str = "lock_backend_available";
/// The circuit breakers' transitions by the state entered: `open`, `half_open`, `closed`
/// (counter; labels `backend`, `state`).
pub const BREAKER_TRANSITIONS_TOTAL: &str = "lock_breaker_transitions_total";
/// Calls an open circuit breaker refused without reaching the server (counter; label
/// `backend`).
pub const BREAKER_REFUSED_TOTAL: &str = "lock_breaker_refused_total";

/// The `outcome` label of an acquisition's result.
pub(crate) fn acquire_outcome<T>(result: &Result<Option<T>, LockError>) -> &'static str {
    match result {
        Ok(Some(_)) => "acquired",
        Ok(None) => "busy",
        Err(LockError::Timeout { .. }) => "timeout",
        Err(error) if error.is_unavailable() => "unavailable",
        Err(error) if error.is_invalid_input() => "invalid",
        Err(_) => "error",
    }
}

/// The `reason` label of a loss.
pub(crate) fn lost_reason(reason: &LostReason) -> &'static str {
    match reason {
        LostReason::Expired => "expired",
        LostReason::RenewalFailed(_) => "renewal_failed",
        LostReason::NotOwner => "not_owner",
        LostReason::SessionLost(_) => "session_lost",
    }
}

/// Records one acquisition.
pub(crate) fn acquired(backend: &'static str, outcome: &'static str, took: Duration) {
    #[cfg(feature = "metrics")]
    {
        let labels = [("backend", backend), ("outcome", outcome)];
        metrics::counter!(ACQUIRE_TOTAL, &labels).increment(1);
        metrics::histogram!(ACQUIRE_WAIT_SECONDS, &labels).record(took.as_secs_f64());
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, outcome, took);
}

/// Records the end of a hold.
pub(crate) fn released(backend: &'static str, held_for: Duration) {
    #[cfg(feature = "metrics")]
    metrics::histogram!(HOLD_SECONDS, "backend" => backend).record(held_for.as_secs_f64());
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, held_for);
}

/// Records a lost lease.
pub(crate) fn lost(backend: &'static str, reason: &LostReason) {
    #[cfg(feature = "metrics")]
    metrics::counter!(LOST_TOTAL, "backend" => backend, "reason" => lost_reason(reason))
        .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, lost_reason(reason));
}

/// Records a renewal (or ownership check) that succeeded or failed.
pub(crate) fn renewal(backend: &'static str, ok: bool) {
    #[cfg(feature = "metrics")]
    metrics::counter!(RENEWALS_TOTAL, "backend" => backend, "result" => if ok { "ok" } else { "failed" })
        .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, ok);
}

/// Sets whether the backend is available (its breaker closed).
pub(crate) fn backend_available(backend: &'static str, available: bool) {
    #[cfg(feature = "metrics")]
    metrics::gauge!(BACKEND_AVAILABLE, "backend" => backend).set(if available { 1.0 } else { 0.0 });
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, available);
}

/// Records a transition of a circuit breaker into `state`.
pub(crate) fn breaker_transition(backend: &'static str, state: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!(BREAKER_TRANSITIONS_TOTAL, "backend" => backend, "state" => state)
        .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, state);
}

/// Records a call refused by an open circuit breaker.
pub(crate) fn breaker_refused(backend: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!(BREAKER_REFUSED_TOTAL, "backend" => backend).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = backend;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(acquire_outcome::<()>(&Ok(Some(()))), "acquired");
        assert_eq!(acquire_outcome::<()>(&Ok(None)), "busy");
        let down = LockError::unavailable("redis", "refused");
        assert_eq!(acquire_outcome::<()>(&Err(down)), "unavailable");
        assert_eq!(lost_reason(&LostReason::NotOwner), "not_owner");
    }
}
