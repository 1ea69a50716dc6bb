//! Scenario 7, client killed while holding: A holds and writes; B polls for the key; A is killed
//! (SIGKILL: no release, no goodbye). Promise: the key is free again within the lease
//! (ZooKeeper: within the session timeout, which the workers set to the lease), so B gets it
//! within TTL + 1 s of the kill; the availability gap (kill → B's grant) is reported.
//! `--unsafe-long-lease` has A take a 10× lease, to show the check catches a lock that
//! outlives the lease the run expects.

use std::time::Duration;

use tokio::time::sleep;

use super::{
    check_fences, fence_of, hold_then_give_up, ms, next_grant_within_lease, rounds, Chaos, START,
};
use crate::chaos::report::Measured;
use crate::chaos::target::Target;
use crate::chaos::worker::wall_us;

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    rounds(
        cx,
        7,
        target,
        "kill→next grant",
        async |cx, key, resource, m| {
            let ttl = cx.ttl();
            let a_ttl = if cx.settings.unsafe_long_lease {
                ttl * 10
            } else {
                ttl
            };
            let mut a = cx.direct("A", target, key, true, &["--ttl-ms".into(), ms(a_ttl)])?;
            let a_fence = fence_of(&a.wait_for("acquired", START).await?)?;
            sleep(ttl / 6).await;
            let waits = hold_then_give_up(Duration::from_millis(300), a_ttl + START);
            let mut b = cx.direct("B", target, key, false, &waits)?;
            b.wait_for("ready", START).await?;
            a.signal("KILL")?;
            let killed = wall_us();
            m.faults += 1;
            a.finish(START).await?;
            // A section the killed process had open never closes; the resource forgets it.
            resource.forget_open_sections().await?;
            let taken = next_grant_within_lease(
                cx,
                m,
                &mut b,
                killed,
                a_ttl + START,
                |gap| format!("the key was free again {gap:.0} ms after the kill"),
                |gap| {
                    format!(
                        "the key was held {gap:.0} ms after its holder was killed (lease {ttl:?})"
                    )
                },
            )
            .await?;
            check_fences(m, a_fence, fence_of(&taken)?);
            b.wait_for("done", START).await?;
            b.finish(START).await?;
            Ok(())
        },
    )
    .await
}
