//! Reading metrics back from the recorder of the test's own thread
//! (`lock_testing::metrics`), for the metrics suites (`metrics.rs`, `http_metrics.rs`,
//! `cache_metrics.rs`): counters, histograms and gauges by name and labels.

use metrics_util::debugging::DebugValue;
use metrics_util::{CompositeKey, MetricKind};

pub(crate) use lock_testing::metrics::{local_recorder, Metrics};

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
