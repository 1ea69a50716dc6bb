//! Scenario 13, key expired early on the server: A holds and writes every 20 ms; B polls for the key;
//! the lock is ended from outside (Redis `PEXPIRE <lock key> 1`, as a server clock jumping
//! ahead; ZooKeeper and etcd: the lock's node / key deleted). B takes the key at once, while A
//! still believes it holds: A's writes in that window are stale and the fence must refuse
//! them (stale writes accepted = 0). A must learn of the loss at its next renewal (TTL/3) or
//! by push; the detection latency (expiry → A's `lost()`) is reported.

use std::time::Duration;

use super::{
    check_fences, check_handover_releases, fence_of, holder_and_waiter, ms_between, rounds, Chaos,
    START,
};
use crate::chaos::report::Measured;
use crate::chaos::target::Target;
use crate::chaos::worker::wall_us;

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    rounds(
        cx,
        13,
        target,
        "expiry→lost",
        async |cx, key, _resource, m| {
            let ttl = cx.ttl();
            let hold = ttl + Duration::from_millis(1500);
            let (mut a, a_fence, mut b) =
                holder_and_waiter(cx, target, &target.url, key, hold).await?;
            let expired = wall_us();
            let touched = target.expire_early(key).await?;
            if touched == 0 {
                return Err("the lock had no entry to expire".into());
            }
            m.faults += 1;
            let lost = a.wait_for("lost", ttl * 2).await?;
            let latency = ms_between(expired, lost.at);
            m.latencies.push(latency);
            eprintln!(
                "    lost() {latency:.0} ms after the early expiry ({})",
                lost.fields
            );
            // The next renewal is due within TTL/3; allow one slow round trip on top.
            let bound = (ttl / 3).as_secs_f64() * 1000.0 + 500.0;
            if latency > bound {
                m.violation(format!(
                    "the loss was detected {latency:.0} ms after the expiry"
                ));
            }
            let taken = b.wait_for("acquired", START).await?;
            check_fences(m, a_fence, fence_of(&taken)?);
            check_handover_releases(m, a, "the expired holder", b, START + ttl * 2).await
        },
    )
    .await
}
