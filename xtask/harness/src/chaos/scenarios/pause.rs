//! Scenario 1, holder paused past its lease: A holds and writes; B polls for the key; A is stopped
//! (SIGSTOP) for 2 × TTL, during which the server hands the key to B; then A continues
//! (SIGCONT). Promises: A's `lost()` fires as soon as it runs again (measured from SIGCONT),
//! A writes nothing that gets in (stale writes accepted = 0), B's token is larger, A's late
//! release frees nothing and B's release does.

use tokio::time::sleep;

use super::{
    check_fences, check_handover_releases, fence_of, holder_and_waiter, ms_between, rounds, Chaos,
    START,
};
use crate::chaos::report::Measured;
use crate::chaos::target::Target;
use crate::chaos::worker::wall_us;

/// How long after SIGCONT `lost()` may take.
const LOST_BOUND_MS: f64 = 1000.0;

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    rounds(
        cx,
        1,
        target,
        "SIGCONT→lost",
        async |cx, key, _resource, m| {
            let ttl = cx.ttl();
            let hold = ttl * 2 + std::time::Duration::from_millis(2500);
            let (mut a, a_fence, mut b) =
                holder_and_waiter(cx, target, &target.url, key, hold).await?;
            a.signal("STOP")?;
            m.faults += 1;
            sleep(ttl * 2).await;
            let taken = b.seen("acquired");
            a.signal("CONT")?;
            let resumed = wall_us();
            let Some(taken) = taken else {
                m.violation(format!(
                    "nobody got the key while its holder was stopped for {:?}",
                    ttl * 2
                ));
                return Ok(());
            };
            check_fences(m, a_fence, fence_of(&taken)?);
            let lost = a.wait_for("lost", ttl * 3).await?;
            let latency = ms_between(resumed, lost.at);
            m.latencies.push(latency);
            eprintln!("    lost() {latency:.0} ms after SIGCONT ({})", lost.fields);
            if latency > LOST_BOUND_MS {
                m.violation(format!("lost() came {latency:.0} ms after SIGCONT"));
            }
            check_handover_releases(m, a, "the paused holder", b, START + ttl * 3).await
        },
    )
    .await
}
