//! Shared pieces of the multi-member failover tests (`zk_ensemble.rs`, `etcd_cluster.rs`):
//! the server-requirement check and a contended lock workload that counts overlaps, fencing
//! order, losses and errors while members die. The clusters themselves (member processes on
//! free loopback ports) are `lock_testing::cluster`'s.
//!
//! The failover scenario ([`failover`]) keeps a quorum (2 of 3) at every moment:
//! 1. once the cluster has a leader, member **A** is chosen among the *followers* and one
//!    client is pinned to it alone; the other clients get every member;
//! 2. the other follower **B** (neither A nor the leader) is killed, the workload must go on,
//!    then B is restarted and the cluster waits for all three members again;
//! 3. the **leader** is killed (the engine's `ensure_leader_is_not` first moves leadership off
//!    A should it have moved there), and the workload must go on again.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lock_core::{LockClient, LockError};
use tokio::time::Instant;

use lock_testing::cluster::{wait_for_quorum, Cluster};

/// Whether the servers a test needs are installed: `Some(())` when they are; when not, a
/// failure under `LOCK_TEST_REQUIRE_SERVERS=1` or `CI` (like
/// [`lock_testing::server_url`]) and otherwise `None` after a loud `SKIPPED`.
pub(crate) fn require(what: &str, installed: bool) -> Option<()> {
    if installed {
        return Some(());
    }
    assert!(
        !lock_testing::servers_required(),
        "{what} is not installed but test servers are required; run `cargo xtask test`"
    );
    eprintln!("SKIPPED: {what} is not installed; `cargo xtask test` installs it");
    None
}

/// A fresh directory for this test's data under `CARGO_TARGET_TMPDIR`.
pub(crate) fn data_dir(name: &str) -> PathBuf {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    lock_testing::cluster::data_dir(&base, &format!("{name}-{}", std::process::id())).unwrap()
}

/// What the workload saw.
#[derive(Default)]
pub(crate) struct Stats {
    /// Critical sections completed (entered, held for their whole length, left).
    pub(crate) sections: AtomicU64,
    /// Times a task entered its critical section while another believed it held the lock.
    pub(crate) overlaps: AtomicU64,
    /// Grants whose fencing token was not above every earlier grant's.
    pub(crate) fence_regressions: AtomicU64,
    /// Holders told by `lost()` that their lease went away (they stop at once).
    pub(crate) lost: AtomicU64,
    /// Typed errors (unavailable, timeout, lease lost) from acquire or release.
    pub(crate) typed_errors: AtomicU64,
    /// Anything else: a failure.
    pub(crate) other_errors: Mutex<Vec<String>>,
    /// Highest fencing token granted so far.
    last_fence: Mutex<u64>,
    /// Tasks inside their critical section right now.
    inside: AtomicUsize,
    /// When the last section completed, and the longest time between two completions (the
    /// outage a failover caused).
    gap: Mutex<(Option<Instant>, Duration)>,
}

impl Stats {
    pub(crate) fn sections(&self) -> u64 {
        self.sections.load(Ordering::SeqCst)
    }

    /// The longest time between two completed sections.
    pub(crate) fn longest_gap(&self) -> Duration {
        self.gap.lock().unwrap().1
    }

    fn completed(&self) {
        self.sections.fetch_add(1, Ordering::SeqCst);
        let now = Instant::now();
        let mut gap = self.gap.lock().unwrap();
        if let Some(last) = gap.0 {
            gap.1 = gap.1.max(now - last);
        }
        gap.0 = Some(now);
    }

    fn error(&self, e: &LockError) {
        if e.is_unavailable() || e.is_timeout() || e.is_lost() {
            self.typed_errors.fetch_add(1, Ordering::Relaxed);
        } else {
            self.other_errors.lock().unwrap().push(e.to_string());
        }
    }
}

/// Leaves the critical section even when the section's future is dropped (on loss).
struct Inside<'a>(&'a AtomicUsize);

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `tasks` tasks per client looping acquire → critical section → release on `key` until
/// `until`. The section runs under `select!` with `guard.lost()`: a holder told that it lost
/// the lock leaves at once, so an overlap is counted only while a guard believes it holds.
pub(crate) fn spawn_workload(
    clients: &[LockClient],
    tasks: usize,
    key: &str,
    until: Instant,
    stats: &Arc<Stats>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut handles = Vec::new();
    for client in clients {
        for _ in 0..tasks {
            let (client, key, stats) = (client.clone(), key.to_owned(), Arc::clone(stats));
            handles.push(tokio::spawn(async move {
                while Instant::now() < until {
                    let wait = until.saturating_duration_since(Instant::now());
                    let guard = match client
                        .lock(&key)
                        .lease(lock_core::LeaseMode::watchdog(Duration::from_secs(3)))
                        .acquire_within(wait.min(Duration::from_secs(5)))
                        .await
                    {
                        Ok(Some(guard)) => guard,
                        Ok(None) => continue,
                        Err(e) => {
                            stats.error(&e);
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let lost = guard.lost();
                    let section = async {
                        if stats.inside.fetch_add(1, Ordering::SeqCst) != 0 {
                            stats.overlaps.fetch_add(1, Ordering::SeqCst);
                        }
                        let _inside = Inside(&stats.inside);
                        {
                            let fence = guard.fencing_token().get();
                            let mut last = stats.last_fence.lock().unwrap();
                            if fence <= *last {
                                stats.fence_regressions.fetch_add(1, Ordering::SeqCst);
                            }
                            *last = (*last).max(fence);
                        }
                        tokio::time::sleep(Duration::from_millis(25)).await;
                    };
                    tokio::select! {
                        _ = lost => {
                            stats.lost.fetch_add(1, Ordering::SeqCst);
                        }
                        () = section => stats.completed(),
                    }
                    if let Err(e) = guard.release().await {
                        stats.error(&e);
                    }
                }
            }));
        }
    }
    handles
}

/// Runs the scenario described in the module docs on `cluster` (bounded to 90 s) and checks
/// it; then stops the members and removes their data. `backend` connects a backend of its own
/// to a URL list (each client gets one, in the `failover` namespace).
pub(crate) async fn failover<C, F, Fut, B>(mut cluster: C, key: &str, backend: F)
where
    C: Cluster,
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = B>,
    B: lock_core::LockBackend,
{
    let started = Instant::now();
    tokio::time::timeout(
        Duration::from_secs(90),
        scenario(&mut cluster, key, |url| {
            let connect = backend(url);
            async move {
                LockClient::builder(connect.await)
                    .namespace("failover")
                    .build()
                    .unwrap()
            }
        }),
    )
    .await
    .expect("the failover test ran past its bound");
    let dir = cluster.data_dir().to_owned();
    drop(cluster);
    std::fs::remove_dir_all(dir).ok();
    eprintln!("failover scenario passed in {:?}", started.elapsed());
}

/// The scenario of the module docs with 3 clients × 4 tasks, and its checks.
async fn scenario<C, F, Fut>(cluster: &mut C, key: &str, client: F)
where
    C: Cluster,
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = LockClient>,
{
    let started = Instant::now();
    let leader = wait_for_quorum(cluster, Duration::from_secs(25)).await;
    let names: Vec<String> = cluster.members().iter().map(|m| m.name.clone()).collect();
    let a = (0..3).find(|&i| i != leader).unwrap();
    let b = (0..3).find(|&i| i != leader && i != a).unwrap();
    eprintln!(
        "quorum after {:?}: leader {}, A (pinned) {}, B {}",
        started.elapsed(),
        names[leader],
        names[a],
        names[b]
    );
    let all = cluster.url(&[0, 1, 2]);
    let clients = vec![
        client(cluster.url(&[a])).await,
        client(all.clone()).await,
        client(all).await,
    ];

    let stats = Arc::new(Stats::default());
    let phase = Duration::from_secs(6);
    let until = Instant::now() + phase * 4;
    let tasks = spawn_workload(&clients, 4, key, until, &stats);

    tokio::time::sleep(phase).await;
    let before = stats.sections();
    assert!(before > 0, "no progress before any kill");
    cluster.members()[b].kill();
    let killed_at = stats.sections();
    eprintln!(
        "{:?}: killed follower {} after {before} sections",
        started.elapsed(),
        names[b]
    );
    tokio::time::sleep(phase).await;
    let after_follower = stats.sections() - killed_at;
    cluster.members()[b].start().unwrap();
    let mut leader = wait_for_quorum(cluster, Duration::from_secs(20)).await;
    if leader == a {
        cluster.ensure_leader_is_not(a).await;
        leader = wait_for_quorum(cluster, Duration::from_secs(20)).await;
    }
    assert_ne!(
        leader, a,
        "leadership could not be moved off the pinned member"
    );
    eprintln!(
        "{:?}: {} back, {after_follower} sections while it was down; killing leader {}",
        started.elapsed(),
        names[b],
        names[leader]
    );
    cluster.members()[leader].kill();
    let killed_at = stats.sections();
    for task in tasks {
        task.await.expect("a workload task panicked");
    }
    let after_leader = stats.sections() - killed_at;
    eprintln!(
        "{:?}: done; {after_leader} sections after the leader died",
        started.elapsed()
    );

    eprintln!(
        "A = {}, killed follower {} then leader {}; sections {before} before, {after_follower} \
         after the follower kill, {after_leader} after the leader kill",
        names[a], names[b], names[leader]
    );
    let other = stats.other_errors.lock().unwrap().clone();
    eprintln!(
        "sections {}, overlaps {}, fence regressions {}, lost {}, typed errors {}, other errors {}, \
         longest gap between sections {:?}",
        stats.sections(),
        stats.overlaps.load(Ordering::SeqCst),
        stats.fence_regressions.load(Ordering::SeqCst),
        stats.lost.load(Ordering::SeqCst),
        stats.typed_errors.load(Ordering::SeqCst),
        other.len(),
        stats.longest_gap()
    );
    assert_eq!(
        stats.overlaps.load(Ordering::SeqCst),
        0,
        "mutual exclusion broken"
    );
    assert_eq!(
        stats.fence_regressions.load(Ordering::SeqCst),
        0,
        "fencing tokens not strictly increasing in grant order"
    );
    assert!(other.is_empty(), "untyped errors: {other:?}");
    assert!(after_follower > 0, "no progress after the follower died");
    assert!(after_leader > 0, "no progress after the leader died");
}
