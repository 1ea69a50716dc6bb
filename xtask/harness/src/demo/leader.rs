//! `cargo xtask demo leader`: a scheduled job on a service run as several instances, one run
//! per slot (`example_support::shop::report`, `LockClient::run_once`).
//!
//! Starts N instances of `flash-sale-axum` on one Redis with a stock report every period,
//! reads the line each run prints, kills the instance that ran a slot halfway through (right
//! after its line, as a deploy would), and checks every slot from the first to the last
//! report: exactly one run each, fencing tokens increasing slot after slot, and runs after
//! the kill only on the instances still alive. Prints PASS or FAIL.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::demo::process::launch;

/// What one demo run is.
pub struct LeaderDemo<'a> {
    /// The app binary (`flash-sale-axum`).
    pub app: &'a Path,
    /// The Redis the instances share.
    pub redis_url: String,
    /// How many instances.
    pub instances: usize,
    /// The report's period.
    pub every: Duration,
    /// How many periods to watch.
    pub slots: u32,
}

/// One report line: `stock report: slot=S instance=I fence=F available=A`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// The slot.
    pub slot: u64,
    /// The instance that ran it.
    pub instance: String,
    /// The run's fencing token.
    pub fence: u64,
}

impl Run {
    /// Parses a report line; `None` for any other line.
    #[must_use]
    pub fn parse(line: &str) -> Option<Self> {
        let rest = line.strip_prefix("stock report: ")?;
        let field = |name: &str| {
            rest.split(' ')
                .find_map(|part| part.strip_prefix(name)?.strip_prefix('='))
        };
        Some(Self {
            slot: field("slot")?.parse().ok()?,
            instance: field("instance")?.to_owned(),
            fence: field("fence")?.parse().ok()?,
        })
    }
}

/// What the runs came to.
#[derive(Debug)]
pub struct Verdict {
    /// Each slot from the first report to the last, with the instances that ran it.
    pub slots: BTreeMap<u64, Vec<Run>>,
    /// Slots with no run or more than one.
    pub bad_slots: Vec<u64>,
    /// Whether the fencing tokens grew slot after slot.
    pub fences_increase: bool,
    /// Runs of the killed instance after it was killed.
    pub runs_after_kill: usize,
}

impl Verdict {
    /// Checks `runs`; `killed` is the instance killed and the last slot it ran.
    #[must_use]
    pub fn of(runs: &[Run], killed: Option<(&str, u64)>) -> Self {
        let mut slots: BTreeMap<u64, Vec<Run>> = BTreeMap::new();
        for run in runs {
            slots.entry(run.slot).or_default().push(run.clone());
        }
        if let (Some(&first), Some(&last)) = (slots.keys().next(), slots.keys().last()) {
            for slot in first..=last {
                slots.entry(slot).or_default();
            }
        }
        let bad_slots = slots
            .iter()
            .filter(|(_, runs)| runs.len() != 1)
            .map(|(slot, _)| *slot)
            .collect();
        let fences: Vec<u64> = slots.values().flatten().map(|run| run.fence).collect();
        let fences_increase = fences.windows(2).all(|pair| pair[0] < pair[1]);
        let runs_after_kill = killed.map_or(0, |(instance, at)| {
            runs.iter()
                .filter(|run| run.instance == instance && run.slot > at)
                .count()
        });
        Self {
            slots,
            bad_slots,
            fences_increase,
            runs_after_kill,
        }
    }

    /// PASS: one run per slot, fences increasing, nothing from the killed instance after.
    #[must_use]
    pub fn passed(&self) -> bool {
        !self.slots.is_empty()
            && self.bad_slots.is_empty()
            && self.fences_increase
            && self.runs_after_kill == 0
    }
}

impl LeaderDemo<'_> {
    /// Runs the demo, printing each run and the verdict.
    ///
    /// # Errors
    /// When an instance cannot be started.
    pub async fn run(&self) -> Result<Verdict, String> {
        let namespace = format!("leader-demo-{}", std::process::id());
        let (sender, mut lines) = mpsc::unbounded_channel::<Run>();
        let mut children = Vec::new();
        for i in 0..self.instances {
            let name = instance_name(i);
            let args: Vec<String> = [
                "--backend",
                "redis",
                "--redis-url",
                &self.redis_url,
                "--namespace",
                &namespace,
                "--report-every-ms",
                &self.every.as_millis().to_string(),
                "--instance",
                &name,
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
            let mut app = launch(self.app, &args).await?;
            let sender = sender.clone();
            tokio::spawn(async move {
                while let Ok(Some(line)) = app.lines.next_line().await {
                    // The receiver goes when the watch ends; the lines after it are not needed.
                    if let Some(run) = Run::parse(&line) {
                        if sender.send(run).is_err() {
                            return;
                        }
                    }
                }
            });
            children.push((name, app.child));
        }
        drop(sender);
        println!(
            "{} instances of {} on Redis, a stock report every {} ms, watched for {} slots",
            self.instances,
            self.app
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            self.every.as_millis(),
            self.slots
        );
        println!("  {:>14}  {:<9} {:>18}", "slot", "instance", "fence");
        let end = Instant::now() + self.every * self.slots;
        let mut runs = Vec::new();
        let mut killed: Option<(String, u64)> = None;
        while let Ok(Some(run)) = tokio::time::timeout_at(end, lines.recv()).await {
            println!("  {:>14}  {:<9} {:>18}", run.slot, run.instance, run.fence);
            runs.push(run.clone());
            // Halfway: the instance that just ran its slot goes away, right after its run.
            if killed.is_none() && runs.len() as u32 >= self.slots / 2 {
                if let Some((_, child)) = children.iter_mut().find(|(n, _)| *n == run.instance) {
                    if let Err(error) = child.kill().await {
                        return Err(format!("cannot kill instance {}: {error}", run.instance));
                    }
                    println!("  instance {} killed after slot {}", run.instance, run.slot);
                    killed = Some((run.instance.clone(), run.slot));
                }
            }
        }
        // The rest stop with the demo (killed on drop, or already gone).
        drop(children);
        let verdict = Verdict::of(
            &runs,
            killed.as_ref().map(|(name, slot)| (name.as_str(), *slot)),
        );
        let mut by_instance: BTreeMap<&str, usize> = BTreeMap::new();
        for run in &runs {
            *by_instance.entry(run.instance.as_str()).or_default() += 1;
        }
        println!(
            "slots {}: {} with exactly one run, {} without or with more (slots {:?}); fences {}; runs by instance {:?}; runs of the killed instance after its kill: {}",
            verdict.slots.len(),
            verdict.slots.len() - verdict.bad_slots.len(),
            verdict.bad_slots.len(),
            verdict.bad_slots,
            if verdict.fences_increase { "increasing" } else { "NOT increasing" },
            by_instance,
            verdict.runs_after_kill
        );
        println!("{}", if verdict.passed() { "PASS" } else { "FAIL" });
        Ok(verdict)
    }
}

fn instance_name(i: usize) -> String {
    let letters = ["a", "b", "c", "d", "e", "f", "g", "h"];
    letters
        .get(i)
        .map_or_else(|| format!("i{i}"), |l| (*l).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(slot: u64, instance: &str, fence: u64) -> Run {
        Run {
            slot,
            instance: instance.to_owned(),
            fence,
        }
    }

    #[test]
    fn parses_report_lines() {
        assert_eq!(
            Run::parse("stock report: slot=7 instance=b fence=42 available=3"),
            Some(run(7, "b", 42))
        );
        assert_eq!(Run::parse("listening on http://x"), None);
    }

    #[test]
    fn a_missing_or_doubled_slot_or_a_late_run_fails() {
        let good = [run(1, "a", 10), run(2, "b", 11), run(3, "a", 12)];
        assert!(Verdict::of(&good, Some(("b", 2))).passed());
        let gap = [run(1, "a", 10), run(3, "a", 12)];
        assert_eq!(Verdict::of(&gap, None).bad_slots, vec![2]);
        let twice = [run(1, "a", 10), run(1, "b", 11)];
        assert!(!Verdict::of(&twice, None).passed());
        let backwards = [run(1, "a", 10), run(2, "b", 9)];
        assert!(!Verdict::of(&backwards, None).passed());
        let ghost = [run(1, "a", 10), run(2, "b", 11), run(3, "b", 12)];
        assert!(!Verdict::of(&ghost, Some(("b", 2))).passed());
    }
}
