//! What `#[single_flight]` does at run time, on a memory cache and on a real Redis
//! (`LOCK_TEST_REDIS_URL`): concurrent cold calls run the body once (also 1,000 calls across
//! two processes), later calls are hits, stale values are served while one refresh runs,
//! failures are not cached unless asked, `&T` arguments work, and keys never collide.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use lock_core::cache::{Cache, CacheFailure, CacheStatus};
use lock_core::redis::RedisResultStore;
use lock_core::{single_flight, KeyTemplate, RedisBackend};
use tokio::time::{timeout, Instant};

use crate::support;
use crate::support::processes::{Counters, SecondProcess};

/// Every test ends within this, pass or fail.
const BOUND: Duration = Duration::from_secs(30);

/// Runs a scenario on a memory cache and on a Redis one.
macro_rules! on_both_caches {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn memory() {
                let cache = super::memory_cache();
                tokio::time::timeout(super::BOUND, super::$scenario(cache)).await.expect("timed out");
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                let namespace = super::support::unique_namespace("sf");
                let Some(cache) = super::redis_cache(&namespace).await else { return };
                tokio::time::timeout(super::BOUND, super::$scenario(cache)).await.expect("timed out");
            }
        }
    )*};
}

on_both_caches!(
    cold_calls_run_the_body_once_then_hit,
    stale_values_are_served_while_one_refresh_runs,
    failures_are_not_cached_by_default,
    negative_ttl_hands_a_failure_to_later_callers,
    stale_if_error_serves_the_last_value,
    reference_arguments_and_keys_that_never_collide,
);

fn memory_cache() -> Cache {
    Cache::memory(&support::unique_namespace("sfmem")).unwrap()
}

async fn redis_cache(namespace: &str) -> Option<Cache> {
    let url = support::redis_url()?;
    let backend = RedisBackend::connect(&url).await.unwrap();
    let store = RedisResultStore::from_backend(&backend).await.unwrap();
    Some(
        Cache::builder(store, backend)
            .namespace(namespace)
            .build()
            .unwrap(),
    )
}

/// The fns' error: the body's own, or the cache's.
#[derive(Debug)]
enum TestError {
    Origin(String),
    Cache(CacheFailure),
}

impl fmt::Display for TestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Origin(message) => write!(f, "origin: {message}"),
            Self::Cache(failure) => write!(f, "cache: {failure}"),
        }
    }
}

impl From<CacheFailure> for TestError {
    fn from(failure: CacheFailure) -> Self {
        Self::Cache(failure)
    }
}

/// Counts body runs; `bump` returns the run's number, from 1.
#[derive(Clone, Default)]
struct Runs(Arc<AtomicUsize>);

impl Runs {
    fn bump(&self) -> usize {
        self.0.fetch_add(1, SeqCst) + 1
    }

    fn count(&self) -> usize {
        self.0.load(SeqCst)
    }
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Product {
    id: u64,
    run: usize,
}

#[single_flight(key = "product:{id}", name = "t", cache = cache, ttl = "60s")]
async fn product(cache: Cache, id: u64, runs: Runs) -> Result<Product, TestError> {
    let run = runs.bump();
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(Product { id, run })
}

async fn cold_calls_run_the_body_once_then_hit(cache: Cache) {
    let runs = Runs::default();
    let calls: Vec<_> = (0..200)
        .map(|_| tokio::spawn(product(cache.clone(), 7, runs.clone())))
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap(), Product { id: 7, run: 1 });
    }
    assert_eq!(runs.count(), 1, "200 concurrent cold calls");
    // A hit: the stored value, the body not run.
    let started = Instant::now();
    assert_eq!(
        product(cache.clone(), 7, runs.clone()).await.unwrap().run,
        1
    );
    assert!(
        started.elapsed() < Duration::from_millis(200),
        "a hit waited"
    );
    assert_eq!(runs.count(), 1);
    // Another key is another value.
    assert_eq!(product(cache, 8, runs.clone()).await.unwrap().run, 2);
}

#[single_flight(key = "stale:{tag}", name = "t", cache = cache, ttl = "300ms", stale = "1m")]
async fn versioned(cache: Cache, tag: &str, runs: Runs) -> Result<usize, TestError> {
    Ok(runs.bump())
}

async fn stale_values_are_served_while_one_refresh_runs(cache: Cache) {
    let runs = Runs::default();
    assert_eq!(
        versioned(cache.clone(), "a", runs.clone()).await.unwrap(),
        1
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    // Past fresh, within stale: the old value at once, and one refresh in the background.
    assert_eq!(
        versioned(cache.clone(), "a", runs.clone()).await.unwrap(),
        1
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match versioned(cache.clone(), "a", runs.clone()).await.unwrap() {
            2 => break,
            1 => assert!(Instant::now() < deadline, "the refresh never landed"),
            other => panic!("run {other}: more than one refresh"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(runs.count(), 2, "one refresh");
}

#[single_flight(key = "flaky:{tag}", name = "t", cache = cache)]
async fn flaky(cache: Cache, tag: String, runs: Runs) -> Result<usize, TestError> {
    match runs.bump() {
        1 => Err(TestError::Origin("the first call fails".into())),
        run => Ok(run),
    }
}

async fn failures_are_not_cached_by_default(cache: Cache) {
    let runs = Runs::default();
    let tag = || "x".to_owned();
    match flaky(cache.clone(), tag(), runs.clone()).await {
        Err(TestError::Origin(message)) => assert_eq!(message, "the first call fails"),
        other => panic!("expected the body's own error, got {other:?}"),
    }
    assert_eq!(flaky(cache.clone(), tag(), runs.clone()).await.unwrap(), 2);
    assert_eq!(flaky(cache, tag(), runs.clone()).await.unwrap(), 2);
    assert_eq!(runs.count(), 2);
}

#[single_flight(key = "missing:{id}", name = "t", cache = cache, negative_ttl = "1m")]
async fn missing(cache: Cache, id: u64, runs: Runs) -> Result<u64, TestError> {
    runs.bump();
    Err(TestError::Origin(format!("no product {id}")))
}

async fn negative_ttl_hands_a_failure_to_later_callers(cache: Cache) {
    let runs = Runs::default();
    assert!(matches!(
        missing(cache.clone(), 3, runs.clone()).await,
        Err(TestError::Origin(_))
    ));
    match missing(cache, 3, runs.clone()).await {
        Err(TestError::Cache(CacheFailure::Elsewhere(message))) => {
            assert!(message.contains("no product 3"), "{message}");
        }
        other => panic!("expected the remembered failure, got {other:?}"),
    }
    assert_eq!(runs.count(), 1);
}

#[single_flight(key = "sie:{id}", name = "t", cache = cache, ttl = "200ms", stale_if_error = "1m")]
async fn fragile(cache: Cache, id: u64, runs: Runs) -> Result<String, TestError> {
    match runs.bump() {
        1 => Ok("first".into()),
        _ => Err(TestError::Origin("the origin is down".into())),
    }
}

async fn stale_if_error_serves_the_last_value(cache: Cache) {
    let runs = Runs::default();
    assert_eq!(
        fragile(cache.clone(), 1, runs.clone()).await.unwrap(),
        "first"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(fragile(cache, 1, runs.clone()).await.unwrap(), "first");
    assert_eq!(
        runs.count(),
        2,
        "the expired value was recomputed, and that failed"
    );
}

#[single_flight(key = "pair:{a}:{b}", name = "t", cache = cache)]
async fn pair(cache: &Cache, a: &str, b: &str, runs: &Runs) -> Result<String, TestError> {
    runs.bump();
    Ok(format!("{a}|{b}"))
}

async fn reference_arguments_and_keys_that_never_collide(cache: Cache) {
    let runs = Runs::default();
    // Plain interpolation would give both `t:pair:1:2:3`, and the second the first's value.
    assert_eq!(pair(&cache, "1:2", "3", &runs).await.unwrap(), "1:2|3");
    assert_eq!(pair(&cache, "1", "2:3", &runs).await.unwrap(), "1|2:3");
    assert_eq!(pair(&cache, "1:2", "3", &runs).await.unwrap(), "1:2|3");
    assert_eq!(runs.count(), 2);
    // Stored where `KeyTemplate` says, as JSON.
    let key = KeyTemplate::parse("t:pair:{a}:{b}")
        .unwrap()
        .render(&[&"1", &"2:3"])
        .unwrap();
    assert_eq!(key, "t:pair:1:2%3A3");
    let stored = cache
        .entry(key)
        .json()
        .try_get_with(|| async { Err::<String, _>("not stored where expected") })
        .await
        .unwrap();
    assert_eq!(
        (stored.status, stored.value.as_str()),
        (CacheStatus::Hit, "1|2:3")
    );
}

// ---- across processes (Redis) ----

const WORKER: SecondProcess = SecondProcess {
    test: "single_flight::single_flight_worker",
    env: "LOCK_MACROS_SINGLE_FLIGHT_WORKER",
};
/// Concurrent calls in each of the two processes.
const CALLERS: usize = 500;

#[single_flight(key = "cold:{id}", name = "xproc", cache = cache, ttl = "60s", wait = "20s")]
async fn cold(
    cache: Cache,
    id: String,
    mut admin: redis::aio::MultiplexedConnection,
    runs: String,
) -> Result<String, TestError> {
    let _: i64 = redis::cmd("INCR")
        .arg(&runs)
        .query_async(&mut admin)
        .await
        .map_err(|e| TestError::Origin(e.to_string()))?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    Ok(format!("value of {id}"))
}

/// Both processes: meet at a barrier, then make `CALLERS` concurrent cold calls of one key.
async fn crowd(namespace: &str, who: &str) {
    let url = support::redis_url().expect("a Redis URL");
    let cache = redis_cache(namespace).await.unwrap();
    let mut counters = Counters::connect(&url, namespace).await;
    counters.meet(who).await;
    let calls: Vec<_> = (0..CALLERS)
        .map(|_| {
            let runs = counters.key("runs");
            tokio::spawn(cold(
                cache.clone(),
                "p1".into(),
                counters.admin.clone(),
                runs,
            ))
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap(), "value of p1");
    }
}

/// The second process of `cold_calls_across_two_processes_run_the_body_once`; does nothing
/// when run by hand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by cold_calls_across_two_processes_run_the_body_once in a child process"]
async fn single_flight_worker() {
    let Some(namespace) = WORKER.namespace() else {
        return;
    };
    timeout(BOUND, crowd(&namespace, "child"))
        .await
        .expect("timed out");
}

/// 1,000 concurrent cold calls, 500 in each of two processes: one body run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cold_calls_across_two_processes_run_the_body_once() {
    let Some(url) = support::redis_url() else {
        return;
    };
    let namespace = support::unique_namespace("sfx");
    WORKER
        .run_beside(&namespace, BOUND, crowd(&namespace, "parent"))
        .await;

    let mut counters = Counters::connect(&url, &namespace).await;
    let runs: Option<i64> = counters.get("runs").await;
    counters.delete(&["runs"]).await;
    assert_eq!(runs, Some(1), "body runs for {} cold calls", 2 * CALLERS);
}
