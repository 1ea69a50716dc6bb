//! The stampede scenario behind `cargo xtask demo stampede`: product-service instances (the
//! axum and actix-web apps, sharing one cache backend and one slow origin) under two kinds of
//! load, each phase with its verdict.
//!
//! 1. **Cold key**: C clients request one product nobody has asked for, all at once, spread
//!    over the instances. The origin must be called once: one request computes, the others
//!    (in its instance and in the others) wait for that value and are handed it by push.
//! 2. **Hot key expiring under steady load**: one product requested at a steady rate for a
//!    few seconds with a short fresh window and stale-while-revalidate. Every expiry must cost
//!    exactly one origin call (a background refresh), and no request may wait for the origin,
//!    on either framework: none takes as long as the origin's delay, and every answer is `hit`
//!    or `stale`, the request that starts a refresh included.
//!
//! Starting the instances is the caller's part (the demo binary links both apps); this module
//! needs only their base URLs and the origin they share.

mod cache_status;
mod checks;
mod fire;
mod report;

use std::sync::Arc;
use std::time::Duration;

use example_support::product::{Origin, ProductPolicy};

use crate::demo::inventory::unique;
use crate::shared::load;

pub use self::cache_status::{outcome_of, CACHE_STATUS_HEADER};
pub use self::checks::{
    bad_ids_are_refused, cold_key_collapses, metrics_show_the_computed_product, origin_calls,
    second_request_hits, stats,
};
pub use self::fire::{burst, get, steady, Sample};
pub use self::report::{print_table, table_header, table_row, PhaseReport};
pub use crate::demo::progress::{Live, ProgressLine};

/// Running instances and what the phases need to know about them.
#[derive(Clone, Debug)]
pub struct Stampede {
    /// The instances' base URLs (`http://127.0.0.1:port`), used in turn.
    pub targets: Vec<String>,
    /// The origin every instance reads from.
    pub origin: Origin,
    /// The instances' cache and origin settings.
    pub policy: ProductPolicy,
    /// Draw a live progress line on stderr.
    pub progress: bool,
}

impl Stampede {
    fn url(&self, n: u64, path: &str) -> String {
        format!("{}{path}", self.targets[n as usize % self.targets.len()])
    }

    /// Phase 1: `clients` concurrent requests for one cold product.
    pub async fn cold_key(&self, clients: usize) -> PhaseReport {
        let id = unique("cold");
        let path = format!("/products/{id}");
        let client = load::client(clients);
        // One connection per client first, so the burst measures the cache, not TCP
        // handshakes: the clients' requests arrive while the origin call is under way.
        let warm: Vec<String> = (0..clients as u64).map(|n| self.url(n, "/stats")).collect();
        let warmed = burst(&client, warm, Arc::default()).await;
        let live = Arc::new(Live::default());
        let origin = self.origin.clone();
        let line = ProgressLine::start(self.progress, "cold key", live.clone(), "origin hits", {
            let id = id.clone();
            move || origin.calls_for(&id)
        });
        let urls = (0..clients as u64).map(|n| self.url(n, &path)).collect();
        let started = tokio::time::Instant::now();
        let samples = burst(&client, urls, live).await;
        let elapsed = started.elapsed();
        line.finish();

        let mut report = PhaseReport::new("cold key", &samples, None);
        report.elapsed = elapsed;
        report.per_expiry = self.origin.per_generation(&id);
        let unwarmed = warmed.iter().filter(|s| !s.ok()).count();
        report.check(unwarmed == 0, || {
            format!("{unwarmed} of the warm-up requests to /stats failed")
        });
        let (errors, first, most) = (
            report.errors,
            report.per_expiry.first().copied().unwrap_or(0),
            report.max_per_expiry(),
        );
        report.check(errors == 0, || format!("{errors} requests failed"));
        report.check(first == 1, || {
            format!("the origin was called {first} times for the cold product, not once")
        });
        report.check(most <= 1, || {
            format!("an expiry cost {most} origin calls, not one")
        });
        report
    }

    /// Phase 2: one product at `rate` requests per second for `duration`, after one request
    /// that fills it (not counted in the row: it waits for the origin by design).
    pub async fn hot_key(&self, rate: u64, duration: Duration) -> (PhaseReport, Sample) {
        let id = unique("hot");
        let path = format!("/products/{id}");
        let client = load::client(64);
        let fill = get(&client, &self.url(0, &path)).await;
        let live = Arc::new(Live::default());
        let origin = self.origin.clone();
        let line = ProgressLine::start(self.progress, "hot key", live.clone(), "origin hits", {
            let id = id.clone();
            move || origin.calls_for(&id)
        });
        let started = tokio::time::Instant::now();
        let samples = steady(&client, |n| self.url(n, &path), rate, duration, live).await;
        let elapsed = started.elapsed();
        line.finish();

        let delay = self.origin.delay();
        let mut report = PhaseReport::new("hot key", &samples, Some(delay));
        report.elapsed = elapsed;
        report.per_expiry = self.origin.per_generation(&id);
        report.check(fill.ok(), || {
            format!("the first request failed: {} {}", fill.status, fill.body)
        });
        let (errors, expiries, most) = (
            report.errors,
            report.per_expiry.len(),
            report.max_per_expiry(),
        );
        report.check(errors == 0, || format!("{errors} requests failed"));
        report.check(expiries >= 2, || {
            format!(
                "the product never expired under load (fresh {} ms, load {} ms)",
                self.policy.fresh.as_millis(),
                duration.as_millis()
            )
        });
        report.check(most <= 1, || {
            format!("an expiry cost {most} origin calls, not one")
        });
        let (waited, refreshed) = (report.waited(), report.count("refreshed"));
        report.check(waited == 0, || {
            format!(
                "{waited} requests waited for the origin (answered neither hit nor stale; \
                 {refreshed} of them with the refresh they started)"
            )
        });
        let slow = report.slow.unwrap_or(0);
        report.check(slow == 0, || {
            format!(
                "{slow} requests took {} ms (the origin's delay) or longer",
                delay.as_millis()
            )
        });
        (report, fill)
    }
}
