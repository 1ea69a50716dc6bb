//! Scenario 5, client↔server partition longer than the lease: A reaches the server through a
//! [`FaultProxy`]; B connects straight. The proxy blackholes (even rounds) or stalls (odd
//! rounds) both directions for 2 × TTL + 0.5 s, then heals. Promises: A's `lost()` fires
//! before the server hands the key to B (margin = B's grant − A's `lost()`, must be > 0);
//! after healing, A's release frees nothing (`false`: no double release) and B's release
//! does; no stale write gets in.

use std::time::Duration;

use tokio::time::sleep;

use super::{
    check_fences, check_handover_releases, fence_of, holder_and_waiter, ms_between, rounds, Chaos,
    START,
};
use crate::chaos::report::Measured;
use crate::chaos::target::Target;
use crate::chaos::worker::wall_us;
use crate::shared::proxy::{Direction, Fault};

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    let mut round = 0;
    rounds(cx, 5, target, "margin", async |cx, key, _resource, m| {
        let fault = if round % 2 == 0 {
            Fault::Blackhole
        } else {
            Fault::Stall
        };
        round += 1;
        let ttl = cx.ttl();
        let proxy = target.proxy().await?;
        let via = target.via(proxy.addr());
        let partition = ttl * 2 + Duration::from_millis(500);
        let hold = partition + Duration::from_secs(3);
        let (mut a, a_fence, mut b) = holder_and_waiter(cx, target, &via, key, hold).await?;
        proxy.set(Direction::Both, fault);
        let cut = wall_us();
        m.faults += 1;
        let lost = a.wait_for("lost", partition).await;
        let taken = b.wait_for("acquired", partition).await;
        let elapsed = Duration::from_micros(wall_us().saturating_sub(cut));
        sleep(partition.saturating_sub(elapsed)).await;
        proxy.set(Direction::Both, Fault::Pass);
        let (lost, taken) = (lost?, taken?);
        let margin = ms_between(lost.at, taken.at);
        m.latencies.push(margin);
        eprintln!(
            "    {fault:?}: lost() {:.0} ms into the partition ({}), B got the key {margin:.0} ms later",
            ms_between(cut, lost.at),
            lost.fields
        );
        if margin <= 0.0 {
            m.violation(format!(
                "B got the key {:.0} ms before A's lost() fired ({fault:?})",
                -margin
            ));
        }
        check_fences(m, a_fence, fence_of(&taken)?);
        check_handover_releases(m, a, "the partitioned holder", b, START + partition).await
    })
    .await
}
