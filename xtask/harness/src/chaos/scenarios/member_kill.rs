//! Scenario 12, cluster member or leader killed (ZooKeeper and etcd). Each round starts a
//! fresh 3-member cluster of the backend (`lock_testing::cluster`, data under
//! `target/chaos/cluster-<pid>-<round>`, removed afterwards) and runs the in-process
//! [`Workload`] on it: client A pinned to one follower, two clients given every member, three
//! tasks each. Two faults:
//! 1. once A's victim task holds the lock, A's member is killed: A's lease must be lost, and
//!    the others must get the lock and write; after 2 × TTL + 1 s the member is restarted and
//!    the cluster waits for all three again;
//! 2. the leader is killed (etcd first moves leadership off A's member should it have gone
//!    there): the others must get the lock and write again.
//!
//! Measured: kill → the first section, under a grant taken after the kill, by a client not
//! pinned to the killed member. Violations: no such progress within election + 2 × TTL + 5 s
//! (see [`queue_hold`]),
//! A's lease not lost, untyped errors, fencing tokens granted out of order, stale writes
//! accepted, and (without the `--unsafe-*` switches) overlapping sections at the resource.
//! `--unsafe-ignore-lost` has holders whose lease was lost write on for 3 × TTL: the fence
//! refuses their writes; with `--unsafe-no-fence` too, they get in as stale writes.

use std::path::PathBuf;
use std::time::Duration;

use example_support::backend::BackendKind;
use lock_core::LockClient;
use lock_testing::cluster::{
    data_dir, try_wait_for_quorum, Cluster, EtcdCluster, ZooKeeperEnsemble,
};
use tokio::time::{sleep, Instant};

use super::{rounds, Chaos};
use crate::chaos::cluster_workload::{Plan, Seen, Workload};
use crate::chaos::report::Measured;
use crate::chaos::resource::Resource;
use crate::chaos::target::Target;
use crate::chaos::worker;

/// How long a cluster may take to serve (at the start, after a restart).
const QUORUM: Duration = Duration::from_secs(30);

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    let mut round = 0;
    rounds(
        cx,
        12,
        target,
        "kill→progress",
        async |cx, key, resource, m| {
            round += 1;
            let base = workspace().join("target").join("chaos");
            let name = format!("cluster-{}-{round}", std::process::id());
            let dir = data_dir(&base, &name)?;
            let result = match target.kind {
                BackendKind::Etcd if !EtcdCluster::installed() => {
                    Err("etcd is not installed (`cargo xtask stack up` installs it)".to_owned())
                }
                BackendKind::Etcd => match EtcdCluster::start(dir.clone()) {
                    Ok(cluster) => one_round(cx, target.kind, cluster, key, resource, m).await,
                    Err(e) => Err(e),
                },
                BackendKind::Zookeeper if !ZooKeeperEnsemble::installed() => {
                    Err("ZooKeeper is not installed (`cargo xtask stack up` installs it)".into())
                }
                BackendKind::Zookeeper => match ZooKeeperEnsemble::start(dir.clone()) {
                    Ok(cluster) => one_round(cx, target.kind, cluster, key, resource, m).await,
                    Err(e) => Err(e),
                },
                other => Err(format!("no cluster of {} is run", other.name())),
            };
            // The members were killed when the cluster was dropped.
            std::fs::remove_dir_all(&dir).ok();
            result
        },
    )
    .await
}

/// The workspace root, where `target/` is.
fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// How long the lock may stay out of reach when a client dies holding or with waiters queued:
/// its lease, and its session (ZooKeeper's session timeout and etcd's session TTL, which the
/// clients set to the lease, see `worker::connect`), twice over.
fn queue_hold(ttl: Duration) -> Duration {
    ttl * 2
}

/// How long the cluster may take to elect a new leader after its leader died.
fn election(kind: BackendKind) -> Duration {
    match kind {
        // `--election-timeout 1000`, and a vote.
        BackendKind::Etcd => Duration::from_secs(2),
        // `tickTime=500`: peers notice the leader gone within a few ticks, then elect and sync.
        _ => Duration::from_secs(4),
    }
}

/// One round on a started `cluster` (dropped, so killed, on return).
async fn one_round<C: Cluster>(
    cx: &Chaos,
    kind: BackendKind,
    mut cluster: C,
    key: &str,
    resource: &Resource,
    m: &mut Measured,
) -> Result<(), String> {
    let ttl = cx.ttl();
    let started = Instant::now();
    let leader = try_wait_for_quorum(&mut cluster, QUORUM).await?;
    let names: Vec<String> = cluster.members().iter().map(|m| m.name.clone()).collect();
    let a = (0..3).find(|&i| i != leader).unwrap_or(0);
    eprintln!(
        "    quorum after {:.1} s: leader {}, A pinned to follower {}",
        started.elapsed().as_secs_f64(),
        names[leader],
        names[a]
    );
    let all = cluster.url(&[0, 1, 2]);
    let clients = vec![
        client(kind, &cluster.url(&[a]), ttl).await?,
        client(kind, &all, ttl).await?,
        client(kind, &all, ttl).await?,
    ];
    let linger = cx.settings.unsafe_ignore_lost.then_some(ttl * 3);
    let plan = Plan {
        ttl,
        tasks: 3,
        sections: 3,
        period: ttl / 20,
        fenced: !cx.settings.unsafe_no_fence,
        linger,
        victim_cap: ttl * 4 + Duration::from_secs(5),
    };
    let workload = Workload::start(&clients, key, resource, plan);
    let bound = election(kind) + queue_hold(ttl) + Duration::from_secs(5);

    if !workload.wait_sections(3, Duration::from_secs(10)).await {
        m.violation("no progress before any kill".into());
    }

    // 1. A's member, while A's victim holds.
    workload.arm_victim();
    let victim = workload.wait_victim_holding(Duration::from_secs(10)).await;
    if !victim {
        m.notes
            .push("A's tasks did not get the lock within 10 s of asking".into());
    }
    cluster.members()[a].kill();
    let killed = Instant::now();
    m.faults += 1;
    workload.probe(killed, Some(0));
    progress(m, &workload, bound, &format!("follower {} (A's)", names[a])).await;
    sleep((killed + ttl * 2 + Duration::from_secs(1)).saturating_duration_since(Instant::now()))
        .await;
    if victim {
        match workload.victim_lost_at() {
            Some(at) => eprintln!(
                "    A's lost() fired {:.0} ms after its member was killed",
                ms(at - killed)
            ),
            None => m.violation(format!(
                "A's lease was not lost within {:?} of its member's death",
                killed.elapsed()
            )),
        }
    }
    cluster.members()[a].start()?;
    let mut leader = try_wait_for_quorum(&mut cluster, QUORUM).await?;
    if leader == a {
        cluster.ensure_leader_is_not(a).await;
        leader = try_wait_for_quorum(&mut cluster, QUORUM).await?;
    }

    // 2. The leader.
    cluster.members()[leader].kill();
    let killed = Instant::now();
    m.faults += 1;
    workload.probe(killed, (leader == a).then_some(0));
    progress(m, &workload, bound, &format!("leader {}", names[leader])).await;

    let seen = workload.stop(ttl * 6 + Duration::from_secs(10)).await;
    drop(clients);
    check(cx, m, &seen, resource).await;
    eprintln!(
        "    {} sections, {} holders lost their lease, {} typed errors; round took {:.1} s",
        seen.sections,
        seen.lost,
        seen.typed_errors,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A lock client of `kind` on `url` (the chaos workers' settings).
async fn client(kind: BackendKind, url: &str, ttl: Duration) -> Result<LockClient, String> {
    worker::connect(kind, url, ttl, None)
        .await
        .map_err(|e| format!("connecting to {url}: {}", e.with_causes()))
}

/// Waits for the progress the probe watches; records its latency or a violation.
async fn progress(m: &mut Measured, workload: &Workload, bound: Duration, killed: &str) {
    match workload.wait_progress(bound).await {
        Some(after) => {
            m.latencies.push(ms(after));
            eprintln!("    killed {killed}: progress {:.0} ms later", ms(after));
        }
        None => m.violation(format!(
            "no progress within {bound:?} after killing {killed}"
        )),
    }
}

/// The round's violations from what the workload and the resource saw.
async fn check(cx: &Chaos, m: &mut Measured, seen: &Seen, resource: &Resource) {
    for e in seen.untyped_errors.iter().take(3) {
        m.violation(format!("untyped error: {e}"));
    }
    if seen.untyped_errors.len() > 3 {
        m.violation(format!(
            "{} more untyped errors",
            seen.untyped_errors.len() - 3
        ));
    }
    if let Some(first) = seen.fence_regressions.first() {
        m.violation(format!(
            "fencing tokens not increasing in grant order ({}×, first: {first})",
            seen.fence_regressions.len()
        ));
    }
    if let Some(first) = seen.resource_errors.first() {
        m.violation(format!(
            "the resource failed {}× (first: {first})",
            seen.resource_errors.len()
        ));
    }
    if seen.stuck_tasks > 0 {
        m.notes.push(format!(
            "{} workload task(s) did not stop in time",
            seen.stuck_tasks
        ));
    }
    let unsafe_run = cx.settings.unsafe_no_fence || cx.settings.unsafe_ignore_lost;
    match resource.counts().await {
        Ok(counts) if counts.overlaps > 0 && !unsafe_run => m.violation(format!(
            "{} section(s) overlapped another holder's",
            counts.overlaps
        )),
        Ok(_) => {}
        Err(e) => m.violation(format!("resource counters: {e}")),
    }
}

/// `d` in ms.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
