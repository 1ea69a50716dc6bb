//! Scenario 3, acquire reply delayed past the lease: A reaches the server through a
//! [`FaultProxy`] that holds every reply for TTL + 0.5 s (A's command timeout is raised to
//! 4 × TTL, so the late reply does arrive). Promise: no grant is reported with a non-positive
//! validity: A's `try_acquire` answers `None` or an error, never a guard (a guard already lost
//! counts as such a grant too). Then B, straight to the server, polls for the key: the gap
//! from A's answer to B's grant shows whether a grant A could not use was given back at once
//! or held the key until its lease ran out; and afterwards nothing is left on the server.

use std::time::Duration;

use super::{answer_rounds, ms, ms_between, Chaos, START};
use crate::chaos::report::Measured;
use crate::chaos::target::Target;
use crate::shared::proxy::{Direction, Fault};

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    answer_rounds(
        cx,
        3,
        target,
        |cx| vec!["--response-timeout-ms".to_owned(), ms(cx.ttl() * 4)],
        async |cx, key, proxy, mut a, m| {
            let ttl = cx.ttl();
            proxy.set(
                Direction::ToClient,
                Fault::Delay(ttl + Duration::from_millis(500)),
            );
            m.faults += 1;
            let answer = a.wait_for("acquire-result", ttl * 4 + START).await?;
            proxy.set(Direction::ToClient, Fault::Pass);
            eprintln!("    try_acquire answered: {}", answer.fields);
            if answer.fields.starts_with("granted") {
                m.violation(format!(
                "a grant was reported after its lease had run out: {} (remaining ms, lost, fence)",
                answer.fields
            ));
            } else {
                m.notes.push(format!("A's answer: {}", answer.fields));
            }
            a.wait_for("done", START).await?;
            a.finish(START).await?;
            let mut b = cx.direct("B", target, key, false, &["--hold-ms".into(), "100".into()])?;
            let taken = b.wait_for("acquired", ttl * 2 + START).await?;
            m.latencies.push(ms_between(answer.at, taken.at));
            b.wait_for("done", START).await?;
            b.finish(START).await?;
            target.expect_no_entries(key, m).await?;
            Ok(())
        },
    )
    .await
}
