//! Scenario 18, RedLock's nodes faulted (3 nodes of the run's own): A holds and writes; B
//! polls for the key.
//!
//! 1. **A minority paused past the lease**: node 1 is stopped (SIGSTOP) for 2 × TTL, then
//!    continued. Promises: A keeps the lock throughout (its renewals reach the other two), so
//!    A's `lost()` does not fire and B does not get the key.
//! 2. **A node of A's restarted without persistence**: node 2 (one of the two A still holds,
//!    node 1's copy having expired during its pause) is killed and started empty. Promises:
//!    A's `lost()` fires within a TTL (a majority can no longer confirm its lease); B gets the
//!    key with a larger fencing token (the restarted node's counter is seeded from its clock);
//!    no stale write gets in. B may get the key *before* A's `lost()`: a node that forgets its
//!    keys lets a second majority form, the limit RedLock's own docs name ("delayed
//!    restarts"); the fencing token is what keeps A's late writes out, and the resource's
//!    counters check it did.

use std::time::Duration;

use tokio::time::sleep;

use super::{check_fences, check_no_write_after_lost, fence_of, holder_and_waiter, ms_between};
use super::{rounds, Chaos, START};
use crate::chaos::report::Measured;
use crate::chaos::server_process::ServerProcesses;
use crate::chaos::target::Target;
use crate::chaos::worker::wall_us;

/// Scheduling slack on top of the lease for `lost()`.
const SLACK_MS: f64 = 250.0;

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    rounds(
        cx,
        18,
        target,
        "restart→lost",
        async |cx, key, _resource, m| {
            let ttl = cx.ttl();
            let (mut a, a_fence, mut b) =
                holder_and_waiter(cx, target, &target.url, key, Duration::from_millis(300))
                    .await?;

            // 1. A minority paused past the lease.
            let paused = node_processes(cx, 0)?;
            paused.pause()?;
            m.faults += 1;
            sleep(ttl * 2).await;
            paused.resume()?;
            if let Some(lost) = a.seen("lost") {
                m.violation(format!(
                    "A lost the lock ({}) while only one node of three was paused",
                    lost.fields
                ));
            }
            if b.seen("acquired").is_some() {
                m.violation("B got the key while A held a majority".to_owned());
            }
            eprintln!("    one node paused for {ttl:?} × 2: A kept the lock, B waited");

            // 2. A node A holds restarted without persistence.
            restart_node(cx, 1);
            let restarted = wall_us();
            m.faults += 1;
            let lost = a.wait_for("lost", ttl + START).await?;
            let latency = ms_between(restarted, lost.at);
            m.latencies.push(latency);
            let bound = ttl.as_secs_f64() * 1000.0 + SLACK_MS;
            if latency > bound {
                m.violation(format!(
                    "lost() came {latency:.0} ms after a node of A's majority restarted empty (lease {ttl:?})"
                ));
            }
            check_no_write_after_lost(m, &mut a, &lost, START + ttl * 3).await?;
            let taken = b.wait_for("acquired", START + ttl * 2).await?;
            eprintln!(
                "    node restarted empty: A's lost() after {latency:.0} ms; B got the key {:.0} ms after the restart",
                ms_between(restarted, taken.at)
            );
            check_fences(m, a_fence, fence_of(&taken)?);
            a.wait_for("released", START).await?;
            b.wait_for("released", START).await?;
            a.finish(START).await?;
            b.finish(START).await?;
            Ok(())
        },
    )
    .await
}

/// The processes of RedLock node `index`.
fn node_processes(cx: &Chaos, index: usize) -> Result<ServerProcesses, String> {
    let nodes = cx.redlock.lock().unwrap_or_else(|e| e.into_inner());
    let pid = nodes
        .get(index)
        .and_then(|node| node.pid())
        .ok_or("the RedLock node is not running")?;
    Ok(ServerProcesses::from_root(pid))
}

/// Kills RedLock node `index` (SIGKILL) and starts it again, empty, on its port.
fn restart_node(cx: &Chaos, index: usize) {
    let mut nodes = cx.redlock.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(node) = nodes.get_mut(index) {
        node.kill();
        node.spawn();
    }
}
