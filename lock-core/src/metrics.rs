//! The metrics catalogue, and the metrics of the lock and its backends' breakers, through the [`metrics`](https://docs.rs/metrics) facade (feature
//! `metrics`): nothing is recorded until the application installs a recorder, and no exporter
//! is forced on it. Without the feature these names are all there is and nothing is recorded.
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | [`ACQUIRE_TOTAL`] | counter | `backend`, `namespace`, `outcome` | acquisitions by outcome: `acquired`, `busy` (the wait ended), `timeout`, `unavailable`, `invalid`, `error` |
//! | [`ACQUIRE_WAIT_SECONDS`] | histogram | `backend`, `namespace`, `outcome` | how long an acquisition took, waiting included |
//! | [`HOLD_SECONDS`] | histogram | `backend`, `namespace` | how long a lease was held, grant to release |
//! | [`LOST_TOTAL`] | counter | `backend`, `namespace`, `reason` | leases lost: `expired`, `renewal_failed`, `not_owner`, `session_lost` |
//! | [`RENEWALS_TOTAL`] | counter | `backend`, `namespace`, `result` | watchdog renewals (or checks): `ok`, `failed` (retried while the lease lasts) |
//! | [`BACKEND_AVAILABLE`] | gauge | `backend` | 1 while the backend's [circuit breaker](crate::breaker) is closed, 0 while it is open or half-open (one series per backend name: with several breakers of one kind, the latest transition shows) |
//! | [`BREAKER_TRANSITIONS_TOTAL`] | counter | `backend`, `state` | the breaker's transitions, by the state entered: `open` (the backend went down, or a probe failed), `half_open` (a probe goes), `closed` (it is back) |
//! | [`BREAKER_REFUSED_TOTAL`] | counter | `backend` | calls refused without reaching the server while the breaker was open |
//! | [`HTTP_RESPONSES_TOTAL`] | counter | `layer`, `status`, `outcome` | answers of the HTTP layers, counted once where lock-core decides them, every series with all three labels: `layer` is `keyed_lock` (outcome `ran`: the handler's answer, or a rejection kind: `busy`, `unavailable`, `lost`, `bad_key`, `internal`, …), `idempotency` (outcome [`Outcome::as_str`](crate::http::idempotency::Outcome::as_str)) or `response_cache` (outcome read from the answer's own `Cache-Status`, see below); `status` is the status sent, the handler's included, or `none` when the handler failed instead of answering (its error goes on to the framework) |
//! | [`CACHE_REQUESTS_TOTAL`] | counter | `cache`, `result` | calls of the cache primitive ([`lock_core::cache`](crate::cache), `#[single_flight]`, and the response cache underneath): `hit`, `stale`, `computed`, `collapsed`, `stale_if_error`, `fail_open`, `wait_timed_out`, `uncacheable`, `pass_through` (a key marked pass-through: computed at once, without a lease), or a failure: `compute_failed`, `shared_failure` (another caller's failure, handed over or remembered for the negative TTL), `too_large`, `timeout`, `unavailable`, `error` |
//! | [`CACHE_COMPUTE_SECONDS`] | histogram | `cache` | how long the computations of calls that computed (`computed`, `uncacheable`, `pass_through`) took; background refreshes are not timed |
//!
//! Labels that tell instances apart, all of bounded cardinality (never a lock key):
//! - `backend`: the backend's kind (`memory`, `redis`, `postgres`, `mysql`, `zookeeper`,
//!   `etcd`). The breaker metrics are labelled by it alone: a breaker belongs to a backend,
//!   and a backend has no name of its own.
//! - `namespace`: the [`LockClient`](crate::LockClient)'s
//!   [namespace](crate::LockClientBuilder::namespace), `""` for a client without one (which
//!   Prometheus shows as no label). The locks a [`Cache`](crate::cache::Cache) or an
//!   [`Idempotency`](crate::idempotency::Idempotency) takes for its computations and claims
//!   are under `cache.<namespace>` and `idem.<namespace>`.
//! - `cache`: the [`Cache`](crate::cache::Cache)'s [namespace](crate::cache::Cache::namespace)
//!   (`""` without one).
//!
//! `lock_http_responses_total` has no namespace label: its rejections of requests without a
//! usable key are answered before any client is involved (by the key extractor), so such a
//! label could not be on every series. The layers' locks and caches are told apart by the
//! metrics above.
//!
//! The response cache's `outcome`s, from its `Cache-Status` member: `hit`, `stale` (within
//! stale-while-revalidate), `stale_if_error`, `collapsed` (another request's response, or its
//! failure), `negative` (a failure remembered for the negative TTL), `miss` (this request's
//! response, stored), `uncacheable` (forwarded, not stored), `pass_through` (forwarded at once
//! for a key marked pass-through), `refresh`
//! (`fwd=request`: `no-cache`, `max-age=0`, `Authorization`), `bypass` (not cacheable: the
//! application answers), `fail_open`, `wait_timed_out`, `not_cached` (504 for
//! `only-if-cached`), `unavailable` (503, failing closed), `error` (500), and `origin_error`
//! (the application failed: `status="none"`). Hit ratio: `outcome=~"hit|stale|collapsed"`
//! over all.
//!
//! # Exporting
//!
//! Every histogram's name ends in `_seconds` ([`HISTOGRAMS`]); give an exporter
//! [`SECONDS_BUCKETS`] for them so they render as histograms (a Prometheus exporter's default
//! is a summary, which `histogram_quantile` cannot read, nor add up across instances), and
//! call [`describe`] once the recorder is installed for the `# HELP` lines:
//!
//! ```
//! // With a Prometheus exporter installed, these appear as e.g.
//! // lock_acquire_total{backend="redis",namespace="shop",outcome="acquired"} 1042
//! assert_eq!(lock_core::metrics::ACQUIRE_TOTAL, "lock_acquire_total");
//! assert!(lock_core::metrics::HISTOGRAMS.iter().all(|name| name.ends_with("_seconds")));
//! ```
//!
//! With metrics-exporter-prometheus:
//!
//! ```ignore
//! use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
//!
//! let handle = PrometheusBuilder::new()
//!     .set_buckets_for_metric(
//!         Matcher::Suffix("_seconds".into()),
//!         lock_core::metrics::SECONDS_BUCKETS,
//!     )?
//!     .install_recorder()?;
//! lock_core::metrics::describe();
//! // serve `handle.render()` at /metrics
//! ```

use std::time::Duration;

use crate::{LockError, LostReason};

/// Acquisitions by outcome (counter; labels `backend`, `namespace`, `outcome`).
pub const ACQUIRE_TOTAL: &str = "lock_acquire_total";
/// How long acquisitions took, waiting included (histogram, seconds; labels `backend`,
/// `namespace`, `outcome`).
pub const ACQUIRE_WAIT_SECONDS: &str = "lock_acquire_wait_seconds";
/// How long leases were held, grant to release (histogram, seconds; labels `backend`,
/// `namespace`).
pub const HOLD_SECONDS: &str = "lock_hold_seconds";
/// Leases lost (counter; labels `backend`, `namespace`, `reason`).
pub const LOST_TOTAL: &str = "lock_lost_total";
/// Watchdog renewals and ownership checks (counter; labels `backend`, `namespace`, `result`).
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

/// Calls of the cache primitive by result (counter; labels `cache`, `result`).
pub const CACHE_REQUESTS_TOTAL: &str = "lock_cache_requests_total";
/// How long the computations of cache calls that computed took (histogram, seconds; label
/// `cache`).
pub const CACHE_COMPUTE_SECONDS: &str = "lock_cache_compute_seconds";

/// Answers of the HTTP layers (counter; labels `layer`, `status`, `outcome`, on every series).
pub const HTTP_RESPONSES_TOTAL: &str = "lock_http_responses_total";

/// The `status` label of an answer that is no response: the handler (or the inner service)
/// failed, and its error goes on to the framework, which makes of it what it does.
///
/// ```
/// assert_eq!(lock_core::metrics::NO_STATUS, "none");
/// ```
pub const NO_STATUS: &str = "none";

/// Every histogram lock-core records, all in seconds (their names end in `_seconds`).
///
/// ```
/// use lock_core::metrics::{HISTOGRAMS, HOLD_SECONDS};
///
/// assert!(HISTOGRAMS.contains(&HOLD_SECONDS));
/// assert!(HISTOGRAMS.iter().all(|name| name.ends_with("_seconds")));
/// ```
pub const HISTOGRAMS: &[&str] = &[ACQUIRE_WAIT_SECONDS, HOLD_SECONDS, CACHE_COMPUTE_SECONDS];

/// The recommended buckets of every `*_seconds` histogram ([`HISTOGRAMS`]): 0.5 ms to 30 s,
/// from a cache hit or an uncontended lock to a long wait or hold. Give them to the exporter,
/// or it may render the histograms as summaries, whose quantiles neither
/// `histogram_quantile` reads nor add up across instances. With metrics-exporter-prometheus:
///
/// ```ignore
/// use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
///
/// let builder = PrometheusBuilder::new().set_buckets_for_metric(
///     Matcher::Suffix("_seconds".into()),
///     lock_core::metrics::SECONDS_BUCKETS,
/// )?;
/// ```
///
/// (The README's "Production setup" compiles this with the exporter.)
///
/// ```
/// use lock_core::metrics::SECONDS_BUCKETS;
///
/// assert_eq!((SECONDS_BUCKETS[0], SECONDS_BUCKETS[SECONDS_BUCKETS.len() - 1]), (0.0005, 30.0));
/// assert!(SECONDS_BUCKETS.windows(2).all(|pair| pair[0] < pair[1]));
/// ```
pub const SECONDS_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Registers the help text and unit of every metric lock-core records (the lock's, the
/// breakers', the cache's and the HTTP layers') with the installed recorder: Prometheus
/// shows them as `# HELP` lines (the HTTP layers' with the `http` feature). Call it once,
/// after installing the recorder (a recorder installed later has none of them). Without the `metrics` feature it does nothing.
///
/// ```
/// // With no recorder installed, the descriptions go nowhere.
/// lock_core::metrics::describe();
/// ```
pub fn describe() {
    #[cfg(feature = "metrics")]
    {
        use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};

        describe_counter!(
            ACQUIRE_TOTAL,
            Unit::Count,
            "Lock acquisitions by outcome: acquired, busy, timeout, unavailable, invalid, error."
        );
        describe_histogram!(
            ACQUIRE_WAIT_SECONDS,
            Unit::Seconds,
            "How long lock acquisitions took, waiting included."
        );
        describe_histogram!(
            HOLD_SECONDS,
            Unit::Seconds,
            "How long leases were held, grant to release."
        );
        describe_counter!(
            LOST_TOTAL,
            Unit::Count,
            "Leases lost, by reason: expired, renewal_failed, not_owner, session_lost."
        );
        describe_counter!(
            RENEWALS_TOTAL,
            Unit::Count,
            "Watchdog renewals (or ownership checks) by result: ok, failed."
        );
        describe_gauge!(
            BACKEND_AVAILABLE,
            "1 while the backend's circuit breaker is closed, 0 while it is open or half-open."
        );
        describe_counter!(
            BREAKER_TRANSITIONS_TOTAL,
            Unit::Count,
            "Circuit breaker transitions, by the state entered: open, half_open, closed."
        );
        describe_counter!(
            BREAKER_REFUSED_TOTAL,
            Unit::Count,
            "Calls an open circuit breaker refused without reaching the server."
        );
        describe_counter!(
            CACHE_REQUESTS_TOTAL,
            Unit::Count,
            "Calls of the cache primitive, by result."
        );
        describe_histogram!(
            CACHE_COMPUTE_SECONDS,
            Unit::Seconds,
            "How long the computations of cache calls that computed took."
        );
        // The HTTP layers exist with the `http` feature only.
        #[cfg(feature = "http")]
        describe_counter!(HTTP_RESPONSES_TOTAL, Unit::Count, "Answers of the HTTP layers (keyed_lock, idempotency, response_cache), by status and outcome.");
    }
}

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
        LostReason::ShutDown => "shut_down",
        LostReason::Revoked { .. } => "revoked",
    }
}

/// Records one acquisition by a client of `namespace`.
pub(crate) fn acquired(
    backend: &'static str,
    namespace: &str,
    outcome: &'static str,
    took: Duration,
) {
    #[cfg(feature = "metrics")]
    {
        let labels = vec![
            metrics::Label::new("backend", backend),
            metrics::Label::new("namespace", namespace.to_owned()),
            metrics::Label::new("outcome", outcome),
        ];
        metrics::counter!(ACQUIRE_TOTAL, labels.clone()).increment(1);
        metrics::histogram!(ACQUIRE_WAIT_SECONDS, labels).record(took.as_secs_f64());
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, namespace, outcome, took);
}

/// Records the end of a hold.
pub(crate) fn released(backend: &'static str, namespace: &str, held_for: Duration) {
    #[cfg(feature = "metrics")]
    metrics::histogram!(HOLD_SECONDS, "backend" => backend, "namespace" => namespace.to_owned())
        .record(held_for.as_secs_f64());
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, namespace, held_for);
}

/// Records a lost lease.
pub(crate) fn lost(backend: &'static str, namespace: &str, reason: &LostReason) {
    #[cfg(feature = "metrics")]
    metrics::counter!(LOST_TOTAL, "backend" => backend, "namespace" => namespace.to_owned(), "reason" => lost_reason(reason))
        .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, namespace, lost_reason(reason));
}

/// Records a renewal (or ownership check) that succeeded or failed.
pub(crate) fn renewal(backend: &'static str, namespace: &str, ok: bool) {
    #[cfg(feature = "metrics")]
    metrics::counter!(RENEWALS_TOTAL, "backend" => backend, "namespace" => namespace.to_owned(), "result" => if ok { "ok" } else { "failed" })
        .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, namespace, ok);
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
