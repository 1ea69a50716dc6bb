//! What a phase of the stampede saw, its verdict, and the summary table.

use std::collections::BTreeMap;
use std::time::Duration;

use super::fire::Sample;
use crate::Percentiles;

/// One phase's numbers and verdict.
#[derive(Clone, Debug, Default)]
pub struct PhaseReport {
    /// The phase's name in the table (`cold key`, `hot key`).
    pub name: &'static str,
    /// Requests sent.
    pub requests: u64,
    /// 200 answers by how the response cache answered (see
    /// [`outcome_of`](super::outcome_of)).
    pub by_status: BTreeMap<String, u64>,
    /// Answers other than 200, and requests without an answer.
    pub errors: u64,
    /// The first few errors, for the report.
    pub error_samples: Vec<String>,
    /// Latency of every request.
    pub latency: Percentiles,
    /// Requests that took at least the origin's delay (`None` where waiting is expected).
    pub slow: Option<u64>,
    /// The origin's calls for the phase's product, per expiry generation.
    pub per_expiry: Vec<u64>,
    /// Wall time of the load.
    pub elapsed: Duration,
    /// Why the phase failed; empty when it passed.
    pub failures: Vec<String>,
}

impl PhaseReport {
    /// Counts `samples`; `slow_from`: the latency from which a request counts as slow.
    #[must_use]
    pub fn new(name: &'static str, samples: &[Sample], slow_from: Option<Duration>) -> Self {
        let mut report = Self {
            name,
            requests: samples.len() as u64,
            slow: slow_from
                .map(|limit| samples.iter().filter(|s| s.latency >= limit).count() as u64),
            ..Self::default()
        };
        for sample in samples {
            if sample.ok() {
                let status = sample.cache_status.clone().unwrap_or_else(|| "none".into());
                *report.by_status.entry(status).or_default() += 1;
            } else {
                report.errors += 1;
                if report.error_samples.len() < 3 {
                    report
                        .error_samples
                        .push(format!("{}: {}", sample.status, sample.body));
                }
            }
        }
        let mut latencies: Vec<Duration> = samples.iter().map(|s| s.latency).collect();
        report.latency = Percentiles::of(&mut latencies);
        report
    }

    /// 200 answers the response cache answered this way.
    #[must_use]
    pub fn count(&self, status: &str) -> u64 {
        self.by_status.get(status).copied().unwrap_or(0)
    }

    /// The origin's calls for the phase's product.
    #[must_use]
    pub fn origin_hits(&self) -> u64 {
        self.per_expiry.iter().sum()
    }

    /// The most origin calls any one expiry generation saw (1 when the cache collapses).
    #[must_use]
    pub fn max_per_expiry(&self) -> u64 {
        self.per_expiry.iter().copied().max().unwrap_or(0)
    }

    /// Whether every check passed.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// Adds a failure unless `ok`.
    pub fn check(&mut self, ok: bool, failure: impl FnOnce() -> String) {
        if !ok {
            self.failures.push(failure());
        }
    }

    /// 200 answers that are not `hit` or `stale`: requests that waited for an origin call
    /// (`refreshed` ones, answered with the refresh they started, included).
    #[must_use]
    pub fn waited(&self) -> u64 {
        self.by_status
            .iter()
            .filter(|(status, _)| !matches!(status.as_str(), "hit" | "stale"))
            .map(|(_, n)| n)
            .sum()
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

/// The header of [`table_row`] (99 columns).
#[must_use]
pub fn table_header() -> String {
    format!(
        "{:<8} {:>6} {:>6} {:>7} {:>8} {:>9} {:>6} {:>6} {:>6} {:>7} {:>7} {:>5} {:>6}",
        "phase",
        "reqs",
        "origin",
        "/expiry",
        "computed",
        "collapsed",
        "hit",
        "stale",
        "errors",
        "p50 ms",
        "p99 ms",
        "slow",
        "result"
    )
}

/// One phase as a row under [`table_header`].
#[must_use]
pub fn table_row(r: &PhaseReport) -> String {
    format!(
        "{:<8} {:>6} {:>6} {:>7} {:>8} {:>9} {:>6} {:>6} {:>6} {:>7} {:>7} {:>5} {:>6}",
        r.name,
        r.requests,
        r.origin_hits(),
        r.max_per_expiry(),
        r.count("computed"),
        r.count("collapsed"),
        r.count("hit"),
        r.count("stale"),
        r.errors,
        ms(r.latency.p50),
        ms(r.latency.p99),
        r.slow.map_or_else(|| "-".to_owned(), |n| n.to_string()),
        if r.passed() { "PASS" } else { "FAIL" },
    )
}

/// Prints the table of `reports`, then each phase's origin calls per expiry and failures.
pub fn print_table(reports: &[PhaseReport]) {
    println!("\n{}", table_header());
    for report in reports {
        println!("{}", table_row(report));
    }
    println!();
    for r in reports {
        let per_expiry: Vec<String> = r.per_expiry.iter().map(u64::to_string).collect();
        println!(
            "{}: origin hits per expiry [{}]; max latency {} ms",
            r.name,
            per_expiry.join(" "),
            ms(r.latency.max)
        );
        let others: Vec<String> = r
            .by_status
            .iter()
            .filter(|(s, _)| !matches!(s.as_str(), "hit" | "computed" | "collapsed" | "stale"))
            .map(|(s, n)| format!("{s} {n}"))
            .collect();
        if !others.is_empty() {
            println!("{}: other answers: {}", r.name, others.join(", "));
        }
        for sample in &r.error_samples {
            println!("{}: error: {sample}", r.name);
        }
        for failure in &r.failures {
            println!("{}: FAIL: {failure}", r.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_fits_in_100_columns() {
        let report = PhaseReport {
            name: "cold key",
            requests: 100_000,
            per_expiry: vec![1; 99],
            latency: Percentiles {
                p50: Duration::from_millis(1234),
                p99: Duration::from_millis(9999),
                max: Duration::ZERO,
            },
            slow: Some(99_999),
            ..PhaseReport::default()
        };
        assert!(table_header().chars().count() <= 100);
        assert!(
            table_row(&report).chars().count() <= 100,
            "{}",
            table_row(&report)
        );
    }
}
