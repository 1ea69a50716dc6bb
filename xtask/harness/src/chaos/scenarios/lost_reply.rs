//! Scenario 9, acquire applied but its reply lost: A reaches the server through a
//! [`FaultProxy`]. Just before A's `try_acquire`, the proxy stalls replies; once the request
//! has had time to reach the server (and be applied), the held reply is dropped and A's
//! connection reset. A's client then retries or gives up; either way what it did on the server
//! must be settled. Promises, with A still alive and connected (so a leftover bound to its
//! session would stay): the key is free again within TTL + 1 s of A's answer (another
//! process, B, gets it), and afterwards the server holds no entry for it (no orphan, no
//! duplicate queue entry from a retry). `--unsafe-long-lease` has A abandon a grant it gets,
//! with a 10× lease: the check must catch it.

use std::time::Duration;

use tokio::time::sleep;

use super::{ms, ms_between, rounds, Chaos, START};
use crate::chaos::report::Measured;
use crate::chaos::target::Target;
use crate::shared::proxy::{Direction, Fault};

/// How long the request has to reach the server before its reply is dropped.
const APPLY: Duration = Duration::from_millis(200);

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    rounds(
        cx,
        9,
        target,
        "answer→next grant",
        async |cx, key, _resource, m| {
            let ttl = cx.ttl();
            let proxy = target.proxy().await?;
            let stay = ttl * 2 + Duration::from_secs(4);
            let mut extra = vec![
                "--acquire-only".to_owned(),
                "--start-delay-ms".to_owned(),
                "300".to_owned(),
                "--stay-ms".to_owned(),
                ms(stay),
            ];
            if cx.settings.unsafe_long_lease {
                extra.extend(["--abandon".to_owned(), "--ttl-ms".to_owned(), ms(ttl * 10)]);
            }
            let via = target.via(proxy.addr());
            let mut a = cx.worker("A", target.kind, &via, key, true, &extra)?;
            a.wait_for("ready", START).await?;
            proxy.set(Direction::ToClient, Fault::Stall);
            a.wait_for("acquiring", START).await?;
            sleep(APPLY).await;
            proxy.set(Direction::ToClient, Fault::LoseNextAndReset);
            let answer = a.wait_for("acquire-result", START).await;
            // Whatever happened, nothing stays stalled.
            proxy.set(Direction::Both, Fault::Pass);
            let answer = answer?;
            m.faults += proxy.resets();
            eprintln!(
                "    {} reset(s); A's answer: {}",
                proxy.resets(),
                answer.fields
            );
            m.notes.push(format!(
                "A's answer: {}",
                answer.fields.split_whitespace().next().unwrap_or("?")
            ));
            if proxy.resets() == 0 {
                m.violation("the reply was never lost (no reset)".into());
            }
            let settled = a
                .wait_for("released", START)
                .await
                .map_or(answer.at, |e| e.at);
            let mut b = cx.direct(
                "B",
                target,
                key,
                false,
                &[
                    "--hold-ms".into(),
                    "100".into(),
                    "--give-up-ms".into(),
                    ms(ttl * 12),
                ],
            )?;
            let bound = ttl + Duration::from_secs(1);
            let taken = b.wait_for("acquired", ttl * 12 + START).await?;
            let gap = ms_between(settled, taken.at);
            m.latencies.push(gap);
            eprintln!("    B got the key {gap:.0} ms after A was done with it");
            if gap > bound.as_secs_f64() * 1000.0 {
                m.violation(format!(
                    "the key stayed taken {gap:.0} ms after A's answer (lease {ttl:?})"
                ));
            }
            b.wait_for("done", START).await?;
            b.finish(START).await?;
            if a.seen("exit").is_some() {
                m.notes.push("A exited before the check".into());
            }
            target.expect_no_entries(key, m).await?;
            a.finish(stay + START).await?;
            Ok(())
        },
    )
    .await
}
