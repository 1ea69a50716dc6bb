//! Reading metrics back in tests (feature `metrics`): an in-memory recorder set for the test's
//! own thread, and the series of [`HTTP_RESPONSES_TOTAL`] as lines, checked to carry the same
//! labels. Shared by lock-core's metrics suites and the adapters' (lock-tower, lock-actix).
//!
//! Each test records into a recorder of its own, set for its thread alone ([`local_recorder`]):
//! the other tests of a binary run at the same time on other threads, and a process-wide
//! recorder would count their locks, caches and HTTP answers too.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use lock_core::metrics::HTTP_RESPONSES_TOTAL;
//! use lock_testing::metrics::{http_response_series, local_recorder};
//!
//! let (snapshotter, _recording) = local_recorder();
//! metrics::counter!(HTTP_RESPONSES_TOTAL, "layer" => "keyed_lock", "status" => "201", "outcome" => "ran")
//!     .increment(1);
//! let metrics = snapshotter.snapshot().into_vec();
//! assert_eq!(http_response_series(&metrics), [("keyed_lock ran 201".to_owned(), 1)]);
//! # }
//! ```

use metrics::{LocalRecorderGuard, SharedString, Unit};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::CompositeKey;

use lock_core::metrics::HTTP_RESPONSES_TOTAL;

/// A snapshot of the recorder, as `Snapshotter::snapshot().into_vec()` gives it.
pub type Metrics = Vec<(CompositeKey, Option<Unit>, Option<SharedString>, DebugValue)>;

/// A new in-memory recorder, set as the calling thread's recorder until the guard drops, and
/// the way to read it. The test must run on a current-thread runtime (`#[tokio::test]`'s
/// default), where the tasks it spawns (a watchdog, a breaker's probe) run on its thread too.
#[must_use]
pub fn local_recorder() -> (Snapshotter, LocalRecorderGuard<'static>) {
    // Leaked: the guard borrows the recorder for the rest of the test.
    let recorder: &'static DebuggingRecorder = Box::leak(Box::default());
    (
        recorder.snapshotter(),
        metrics::set_default_local_recorder(recorder),
    )
}

/// Every [`HTTP_RESPONSES_TOTAL`] series of `metrics` as `"<layer> <outcome> <status>"` with
/// its count, sorted.
///
/// # Panics
/// When a series lacks one of `layer`, `outcome` and `status`, or has another label: every
/// series carries the same three.
#[must_use]
pub fn http_response_series(metrics: &Metrics) -> Vec<(String, u64)> {
    let mut series = Vec::new();
    for (key, _, _, value) in metrics {
        if key.key().name() != HTTP_RESPONSES_TOTAL {
            continue;
        }
        let mut labels: Vec<(&str, &str)> = key
            .key()
            .labels()
            .map(|label| (label.key(), label.value()))
            .collect();
        labels.sort_unstable();
        let names: Vec<&str> = labels.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ["layer", "outcome", "status"], "{key:?}");
        let DebugValue::Counter(count) = value else {
            panic!("{key:?} is not a counter");
        };
        let values: Vec<&str> = labels.iter().map(|(_, value)| *value).collect();
        series.push((values.join(" "), *count));
    }
    series.sort();
    series
}
