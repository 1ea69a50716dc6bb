//! Shared by the cache suites (`cache.rs` on memory and Redis, `cache_processes.rs` across
//! processes): unique keys, an origin that counts its calls, caches in the tests' namespace,
//! and a crowd of concurrent readers of one key.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::cache::{Cache, CacheStatus, Cached};

/// The namespace of every test cache; keys come from [`unique`], so runs do not meet.
pub(crate) const NAMESPACE: &str = "test";

/// `name:pid:nanos`: a key no other test, run or process uses.
pub(crate) fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}:{}:{nanos}", std::process::id())
}

/// An origin that counts its calls (in this process) and answers after a delay.
#[derive(Clone, Default)]
pub(crate) struct Origin {
    pub(crate) calls: Arc<AtomicUsize>,
}

impl Origin {
    /// One call: counted at once, answered with `value` after `delay`.
    pub(crate) fn call(
        &self,
        delay: Duration,
        value: &'static str,
    ) -> impl Future<Output = Result<Vec<u8>, String>> + Send + 'static {
        let calls = self.calls.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(delay).await;
            Ok(value.as_bytes().to_vec())
        }
    }

    /// The calls so far.
    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

/// `cache`'s answer for `key`, a miss computing `value` at once (not counted by any origin).
pub(crate) async fn answer(cache: &Cache, key: &str, value: &'static [u8]) -> Cached<Vec<u8>> {
    cache
        .entry(key)
        .try_get_with(|| async { Ok::<_, String>(value.to_vec()) })
        .await
        .unwrap()
}

/// `cache`'s answer for `key`, a miss computing `value` by a call to `origin` with no delay.
pub(crate) async fn compute_now(
    cache: &Cache,
    key: &str,
    origin: &Origin,
    value: &'static str,
) -> Cached<Vec<u8>> {
    let origin = origin.clone();
    cache
        .entry(key)
        .try_get_with(move || origin.call(Duration::ZERO, value))
        .await
        .unwrap()
}

/// `got` has the status `status` and the value `value`.
#[track_caller]
pub(crate) fn assert_got(got: &Cached<Vec<u8>>, status: CacheStatus, value: &[u8]) {
    assert_eq!((got.status, got.value.as_slice()), (status, value));
}

/// `callers` concurrent reads of `key`, one task each, spread over `caches` in turn; a miss
/// computes with `compute`. Returns what each got, in the order they were started.
pub(crate) async fn crowd<F, Fut>(
    caches: &[Cache],
    callers: usize,
    key: &str,
    compute: F,
) -> Vec<Cached<Vec<u8>>>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<Vec<u8>, String>> + Send + 'static,
{
    let tasks: Vec<_> = (0..callers)
        .map(|n| {
            let (cache, key, compute) = (
                caches[n % caches.len()].clone(),
                key.to_owned(),
                compute.clone(),
            );
            tokio::spawn(async move { cache.entry(&key).try_get_with(compute).await.unwrap() })
        })
        .collect();
    let mut got = Vec::with_capacity(callers);
    for task in tasks {
        got.push(task.await.unwrap());
    }
    got
}

/// The Redis server of `LOCK_TEST_REDIS_URL`; `None` (a loud skip) when unset and not required.
#[cfg(feature = "redis")]
pub(crate) fn redis_url() -> Option<String> {
    lock_testing::server_url("LOCK_TEST_REDIS_URL").expect("test server")
}

/// A cache on `backend` and a Redis store beside it, in [`NAMESPACE`]: a builder to finish.
#[cfg(feature = "redis")]
pub(crate) async fn on_redis(backend: lock_core::RedisBackend) -> lock_core::cache::CacheBuilder {
    let store = lock_core::redis::RedisResultStore::from_backend(&backend)
        .await
        .unwrap();
    Cache::builder(store, backend).namespace(NAMESPACE)
}

/// The lock key a cache in [`NAMESPACE`] takes its computations' leases on, for `key`.
pub(crate) fn lease_key(key: &str) -> String {
    format!("cache.{NAMESPACE}:{key}")
}

/// Waits (bounded) until `waiters()` reports at least one caller queued for a lease: the store
/// offers nothing to subscribe to for that.
pub(crate) async fn until_queued<F, Fut>(mut waiters: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = usize>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while waiters().await == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no caller ever queued for the lease"
        );
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
}

/// Callers queued for the lease of `key` on the Redis at `url`.
#[cfg(feature = "redis")]
pub(crate) async fn redis_lease_waiters(
    url: &str,
    names: &lock_core::RedisBackend,
    key: &str,
) -> usize {
    let mut connection = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    redis::cmd("ZCARD")
        .arg(names.waiters_key(&lease_key(key)))
        .query_async(&mut connection)
        .await
        .unwrap()
}
