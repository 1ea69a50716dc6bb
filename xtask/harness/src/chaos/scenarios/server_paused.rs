//! Scenario 2, lock server paused past the lease (RedLock: a majority of its nodes): A holds and writes; B polls for the key; every
//! process of the lock server is stopped (SIGSTOP) for 2 × TTL, then continued. The server
//! answers nothing meanwhile, so A's renewals cannot succeed. Promises: A's `lost()` fires by
//! its local deadline (at most one TTL after the pause began: its last confirmed renewal was
//! sent before it); A writes nothing after its `lost()` (its last write began before it); B
//! gets the key only after A's `lost()`, with a larger fencing token; B's release frees its
//! hold (A's, whichever its answer, did not); no stale write gets in. A's own release may be
//! what frees the key: its delete, sent during the pause, can reach the server before the
//! server's own expiry runs (seen on etcd).

use std::time::Duration;

use example_support::backend::BackendKind;
use tokio::time::sleep;

use super::{
    check_fences, check_no_write_after_lost, check_release, fence_of, holder_and_waiter,
    ms_between, rounds, Chaos, START,
};
use crate::chaos::report::Measured;
use crate::chaos::server_process::ServerProcesses;
use crate::chaos::target::Target;
use crate::chaos::worker::wall_us;

/// Scheduling slack on top of the lease for `lost()` (the coordinator's clock reading and the
/// worker's event are separate steps).
const SLACK_MS: f64 = 250.0;

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    rounds(
        cx,
        2,
        target,
        "pause→lost",
        async |cx, key, _resource, m| {
            let ttl = cx.ttl();
            let pause = ttl * 2;
            let hold = pause + Duration::from_secs(3);
            let (mut a, a_fence, mut b) =
                holder_and_waiter(cx, target, &target.url, key, hold).await?;
            let server = server_processes(cx, target.kind)?;
            server.pause()?;
            let paused = wall_us();
            m.faults += 1;
            let lost = a.wait_for("lost", pause).await;
            let elapsed = Duration::from_micros(wall_us().saturating_sub(paused));
            sleep(pause.saturating_sub(elapsed)).await;
            server.resume()?;
            let resumed = wall_us();
            let lost = lost?;
            let latency = ms_between(paused, lost.at);
            m.latencies.push(latency);
            eprintln!(
                "    {} process(es) paused; lost() {latency:.0} ms into the pause ({}); resumed after {:.0} ms",
                server.len(),
                lost.fields,
                ms_between(paused, resumed)
            );
            let bound = ttl.as_secs_f64() * 1000.0 + SLACK_MS;
            if latency > bound {
                m.violation(format!(
                    "lost() came {latency:.0} ms after the server stopped answering (lease {ttl:?})"
                ));
            }
            check_no_write_after_lost(m, &mut a, &lost, START + ttl * 3).await?;
            let taken = b.wait_for("acquired", START + ttl * 2).await?;
            let margin = ms_between(lost.at, taken.at);
            eprintln!("    B got the key {margin:.0} ms after A's lost()");
            if margin <= 0.0 {
                m.violation(format!("B got the key {:.0} ms before A's lost()", -margin));
            }
            check_fences(m, a_fence, fence_of(&taken)?);
            // The server never ran while A's lease ran out: A's own delete, sent during the pause,
            // may be what frees the key when the server runs again (etcd applies it before its
            // lease sweep). Either answer of A's is right; what must hold is that A's release
            // did not free B's hold.
            let a_released = a.wait_for("released", START).await?;
            m.notes.push(format!("A's release: {}", a_released.fields));
            check_release(
                m,
                "the next holder",
                &b.wait_for("released", START + ttl * 3).await?,
                true,
            );
            a.finish(START).await?;
            b.finish(START).await?;
            Ok(())
        },
    )
    .await
}

/// The lock server's processes: the run's own redis-server, or the stack's server.
fn server_processes(cx: &Chaos, kind: BackendKind) -> Result<ServerProcesses, String> {
    // RedLock: a majority of its nodes (2 of 3), which is the lock server as far as a
    // holder's renewals go.
    if kind == BackendKind::Redlock {
        let nodes = cx.redlock.lock().unwrap_or_else(|e| e.into_inner());
        let pids: Vec<u32> = nodes
            .iter()
            .take(nodes.len() / 2 + 1)
            .map(|node| node.pid().ok_or("a RedLock node is not running"))
            .collect::<Result<_, _>>()?;
        return Ok(ServerProcesses::from_roots(&pids));
    }
    if kind == BackendKind::Redis {
        let server = cx.redis.lock().unwrap_or_else(|e| e.into_inner());
        let pid = server
            .pid()
            .ok_or("the run's redis-server is not running")?;
        return Ok(ServerProcesses::from_root(pid));
    }
    // A Redis Cluster or the Sentinel set: every process of it (the sentinels too, or they
    // would fail the primary over while it is paused: scenario 19 is the failover).
    match kind {
        BackendKind::RedisCluster => ServerProcesses::of_stack_servers(&[
            "redis-cluster-1",
            "redis-cluster-2",
            "redis-cluster-3",
            "redis-cluster-4",
            "redis-cluster-5",
            "redis-cluster-6",
        ]),
        BackendKind::RedisSentinel => ServerProcesses::of_stack_servers(&[
            "redis-sentinel-primary",
            "redis-sentinel-replica-1",
            "redis-sentinel-replica-2",
            "redis-sentinel-1",
            "redis-sentinel-2",
            "redis-sentinel-3",
        ]),
        _ => ServerProcesses::of_stack_server(kind),
    }
}
