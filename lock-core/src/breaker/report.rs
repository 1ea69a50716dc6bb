//! What a breaker tells operators: one WARN when its backend goes down, one INFO when it is
//! back, and between the two at most one INFO summary per
//! [`summary_every`](super::BreakerOptions::summary_every); each failed probe and refused call
//! is DEBUG only. With the `metrics` feature, every transition is counted and the
//! availability gauge set (see [`crate::metrics`]).

use std::time::Duration;

use crate::metrics;

/// The state names of the transitions metric.
pub(super) const OPEN: &str = "open";
pub(super) const HALF_OPEN: &str = "half_open";
pub(super) const CLOSED: &str = "closed";

/// The backend was just found down.
pub(super) fn opened(
    backend: &'static str,
    failures: u32,
    within: Duration,
    last_error: &str,
    probe_in: Duration,
    fail_fast: bool,
) {
    metrics::breaker_transition(backend, OPEN);
    metrics::backend_available(backend, false);
    if fail_fast {
        tracing::warn!(
            backend,
            failures,
            within_ms = millis(within),
            last_error,
            next_probe_ms = millis(probe_in),
            "lock backend down: calls to it fail fast (fail-open callers skip it, the others get `unavailable`) until a probe gets through"
        );
    } else {
        tracing::warn!(
            backend,
            failures,
            within_ms = millis(within),
            last_error,
            "lock backend down (the breaker does not fail fast: calls still wait for their timeouts)"
        );
    }
}

/// A probe was let through.
pub(super) fn probing(backend: &'static str) {
    metrics::breaker_transition(backend, HALF_OPEN);
    tracing::debug!(backend, "lock backend down: probing it");
}

/// A probe failed; the next is due after `cool_down`.
pub(super) fn probe_failed(backend: &'static str, error: &str, cool_down: Duration) {
    metrics::breaker_transition(backend, OPEN);
    tracing::debug!(
        backend,
        error,
        next_probe_ms = millis(cool_down),
        "lock backend still down: the probe failed"
    );
}

/// The backend has been down for a while: the rate-limited line between the two.
pub(super) fn still_down(
    backend: &'static str,
    down_for: Duration,
    refused: u64,
    last_error: &str,
    next_probe: Duration,
) {
    tracing::info!(
        backend,
        down_ms = millis(down_for),
        refused,
        last_error,
        next_probe_ms = millis(next_probe),
        "lock backend still down"
    );
}

/// The backend answered again.
pub(super) fn closed(backend: &'static str, down_for: Duration, refused: u64) {
    metrics::breaker_transition(backend, CLOSED);
    metrics::backend_available(backend, true);
    tracing::info!(
        backend,
        down_ms = millis(down_for),
        refused,
        "lock backend back: calls go through again"
    );
}

/// A call was refused without reaching the server.
pub(super) fn refused(backend: &'static str) {
    metrics::breaker_refused(backend);
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
