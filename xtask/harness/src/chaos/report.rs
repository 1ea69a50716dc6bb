//! One row per scenario × backend, and the table `chaos` ends with.

use super::resource::Counts;

/// What one scenario on one backend came to.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// It ran: the resource's counters, the measured latencies, and any violations.
    Ran(Measured),
    /// It does not apply to this backend, and why.
    NotApplicable(String),
    /// Not built yet.
    NotBuilt,
}

/// The figures of a scenario that ran.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// The resource's counters over every round.
    pub counts: Counts,
    /// Faults injected (pauses, kills, partitions, early expiries, restarts, delays).
    pub faults: u64,
    /// What the latency column measures (e.g. `SIGCONT→lost`).
    pub latency_label: &'static str,
    /// The latency samples, in ms (signed: a margin may be negative).
    pub latencies: Vec<f64>,
    /// Broken promises, one line each; empty means PASS.
    pub violations: Vec<String>,
    /// Facts worth a line that are not violations.
    pub notes: Vec<String>,
}

impl Measured {
    /// Records a violation and prints it at once.
    pub fn violation(&mut self, text: String) {
        eprintln!("    VIOLATION: {text}");
        self.violations.push(text);
    }
}

/// One table row.
#[derive(Clone, Debug)]
pub struct Row {
    /// The scenario's number in the catalogue (issue 15).
    pub scenario: u32,
    /// Its short name.
    pub name: &'static str,
    /// The backend's name.
    pub backend: &'static str,
    /// What happened.
    pub outcome: Outcome,
}

impl Row {
    /// True when the row ran and found a violation.
    #[must_use]
    pub fn failed(&self) -> bool {
        matches!(&self.outcome, Outcome::Ran(m) if !m.violations.is_empty())
    }
}

/// The p50 and p99 of `samples` (nearest rank), `None` when empty.
#[must_use]
pub fn p50_p99(samples: &[f64]) -> Option<(f64, f64)> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    Some((at(0.5), at(0.99)))
}

/// `ms` rounded to whole ms, without a "-0".
fn whole_ms(ms: f64) -> String {
    let rounded = ms.round();
    format!("{}", if rounded == 0.0 { 0.0 } else { rounded })
}

/// The table, as text: `ops` are critical sections run, `refused` the writes the fence
/// refused, `stale acc` the stale writes the resource accepted (must be 0), `overlaps` the
/// sections that found another open (expected under faults: the fence is what stops them).
#[must_use]
pub fn table(rows: &[Row]) -> String {
    let header = [
        "#",
        "scenario",
        "backend",
        "ops",
        "faults",
        "refused",
        "stale acc",
        "overlaps",
        "measure",
        "p50 ms",
        "p99 ms",
        "verdict",
    ];
    let mut lines: Vec<Vec<String>> = vec![header.iter().map(|s| (*s).to_owned()).collect()];
    let mut details = Vec::new();
    for row in rows {
        let mut cells = vec![
            row.scenario.to_string(),
            row.name.to_owned(),
            row.backend.to_owned(),
        ];
        match &row.outcome {
            Outcome::Ran(m) => {
                let (p50, p99) = p50_p99(&m.latencies)
                    .map_or(("-".into(), "-".into()), |(a, b)| {
                        (whole_ms(a), whole_ms(b))
                    });
                cells.extend([
                    m.counts.sections.to_string(),
                    m.faults.to_string(),
                    m.counts.refused.to_string(),
                    m.counts.stale.to_string(),
                    m.counts.overlaps.to_string(),
                    m.latency_label.to_owned(),
                    p50,
                    p99,
                    if m.violations.is_empty() {
                        "PASS".to_owned()
                    } else {
                        format!("FAIL ({})", m.violations.len())
                    },
                ]);
                for v in &m.violations {
                    details.push(format!("  {} {}: FAIL: {v}", row.scenario, row.backend));
                }
                // The same note from several rounds is one line with a count.
                let mut notes: Vec<(&String, usize)> = Vec::new();
                for n in &m.notes {
                    match notes.iter_mut().find(|(seen, _)| *seen == n) {
                        Some((_, count)) => *count += 1,
                        None => notes.push((n, 1)),
                    }
                }
                for (n, count) in notes {
                    let times = if count > 1 {
                        format!(" (×{count})")
                    } else {
                        String::new()
                    };
                    details.push(format!("  {} {}: {n}{times}", row.scenario, row.backend));
                }
            }
            Outcome::NotApplicable(why) => {
                cells.extend(["-", "-", "-", "-", "-", "-", "-", "-"].map(String::from));
                cells.push(format!("n/a: {why}"));
            }
            Outcome::NotBuilt => {
                cells.extend(["-", "-", "-", "-", "-", "-", "-", "-"].map(String::from));
                cells.push("not built".to_owned());
            }
        }
        lines.push(cells);
    }
    let columns = header.len();
    let widths: Vec<usize> = (0..columns - 1)
        .map(|c| {
            lines
                .iter()
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for line in &lines {
        for (c, cell) in line.iter().enumerate() {
            if c + 1 == columns {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        out.push('\n');
    }
    if !details.is_empty() {
        out.push_str("\nnotes:\n");
        for d in details {
            out.push_str(&d);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        assert_eq!(p50_p99(&[]), None);
        assert_eq!(p50_p99(&[3.0, 1.0, 2.0]), Some((2.0, 3.0)));
    }

    #[test]
    fn the_table_shows_verdicts_reasons_and_violations() {
        let failed = Measured {
            counts: Counts {
                sections: 10,
                stale: 1,
                ..Counts::default()
            },
            faults: 1,
            latency_label: "SIGCONT→lost",
            latencies: vec![-0.2],
            violations: vec!["the resource accepted 1 stale write(s)".into()],
            notes: Vec::new(),
        };
        let rows = [
            Row {
                scenario: 1,
                name: "holder paused",
                backend: "redis",
                outcome: Outcome::Ran(failed),
            },
            Row {
                scenario: 6,
                name: "redis restarted",
                backend: "etcd",
                outcome: Outcome::NotApplicable("only Redis".into()),
            },
        ];
        assert!(rows[0].failed() && !rows[1].failed());
        let text = table(&rows);
        assert!(text.contains("FAIL (1)"), "{text}");
        assert!(text.contains("n/a: only Redis"), "{text}");
        assert!(
            text.contains("1 redis: FAIL: the resource accepted"),
            "{text}"
        );
        assert!(!text.contains("-0 "), "no negative zero: {text}");
    }
}
