//! Scenario 6, Redis killed and restarted without persistence: A holds the lock on the run's own
//! redis-server (no RDB, no AOF); B polls for the key; the server is killed (SIGKILL) and
//! started again, empty. Promises: A's `lost()` fires (reported: restart → `lost()`); B gets
//! the key with a fencing token larger than A's (tokens never go backwards, though the
//! counter itself is gone); no stale write of A gets in.

use std::time::Duration;

use super::{check_fences, fence_of, holder_and_waiter, ms_between, rounds, Chaos, START};
use crate::chaos::report::Measured;
use crate::chaos::target::Target;
use crate::chaos::worker::wall_us;

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    rounds(
        cx,
        6,
        target,
        "restart→lost",
        async |cx, key, _resource, m| {
            let ttl = cx.ttl();
            let hold = ttl + Duration::from_millis(1500);
            let (mut a, a_fence, mut b) =
                holder_and_waiter(cx, target, &target.url, key, hold).await?;
            tokio::task::block_in_place(|| {
                let mut server = cx.redis.lock().unwrap_or_else(|e| e.into_inner());
                server.kill();
                server.spawn();
            });
            let restarted = wall_us();
            m.faults += 1;
            let lost = a.wait_for("lost", ttl * 2).await?;
            let latency = ms_between(restarted, lost.at);
            m.latencies.push(latency);
            let taken = b.wait_for("acquired", START).await?;
            eprintln!(
            "    lost() {latency:.0} ms after the restart ({}); B got the key {:.0} ms after it",
            lost.fields,
            ms_between(restarted, taken.at)
        );
            check_fences(m, a_fence, fence_of(&taken)?);
            a.wait_for("done", START).await?;
            b.wait_for("done", START + ttl * 2).await?;
            a.finish(START).await?;
            b.finish(START).await?;
            Ok(())
        },
    )
    .await
}
