//! What each phase of the idempotency demo saw, the summary table and the verdicts.

use std::time::Duration;

use super::fire::Sent;
use crate::Percentiles;

/// One phase's numbers.
#[derive(Clone, Debug, Default)]
pub struct PhaseRow {
    /// `duplicates`, `retries`, `reused keys`, or `total`.
    pub name: &'static str,
    /// HTTP requests sent (a 409 retried counts twice).
    pub requests: u64,
    /// Distinct idempotency keys sent.
    pub keys: u64,
    /// Handler runs during the phase, every instance together.
    pub ran: u64,
    /// 201 answers that were not replays (the handler ran for them).
    pub originals: u64,
    /// 201 answers with `Idempotent-Replayed: true`.
    pub replays: u64,
    /// 409 answers (a duplicate while the first ran).
    pub conflicts: u64,
    /// 422 answers (a key reused with another body).
    pub mismatches: u64,
    /// Every other answer, and requests without one.
    pub other: u64,
    /// Payments in the ledger after the phase.
    pub ledger: u64,
    /// Cents the ledger moved after the phase.
    pub moved: u64,
    /// Latency of every request.
    pub latency: Percentiles,
}

impl PhaseRow {
    /// Counts the answers of `sent`.
    #[must_use]
    pub fn new(name: &'static str, sent: &[Sent]) -> Self {
        let mut row = Self {
            name,
            ..Self::default()
        };
        let mut keys = std::collections::BTreeSet::new();
        let mut latencies = Vec::new();
        for answer in sent.iter().flat_map(|s| {
            keys.insert((s.request.user.as_str(), s.request.key.as_str()));
            &s.answers
        }) {
            row.requests += 1;
            latencies.push(answer.latency);
            match (answer.status, answer.replayed) {
                (201, false) => row.originals += 1,
                (201, true) => row.replays += 1,
                (409, _) => row.conflicts += 1,
                (422, _) => row.mismatches += 1,
                _ => row.other += 1,
            }
        }
        row.keys = keys.len() as u64;
        row.latency = Percentiles::of(&mut latencies);
        row
    }

    /// The totals of `rows` (keys: the most any phase sent; ledger: the last phase's).
    #[must_use]
    pub fn total(rows: &[Self]) -> Self {
        let mut total = Self {
            name: "total",
            ..Self::default()
        };
        for row in rows {
            total.requests += row.requests;
            total.keys = total.keys.max(row.keys);
            total.ran += row.ran;
            total.originals += row.originals;
            total.replays += row.replays;
            total.conflicts += row.conflicts;
            total.mismatches += row.mismatches;
            total.other += row.other;
            total.ledger = row.ledger;
            total.moved = row.moved;
            total.latency.p50 = total.latency.p50.max(row.latency.p50);
            total.latency.p99 = total.latency.p99.max(row.latency.p99);
            total.latency.max = total.latency.max.max(row.latency.max);
        }
        total
    }
}

/// A promise of the demo and whether it held.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// Whether it held.
    pub passed: bool,
    /// What was promised, with the figures.
    pub text: String,
}

impl Verdict {
    /// `passed` with `text`.
    #[must_use]
    pub fn new(passed: bool, text: String) -> Self {
        Self { passed, text }
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

/// The header of [`table_row`] (under 100 columns).
#[must_use]
pub fn table_header() -> String {
    format!(
        "{:<11} {:>8} {:>5} {:>7} {:>7} {:>5} {:>5} {:>5} {:>6} {:>11} {:>7}",
        "phase",
        "requests",
        "keys",
        "handler",
        "replays",
        "409",
        "422",
        "other",
        "ledger",
        "moved ¢",
        "p99 ms"
    )
}

/// One phase under [`table_header`]; `handler` is the handler's runs, `ledger` the payments
/// recorded after the phase.
#[must_use]
pub fn table_row(r: &PhaseRow) -> String {
    format!(
        "{:<11} {:>8} {:>5} {:>7} {:>7} {:>5} {:>5} {:>5} {:>6} {:>11} {:>7}",
        r.name,
        r.requests,
        r.keys,
        r.ran,
        r.replays,
        r.conflicts,
        r.mismatches,
        r.other,
        r.ledger,
        r.moved,
        ms(r.latency.p99)
    )
}

/// Prints the table (the phases and their total), any failure samples, then the verdicts.
pub fn print_report(rows: &[PhaseRow], verdicts: &[Verdict], samples: &[String]) {
    println!("\n{}", table_header());
    for row in rows {
        println!("{}", table_row(row));
    }
    println!("{}", table_row(&PhaseRow::total(rows)));
    if !samples.is_empty() {
        println!();
        for sample in samples {
            println!("  {sample}");
        }
    }
    println!();
    for verdict in verdicts {
        let word = if verdict.passed { "PASS" } else { "FAIL" };
        println!("{word}  {}", verdict.text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_fits_in_100_columns() {
        let row = PhaseRow {
            name: "reused keys",
            requests: 99_999_999,
            keys: 99_999,
            ran: 9_999_999,
            replays: 9_999_999,
            conflicts: 99_999,
            mismatches: 99_999,
            other: 99_999,
            ledger: 999_999,
            moved: 99_999_999_999,
            latency: Percentiles {
                p50: Duration::ZERO,
                p99: Duration::from_millis(99_999),
                max: Duration::ZERO,
            },
            ..PhaseRow::default()
        };
        assert!(table_header().chars().count() <= 100);
        assert!(
            table_row(&row).chars().count() <= 100,
            "{}",
            table_row(&row)
        );
    }
}
