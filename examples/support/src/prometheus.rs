//! `GET /metrics` for the example apps: lock-core's metrics (its `metrics` feature) in the
//! Prometheus text format, through a recorder installed once per process, however many apps
//! the process starts (the apps' tests start several).
//!
//! Histograms (every `*_seconds` metric) are rendered as Prometheus histograms with
//! lock-core's [`SECONDS_BUCKETS`](lock_core::metrics::SECONDS_BUCKETS), so percentiles can be
//! taken across instances
//! (`histogram_quantile(0.99, sum by (backend, namespace, le) (rate(lock_acquire_wait_seconds_bucket[5m])))`),
//! and every metric has its `# HELP` line ([`describe`](lock_core::metrics::describe)).
//!
//! ```
//! use example_support::prometheus;
//!
//! // An app's `/metrics` handler answers with these two.
//! let body: String = prometheus::render();
//! assert_eq!(prometheus::CONTENT_TYPE, "text/plain; version=0.0.4");
//! # let _ = body;
//! ```

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Where the apps serve the page.
pub const PATH: &str = "/metrics";

/// The content type of the Prometheus text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4";

/// How often the recorder's histograms are drained between scrapes (the exporter leaves that
/// to whoever installs it without its HTTP listener).
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The process's recorder, installed on the first call; later calls return the same handle.
///
/// If another recorder was installed first (a test's, say), this one records nothing and
/// renders an empty page; the failure is reported once on stderr.
pub fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let builder = || {
            PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Suffix("_seconds".to_owned()),
                    lock_core::metrics::SECONDS_BUCKETS,
                )
                .expect("the buckets are not empty")
        };
        let handle = match builder().install_recorder() {
            Ok(handle) => handle,
            Err(error) => {
                eprintln!(
                    "/metrics: another metrics recorder is installed; serving none ({error})"
                );
                return builder().build_recorder().handle();
            }
        };
        lock_core::metrics::describe();
        let upkeep = handle.clone();
        // A plain thread: the recorder may be installed outside any async runtime.
        let spawned = std::thread::Builder::new()
            .name("prometheus-upkeep".to_owned())
            .spawn(move || loop {
                std::thread::sleep(UPKEEP_EVERY);
                upkeep.run_upkeep();
            });
        if let Err(error) = spawned {
            eprintln!("/metrics: no upkeep thread ({error}); histograms drain at each scrape");
        }
        handle
    })
}

/// Installs the process's recorder if not done yet: call it when an app starts, so that what
/// happens before the first scrape is recorded.
pub fn install() {
    handle();
}

/// The page of `GET /metrics` (installing the recorder if not done yet).
#[must_use]
pub fn render() -> String {
    handle().render()
}
