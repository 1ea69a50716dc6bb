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

use super::{answer_rounds, hold_then_give_up, ms, next_grant_within_lease, Chaos, START};
use crate::chaos::report::Measured;
use crate::chaos::target::Target;
use crate::shared::proxy::{Direction, Fault};

/// How long the request has to reach the server before its reply is dropped.
const APPLY: Duration = Duration::from_millis(200);

/// How long A stays, connected, after its answer (so a leftover bound to its session would
/// stay too).
fn stay(ttl: Duration) -> Duration {
    ttl * 2 + Duration::from_secs(4)
}

/// A's flags: it stays; with `--unsafe-long-lease` it abandons a grant it gets, with a 10×
/// lease.
fn flags(cx: &Chaos) -> Vec<String> {
    let ttl = cx.ttl();
    let mut extra = vec!["--stay-ms".to_owned(), ms(stay(ttl))];
    if cx.settings.unsafe_long_lease {
        extra.extend(["--abandon".to_owned(), "--ttl-ms".to_owned(), ms(ttl * 10)]);
    }
    extra
}

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    answer_rounds(cx, 9, target, flags, async |cx, key, proxy, mut a, m| {
        let ttl = cx.ttl();
        let stay = stay(ttl);
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
        let waits = hold_then_give_up(Duration::from_millis(100), ttl * 12);
        let mut b = cx.direct("B", target, key, false, &waits)?;
        next_grant_within_lease(
            cx,
            m,
            &mut b,
            settled,
            ttl * 12 + START,
            |gap| format!("B got the key {gap:.0} ms after A was done with it"),
            |gap| format!("the key stayed taken {gap:.0} ms after A's answer (lease {ttl:?})"),
        )
        .await?;
        b.wait_for("done", START).await?;
        b.finish(START).await?;
        if a.seen("exit").is_some() {
            m.notes.push("A exited before the check".into());
        }
        target.expect_no_entries(key, m).await?;
        a.finish(stay + START).await?;
        Ok(())
    })
    .await
}
