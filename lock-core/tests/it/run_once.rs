//! Run-once jobs (`LockClient::run_once`, `#[run_once]`): one run per slot across instances
//! whose schedulers fire at slightly different times, the hold at most freeing a dead
//! instance's slot, and bad holds refused. On memory and on a real Redis.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::{LeaseMode, LockClient, LockError, MemoryBackend, RedisBackend};
use tokio::time::{timeout, Instant};

use crate::conformance::unique_key;

/// Instances (clients of their own on one store) of the job's service.
async fn instances(redis: bool) -> Option<Vec<LockClient>> {
    if !redis {
        let memory = MemoryBackend::new();
        return Some((0..3).map(|_| LockClient::new(memory.clone())).collect());
    }
    let url = lock_testing::server_url("LOCK_TEST_REDIS_URL").expect("test server")?;
    let mut all = Vec::new();
    for _ in 0..3 {
        all.push(LockClient::new(RedisBackend::connect(&url).await.unwrap()));
    }
    Some(all)
}

/// 3 instances, 6 slots of 400 ms; each fires at the slot's start plus up to 150 ms of skew,
/// holding at least 300 ms: exactly one run per slot.
async fn one_run_per_slot(redis: bool) {
    let Some(instances) = instances(redis).await else {
        return;
    };
    let key = unique_key("slot");
    let slot = Duration::from_millis(400);
    let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..6).map(|_| AtomicUsize::new(0)).collect());
    let start = Instant::now() + Duration::from_millis(50);
    let tasks: Vec<_> = instances
        .into_iter()
        .enumerate()
        .map(|(i, locks)| {
            let (key, runs) = (key.clone(), runs.clone());
            tokio::spawn(async move {
                for n in 0..6u32 {
                    let skew = Duration::from_millis(50 * ((i as u64 + u64::from(n)) % 4));
                    tokio::time::sleep_until(start + slot * n + skew).await;
                    let ran = locks
                        .run_once(&key)
                        .at_least(Duration::from_millis(300))
                        .at_most(Duration::from_secs(5))
                        .run(|_| async { runs[n as usize].fetch_add(1, Ordering::SeqCst) })
                        .await
                        .unwrap();
                    let _ = ran;
                }
            })
        })
        .collect();
    timeout(Duration::from_secs(30), async {
        for task in tasks {
            task.await.unwrap();
        }
    })
    .await
    .expect("bounded");
    let per_slot: Vec<usize> = runs.iter().map(|r| r.load(Ordering::SeqCst)).collect();
    assert_eq!(per_slot, vec![1; 6], "runs per slot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_per_slot_on_memory() {
    one_run_per_slot(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_per_slot_on_redis() {
    one_run_per_slot(true).await;
}

/// An instance that died holding the job's key (its lease never released) blocks the job for
/// `at_most`, then another instance runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_instance_frees_the_slot_after_at_most() {
    let Some(instances) = instances(true).await else {
        return;
    };
    let key = unique_key("dead");
    let at_most = Duration::from_millis(600);
    let dead = instances[0]
        .lock(&key)
        .lease(LeaseMode::fixed(at_most))
        .await
        .unwrap();
    let died = Instant::now();
    dead.abandon();
    async fn job(
        locks: &LockClient,
        key: &str,
        at_most: Duration,
    ) -> Option<lock_core::FencingToken> {
        locks
            .run_once(key)
            .at_most(at_most)
            .run(|fence| async move { fence })
            .await
            .unwrap()
    }
    assert!(
        job(&instances[1], &key, at_most).await.is_none(),
        "ran beside the dead instance's hold"
    );
    timeout(Duration::from_secs(10), async {
        loop {
            if let Some(fence) = job(&instances[2], &key, at_most).await {
                assert!(died.elapsed() >= at_most - Duration::from_millis(20));
                assert!(fence.get() > 0);
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    })
    .await
    .expect("the slot was never freed");
}

/// A hold at least longer than at most, or an at most outside the lease bounds: typed errors,
/// and the job does not run.
#[tokio::test]
async fn bad_holds_are_refused() {
    let locks = LockClient::new(MemoryBackend::new());
    for (at_least, at_most) in [
        (Duration::from_secs(2), Duration::from_secs(1)),
        (Duration::ZERO, Duration::ZERO),
        (Duration::ZERO, Duration::from_secs(7 * 24 * 3600)),
    ] {
        let ran = locks
            .run_once("bad")
            .at_least(at_least)
            .at_most(at_most)
            .run(|_| async { panic!("ran with a bad hold") })
            .await;
        let error: LockError = ran.map(|_: Option<()>| ()).unwrap_err();
        assert!(
            matches!(error, LockError::InvalidDuration { .. }),
            "{error}"
        );
    }
}

/// `#[run_once]`: the body runs once per slot; a skipped call returns `Default`.
#[cfg(feature = "macros")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attribute_runs_once_and_skips() {
    use lock_core::run_once;

    #[run_once(key = "report:{day}", at_least = "500ms", at_most = "5s", client = locks, fence = token)]
    async fn report(locks: &LockClient, day: u32) -> Result<Option<u64>, LockError> {
        Ok(Some(token.get()))
    }

    let locks = LockClient::new(MemoryBackend::new());
    let other = locks.clone();
    assert!(report(&locks, 1).await.unwrap().is_some());
    assert_eq!(report(&other, 1).await.unwrap(), None);
    assert!(
        report(&other, 2).await.unwrap().is_some(),
        "another key runs"
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        report(&other, 1).await.unwrap().is_some(),
        "at least ran out"
    );
}
