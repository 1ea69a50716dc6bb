//! Scenario 10, 1,000 waiters on one key (200 with `--short`): a worker queues them, spread over
//! 10 clients, behind a gate holder, then lets them through one by one. It runs twice, with 10
//! waiters and with the crowd, and the server's own request counter (see
//! [`Target::commands`]) is read as the gate opens and once the worker is gone: the requests
//! of the handoffs. Promises: every waiter gets the key, never
//! two at once; the server's requests per handoff with the crowd stay within 3× (+3) of those
//! with 10 waiters (O(1) per handoff: no herd woken on each release); the worker's memory, once
//! the crowd is queued, grows by at most 64 KiB per waiter (the peak while it queued is
//! reported). Reported: the handoff p50/p99 (release → next grant).
//! `--unsafe-poll` (this scenario's switch) has the waiters poll instead of waiting for
//! wake-ups, which the O(1) check must catch.

use std::time::Duration;

use tokio::time::sleep;

use super::{rounds, Chaos, START};
use crate::chaos::report::Measured;
use crate::chaos::target::Target;

/// Clients the waiters are spread over.
const CLIENTS: usize = 10;
/// Memory a waiter may cost the worker, at most.
const KIB_PER_WAITER: u64 = 64;

/// One run's figures.
struct Run {
    waiters: usize,
    sections: usize,
    overlaps: usize,
    errors: usize,
    p50: f64,
    p99: f64,
    /// Once the crowd is queued, over the start.
    rss_growth_kib: u64,
    /// The peak (while the crowd queued), over the start.
    rss_peak_kib: u64,
    commands: u64,
    elapsed_ms: u64,
    handoffs: Vec<f64>,
}

impl Run {
    fn per_handoff(&self) -> f64 {
        self.commands as f64 / self.sections.max(1) as f64
    }
}

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    rounds(
        cx,
        10,
        target,
        "handoff",
        async |cx, key, _resource, m| {
            let crowd = if cx.settings.short { 200 } else { 1000 };
            let small = one_run(cx, target, &format!("{key}-small"), 10).await?;
            let big = one_run(cx, target, key, crowd).await?;
            m.faults += 1;
            m.latencies.extend(&big.handoffs);
            for run in [&small, &big] {
                eprintln!(
                    "    {} waiters: {} sections in {} ms, {} overlaps, {} errors; handoff p50 {:.2} ms p99 {:.2} ms; \
                     {} server requests ({:.1} per handoff); RSS +{} KiB queued, peak +{} KiB",
                    run.waiters,
                    run.sections,
                    run.elapsed_ms,
                    run.overlaps,
                    run.errors,
                    run.p50,
                    run.p99,
                    run.commands,
                    run.per_handoff(),
                    run.rss_growth_kib,
                    run.rss_peak_kib
                );
                if run.sections != run.waiters || run.errors > 0 {
                    m.violation(format!(
                        "{} of {} waiters got the key ({} errors)",
                        run.sections, run.waiters, run.errors
                    ));
                }
                if run.overlaps > 0 {
                    m.violation(format!(
                        "{} sections overlapped among {} waiters",
                        run.overlaps, run.waiters
                    ));
                }
            }
            m.notes.push(format!(
                "server requests per handoff: {:.1} with 10 waiters, {:.1} with {crowd}; handoff p99 {:.1} ms with {crowd}; \
                 worker memory +{} KiB with the crowd queued, peak +{} KiB",
                small.per_handoff(),
                big.per_handoff(),
                big.p99,
                big.rss_growth_kib,
                big.rss_peak_kib
            ));
            if big.per_handoff() > 3.0 * small.per_handoff() + 3.0 {
                m.violation(format!(
                    "the server's requests per handoff grew with the crowd: {:.1} with 10 waiters, {:.1} with {crowd}",
                    small.per_handoff(),
                    big.per_handoff()
                ));
            }
            let budget = KIB_PER_WAITER * crowd as u64;
            if big.rss_growth_kib > budget {
                m.violation(format!(
                    "the worker's memory grew by {} KiB for {crowd} waiters (budget {budget} KiB)",
                    big.rss_growth_kib
                ));
            }
            Ok(())
        },
    )
    .await
}

/// One crowd of `waiters` on `key`, with the server's request counter read around it.
async fn one_run(cx: &Chaos, target: &Target, key: &str, waiters: usize) -> Result<Run, String> {
    // PostgreSQL's statistics reach its counter late (a backend's at its exit at the latest):
    // the count after is read once the worker is gone, and they have settled.
    let settle = Duration::from_millis(1500);
    let mut extra = vec![
        "--waiters".to_owned(),
        waiters.to_string(),
        "--clients".to_owned(),
        CLIENTS.to_string(),
    ];
    if cx.settings.unsafe_poll {
        extra.push("--unsafe-poll".to_owned());
    }
    let mut w = cx.direct("crowd", target, key, false, &extra)?;
    let gate = w.wait_for("gate", START * 2).await?;
    let before: u64 = gate
        .fields
        .parse()
        .map_err(|_| format!("bad gate event {:?}", gate.fields))?;
    let crowd = w.wait_for("crowd", START * 6).await?;
    let handoffs = w.wait_for("handoffs", START).await?;
    for error in w.all("error") {
        eprintln!("    {waiters} waiters: {}", error.fields);
    }
    w.wait_for("done", START).await?;
    w.finish(START).await?;
    sleep(settle).await;
    let after = target.commands().await?;
    let f: Vec<&str> = crowd.fields.split_whitespace().collect();
    let number = |i: usize| -> Result<f64, String> {
        f.get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .ok_or_else(|| format!("bad crowd event {:?}", crowd.fields))
    };
    Ok(Run {
        waiters,
        sections: number(0)? as usize,
        overlaps: number(1)? as usize,
        errors: number(2)? as usize,
        p50: number(3)?,
        p99: number(4)?,
        rss_growth_kib: (number(7)? - number(6)?).max(0.0) as u64,
        rss_peak_kib: (number(8)? - number(6)?).max(0.0) as u64,
        commands: after.saturating_sub(before),
        elapsed_ms: number(9)? as u64,
        handoffs: handoffs
            .fields
            .split(',')
            .filter_map(|h| h.parse().ok())
            .collect(),
    })
}
