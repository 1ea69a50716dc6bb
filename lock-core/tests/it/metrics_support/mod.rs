//! Reading metrics back from `metrics-util`'s in-memory recorder, for the metrics suites
//! (`metrics.rs`, `http_metrics.rs`, `cache_metrics.rs`).
//!
//! Each test records into a recorder of its own, set for its thread alone ([`local_recorder`]):
//! the other tests of this binary run at the same time on other threads, and a process-wide
//! recorder would count their locks, caches and HTTP answers too.

use metrics::{LocalRecorderGuard, SharedString, Unit};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::{CompositeKey, MetricKind};

/// A new in-memory recorder, set as the calling thread's recorder until the guard drops, and
/// the way to read it. The test must run on a current-thread runtime (`#[tokio::test]`'s
/// default), where the tasks it spawns (a watchdog, a breaker's probe) run on its thread too.
pub(crate) fn local_recorder() -> (Snapshotter, LocalRecorderGuard<'static>) {
    // Leaked: the guard borrows the recorder for the rest of the test.
    let recorder: &'static DebuggingRecorder = Box::leak(Box::default());
    (
        recorder.snapshotter(),
        metrics::set_default_local_recorder(recorder),
    )
}

/// A snapshot of the recorder, as `Snapshotter::snapshot().into_vec()` gives it.
pub(crate) type Metrics = Vec<(CompositeKey, Option<Unit>, Option<SharedString>, DebugValue)>;

/// Whether `key` is the metric `name` of `kind` with all of `labels`.
fn matches(key: &CompositeKey, kind: MetricKind, name: &str, labels: &[(&str, &str)]) -> bool {
    key.kind() == kind
        && key.key().name() == name
        && labels.iter().all(|(label, value)| {
            key.key()
                .labels()
                .any(|l| l.key() == *label && l.value() == *value)
        })
}

/// The counter `name` with all of `labels`, summed over its other labels.
pub(crate) fn counter(metrics: &Metrics, name: &str, labels: &[(&str, &str)]) -> u64 {
    metrics
        .iter()
        .filter(|(key, ..)| matches(key, MetricKind::Counter, name, labels))
        .map(|(.., value)| match value {
            DebugValue::Counter(count) => *count,
            _ => 0,
        })
        .sum()
}

/// How many samples the histogram `name` holds (over all its labels).
pub(crate) fn histogram_samples(metrics: &Metrics, name: &str) -> usize {
    histogram_samples_with(metrics, name, &[])
}

/// How many samples the histogram `name` holds with all of `labels` (over its other labels).
pub(crate) fn histogram_samples_with(
    metrics: &Metrics,
    name: &str,
    labels: &[(&str, &str)],
) -> usize {
    metrics
        .iter()
        .filter(|(key, ..)| matches(key, MetricKind::Histogram, name, labels))
        .map(|(.., value)| match value {
            DebugValue::Histogram(samples) => samples.len(),
            _ => 0,
        })
        .sum()
}

/// The gauge `name` with all of `labels` (the first that matches), if set.
pub(crate) fn gauge(metrics: &Metrics, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    metrics
        .iter()
        .filter(|(key, ..)| matches(key, MetricKind::Gauge, name, labels))
        .find_map(|(.., value)| match value {
            DebugValue::Gauge(value) => Some(value.into_inner()),
            _ => None,
        })
}
