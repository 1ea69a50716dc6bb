//! The stampede-protection cache on memory and on a real Redis: one computation per miss across
//! callers, values handed over by push, stale windows, failures handed over (and the stale
//! value kept through them), stale writers refused by fencing token, typed errors; on Redis,
//! the fencing counter of a cache key lives as long as its entry; `get` and `insert`
//! ([`lookups`]); the error a failed computation hands each caller ([`shared_errors`]).
//!
//! Each check takes a factory that makes caches on one shared store and backend, as separate
//! instances of a service would have (no shared in-process state between them).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use lock_core::cache::{Cache, CacheError, CacheStatus, OnWaitTimeout};
use lock_core::memory::MemoryResultStore;
use lock_core::{LeaseMode, LockError, MemoryBackend};
use tokio::sync::Notify;
use tokio::time::{timeout, Instant};

use self::lookups::*;
use crate::cache_support::{
    self, answer, assert_got, compute_now, crowd, unique, Origin, NAMESPACE,
};

mod lookups;
mod shared_errors;

const BOUND: Duration = Duration::from_secs(30);

/// Makes caches that share one store and backend, each like another instance.
trait Instances: Send + Sync + 'static {
    fn instance(
        &self,
        configure: fn(lock_core::cache::CacheBuilder) -> lock_core::cache::CacheBuilder,
    ) -> impl std::future::Future<Output = Cache> + Send;
    /// Callers queued for the computation lease of `key`.
    fn lease_waiters(&self, key: &str) -> impl std::future::Future<Output = usize> + Send;
    /// After a check: fails it if the store refused something the check's caches swallowed
    /// (a cache fails open), as a Redis ACL user's server logs its refusals.
    fn after_check(&self) -> impl std::future::Future<Output = ()> + Send {
        async {}
    }
}

fn plain(builder: lock_core::cache::CacheBuilder) -> lock_core::cache::CacheBuilder {
    builder
}

/// 1,000 concurrent callers on a cold key, over two instances: one origin call; everyone gets
/// its value; the second read is a hit.
async fn cold_misses_collapse<I: Instances>(i: &I) {
    let key = unique("cold");
    let (a, b) = (i.instance(plain).await, i.instance(plain).await);
    let origin = Origin::default();
    let answers = crowd(&[a.clone(), b], 1_000, &key, {
        let origin = origin.clone();
        move || origin.call(Duration::from_millis(300), "v1")
    })
    .await;
    let mut computed = 0;
    for got in answers {
        assert_eq!(got.value, b"v1");
        computed += usize::from(got.status == CacheStatus::Computed);
    }
    assert_eq!(origin.calls(), 1, "origin calls for one cold key");
    assert_eq!(computed, 1);
    let hit = a
        .entry(&key)
        .try_get_with(move || origin.call(Duration::ZERO, "v2"))
        .await
        .unwrap();
    assert_got(&hit, CacheStatus::Hit, b"v1");
}

/// A computation that fails is not cached (the next call computes again), unless a negative
/// TTL is set; then callers get the remembered failure without computing.
async fn errors_are_cached_only_when_asked<I: Instances>(i: &I) {
    let cache = i.instance(plain).await;
    let origin = Origin::default();
    for negative in [Duration::ZERO, Duration::from_secs(30)] {
        let key = unique("errors");
        for _ in 0..2 {
            let calls = origin.calls.clone();
            let failed = cache
                .entry(&key)
                .negative_ttl(negative)
                .try_get_with(move || async move {
                    calls.fetch_add(1, Ordering::SeqCst);
                    Err::<Vec<u8>, _>("origin down")
                })
                .await
                .unwrap_err();
            assert!(
                matches!(&failed, CacheError::Compute(_) | CacheError::Elsewhere(_)),
                "{failed}"
            );
            assert!(failed.to_string().contains("origin down"), "{failed}");
        }
    }
    // Two calls without negative caching, one with.
    assert_eq!(origin.calls(), 3);
}

/// A read with a 200 ms fresh window and a long stale-while-revalidate one; the origin
/// notifies `done` when it has answered.
async fn swr_get(
    cache: &Cache,
    key: &str,
    value: &'static str,
    origin: &Origin,
    done: Arc<Notify>,
) -> Result<lock_core::cache::Cached<Vec<u8>>, CacheError<String>> {
    let origin = origin.clone();
    cache
        .entry(key)
        .fresh_for(Duration::from_millis(200))
        .stale_while_revalidate(Duration::from_secs(30))
        .try_get_with(move || async move {
            let value = origin.call(Duration::from_millis(100), value).await;
            done.notify_one();
            value
        })
        .await
}

/// Within stale-while-revalidate the stale value is served at once, and one refresh runs.
async fn stale_is_served_while_one_refresh_runs<I: Instances>(i: &I) {
    let (a, b) = (i.instance(plain).await, i.instance(plain).await);
    let key = unique("swr");
    let origin = Origin::default();
    let first_done = Arc::new(Notify::new());
    swr_get(&a, &key, "old", &origin, first_done.clone())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await; // past fresh, within the stale window
    let refreshed = Arc::new(Notify::new());
    let started = Instant::now();
    let mut stale = Vec::new();
    for n in 0..20 {
        let cache = if n % 2 == 0 { &a } else { &b };
        stale.push(
            swr_get(cache, &key, "new", &origin, refreshed.clone())
                .await
                .unwrap(),
        );
    }
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "stale reads waited for the origin"
    );
    assert!(stale
        .iter()
        .all(|s| s.status == CacheStatus::Stale && s.value == b"old"));
    timeout(BOUND, refreshed.notified())
        .await
        .expect("no refresh ran");
    // The refresh stores before it notifies nothing else: read until the new value shows.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = swr_get(&a, &key, "newer", &origin, Arc::new(Notify::new()))
            .await
            .unwrap();
        if now.value == b"new" {
            assert_eq!(now.status, CacheStatus::Hit);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the refreshed value never showed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(origin.calls(), 2, "one refresh across both instances");
}

/// When computing fails within stale-if-error, the stale value is served instead.
async fn stale_if_error_serves_the_old_value<I: Instances>(i: &I) {
    let cache = i.instance(plain).await;
    let key = unique("sie");
    let entry = || {
        cache
            .entry(&key)
            .fresh_for(Duration::from_millis(100))
            .stale_if_error(Duration::from_secs(30))
    };
    entry()
        .try_get_with(|| async { Ok::<_, String>(b"kept".to_vec()) })
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let served = entry()
        .try_get_with(|| async { Err::<Vec<u8>, _>("origin down".to_owned()) })
        .await
        .unwrap();
    assert_got(&served, CacheStatus::StaleIfError, b"kept");
}

/// A read of `key` fresh for 100 ms, then served within stale-if-error for 30 s.
fn stale_if_error<'a>(cache: &'a Cache, key: &str) -> lock_core::cache::CacheRequest<'a> {
    cache
        .entry(key)
        .fresh_for(Duration::from_millis(100))
        .stale_if_error(Duration::from_secs(30))
}

/// Negative TTL and stale-if-error together: a failed refresh keeps the stale value, served
/// for the negative TTL without computing again (in this instance and the others).
async fn a_failure_keeps_the_stale_value_for_the_negative_window<I: Instances>(i: &I) {
    let (a, b) = (i.instance(plain).await, i.instance(plain).await);
    let key = unique("sie-negative");
    let origin = Origin::default();
    stale_if_error(&a, &key)
        .try_get_with(|| async { Ok::<_, String>(b"kept".to_vec()) })
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    for cache in [&a, &b, &a] {
        let calls = origin.calls.clone();
        let served = stale_if_error(cache, &key)
            .negative_ttl(Duration::from_secs(10))
            .try_get_with(move || async move {
                calls.fetch_add(1, Ordering::SeqCst);
                Err::<Vec<u8>, _>("origin down".to_owned())
            })
            .await
            .unwrap();
        assert_got(&served, CacheStatus::StaleIfError, b"kept");
    }
    assert_eq!(origin.calls(), 1, "computed once per negative window");
}

/// A computation that fails is handed to every caller waiting for it, in every instance:
/// with nothing to fall back on they get the failure, with a value within stale-if-error they
/// get that value; nobody computes it again in turn (no negative TTL is set: later callers do).
async fn waiters_are_handed_a_failure_instead_of_computing_it_again<I: Instances>(i: &I) {
    let caches = [
        i.instance(plain).await,
        i.instance(plain).await,
        i.instance(plain).await,
    ];
    for stale in [false, true] {
        let key = unique("failing-crowd");
        if stale {
            stale_if_error(&caches[0], &key)
                .try_get_with(|| async { Ok::<_, String>(b"kept".to_vec()) })
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        let origin = Origin::default();
        let tasks: Vec<_> = (0..30)
            .map(|n| {
                let (cache, key) = (caches[n % 3].clone(), key.clone());
                let calls = origin.calls.clone();
                async move {
                    stale_if_error(&cache, &key)
                        .try_get_with(move || async move {
                            calls.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(300)).await;
                            Err::<Vec<u8>, _>("origin down".to_owned())
                        })
                        .await
                }
            })
            .map(tokio::spawn)
            .collect();
        for task in tasks {
            match task.await.unwrap() {
                Ok(served) if stale => assert_eq!(
                    (served.status, served.value.as_slice()),
                    (CacheStatus::StaleIfError, &b"kept"[..])
                ),
                Err(failed) if !stale => {
                    assert!(failed.to_string().contains("origin down"), "{failed}")
                }
                other => panic!("stale {stale}: {other:?}"),
            }
        }
        assert_eq!(
            origin.calls(),
            1,
            "stale {stale}: one computation for 30 callers"
        );
    }
}

/// A computing caller that is cancelled mid-compute hands over at once: a waiting caller (in
/// another instance) takes the lease and computes; nobody waits for a TTL.
async fn a_cancelled_computation_hands_over<I: Instances>(i: &I) {
    let (a, b) = (i.instance(plain).await, i.instance(plain).await);
    let key = unique("handover");
    let origin = Origin::default();
    let started = Arc::new(Notify::new());
    let leader = tokio::spawn({
        let (a, key, origin, started) = (a.clone(), key.clone(), origin.clone(), started.clone());
        async move {
            a.entry(&key)
                .try_get_with(move || async move {
                    started.notify_one();
                    origin.call(Duration::from_secs(60), "never").await
                })
                .await
        }
    });
    started.notified().await;
    let waiter = tokio::spawn({
        let (b, key, origin) = (b.clone(), key.clone(), origin.clone());
        async move {
            b.entry(&key)
                .try_get_with(move || origin.call(Duration::from_millis(50), "taken over"))
                .await
                .unwrap()
        }
    });
    cache_support::until_queued(|| i.lease_waiters(&key)).await;
    let cancelled_at = Instant::now();
    leader.abort();
    let got = timeout(BOUND, waiter).await.unwrap().unwrap();
    assert_eq!(got.value, b"taken over");
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(5),
        "{:?}",
        cancelled_at.elapsed()
    );
}

/// A computation whose lease ran out and was taken over cannot overwrite the newer value.
async fn a_stale_writer_is_refused<I: Instances>(i: &I) {
    fn short_lease(builder: lock_core::cache::CacheBuilder) -> lock_core::cache::CacheBuilder {
        builder.lease(LeaseMode::fixed(Duration::from_millis(300)))
    }
    let (slow, fast) = (i.instance(short_lease).await, i.instance(plain).await);
    let key = unique("zombie");
    let zombie = tokio::spawn({
        let (slow, key) = (slow.clone(), key.clone());
        async move {
            slow.entry(&key)
                .try_get_with(|| async {
                    tokio::time::sleep(Duration::from_millis(1_000)).await;
                    Ok::<_, String>(b"old".to_vec())
                })
                .await
                .unwrap()
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await; // the zombie's lease has run out
    let newer = fast
        .entry(&key)
        .wait_at_most(Duration::from_secs(5))
        .try_get_with(|| async { Ok::<_, String>(b"new".to_vec()) })
        .await
        .unwrap();
    assert_got(&newer, CacheStatus::Computed, b"new");
    let zombie = zombie.await.unwrap();
    assert_eq!(zombie.value, b"old", "the zombie returns what it computed");
    let now = answer(&fast, &key, b"unused").await;
    assert_eq!(
        (now.status, now.value.as_slice()),
        (CacheStatus::Hit, &b"new"[..]),
        "the zombie overwrote the newer value"
    );
}

/// A caller whose wait runs out computes without storing (default) or fails (`Fail`).
async fn the_wait_deadline_follows_its_policy<I: Instances>(i: &I) {
    fn failing(builder: lock_core::cache::CacheBuilder) -> lock_core::cache::CacheBuilder {
        builder.wait(Duration::from_millis(200), OnWaitTimeout::Fail)
    }
    let (slow, patient, strict) = (
        i.instance(plain).await,
        i.instance(plain).await,
        i.instance(failing).await,
    );
    let key = unique("deadline");
    let started = Arc::new(Notify::new());
    let _computing = tokio::spawn({
        let (slow, key, started) = (slow.clone(), key.clone(), started.clone());
        async move {
            slow.entry(&key)
                .try_get_with(move || async move {
                    started.notify_one();
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    Ok::<_, String>(b"slow".to_vec())
                })
                .await
        }
    });
    started.notified().await;
    let own = patient
        .entry(&key)
        .wait_at_most(Duration::from_millis(200))
        .try_get_with(|| async { Ok::<_, String>(b"mine".to_vec()) })
        .await
        .unwrap();
    assert_got(&own, CacheStatus::WaitTimedOut, b"mine");
    let err = strict
        .entry(&key)
        .try_get_with(|| async { Ok::<_, String>(b"unused".to_vec()) })
        .await
        .unwrap_err();
    assert!(matches!(err, CacheError::WaitTimedOut(_)), "{err}");
}

/// A value its computation says must not be stored is neither stored nor handed to the callers
/// waiting for it: each computes its own (as a cache must do with an uncacheable response).
async fn uncacheable_values_are_not_shared<I: Instances>(i: &I) {
    let (a, b) = (i.instance(plain).await, i.instance(plain).await);
    let key = unique("private");
    let origin = Origin::default();
    let started = Arc::new(Notify::new());
    let first = tokio::spawn({
        let (a, key, origin, started) = (a.clone(), key.clone(), origin.clone(), started.clone());
        async move {
            a.entry(&key)
                .try_get_with_freshness(move || async move {
                    started.notify_one();
                    let value = origin.call(Duration::from_millis(300), "mine").await?;
                    Ok::<_, String>((value, None))
                })
                .await
                .unwrap()
        }
    });
    started.notified().await;
    let mut waiting = Vec::new();
    for _ in 0..5 {
        let (b, key, origin) = (b.clone(), key.clone(), origin.clone());
        waiting.push(tokio::spawn(async move {
            b.entry(&key)
                .try_get_with_freshness(move || async move {
                    let value = origin.call(Duration::from_millis(10), "theirs").await?;
                    Ok::<_, String>((value, None))
                })
                .await
                .unwrap()
        }));
    }
    assert_eq!(first.await.unwrap().status, CacheStatus::Uncacheable);
    for waiter in waiting {
        let got = waiter.await.unwrap();
        assert_got(&got, CacheStatus::Uncacheable, b"theirs");
    }
    assert_eq!(origin.calls(), 6, "every caller computed its own");
}

/// `recompute()` computes anew over a fresh value, once across the callers recomputing
/// together, and falls back to the stored value when the computation fails.
async fn recompute_replaces_a_fresh_value_once<I: Instances>(i: &I) {
    let (a, b) = (i.instance(plain).await, i.instance(plain).await);
    let key = unique("recompute");
    let origin = Origin::default();
    compute_now(&a, &key, &origin, "v1").await;
    let mut callers = Vec::new();
    for n in 0..10 {
        let cache = if n % 2 == 0 { a.clone() } else { b.clone() };
        let (key, origin) = (key.clone(), origin.clone());
        callers.push(tokio::spawn(async move {
            cache
                .entry(&key)
                .recompute()
                .try_get_with(move || origin.call(Duration::from_millis(200), "v2"))
                .await
                .unwrap()
        }));
    }
    for caller in callers {
        assert_eq!(caller.await.unwrap().value, b"v2");
    }
    assert_eq!(
        origin.calls(),
        2,
        "one computation for the first fill, one for the recompute"
    );
    let read = a
        .entry(&key)
        .try_get_with(|| async { Err::<Vec<u8>, _>("a hit never computes") })
        .await
        .unwrap();
    assert_got(&read, CacheStatus::Hit, b"v2");
    let fallback = b
        .entry(&key)
        .recompute()
        .try_get_with(|| async { Err::<Vec<u8>, _>("origin down") })
        .await
        .unwrap();
    assert_got(&fallback, CacheStatus::StaleIfError, b"v2");
}

/// One task's calls on a key, one right after another, each compute under a lease of their
/// own, however soon each follows the last (the lease of the call before may still be
/// releasing in the background): a failure, then a value that is stored, then a hit; a value,
/// then a recompute that is stored. Re-entering the last call's lease would compute under its
/// fencing token, and the store keeps an outcome only over an older one.
async fn calls_in_a_row_take_leases_of_their_own<I: Instances>(i: &I) {
    let cache = i.instance(plain).await;
    for _ in 0..20 {
        let key = unique("in-a-row");
        let origin = Origin::default();
        let calls = origin.calls.clone();
        cache
            .entry(&key)
            .try_get_with(move || async move {
                calls.fetch_add(1, Ordering::SeqCst);
                Err::<Vec<u8>, _>("origin down")
            })
            .await
            .unwrap_err();
        let get = |value: &'static str| {
            let origin = origin.clone();
            move || origin.call(Duration::ZERO, value)
        };
        let computed = cache.entry(&key).try_get_with(get("v1")).await.unwrap();
        assert_eq!(computed.status, CacheStatus::Computed);
        let hit = cache.entry(&key).try_get_with(get("v1")).await.unwrap();
        assert_eq!((hit.status, origin.calls()), (CacheStatus::Hit, 2), "{key}");
        let recomputed = cache
            .entry(&key)
            .recompute()
            .try_get_with(get("v2"))
            .await
            .unwrap();
        assert_eq!(recomputed.status, CacheStatus::Computed);
        let hit = cache.entry(&key).try_get_with(get("v3")).await.unwrap();
        assert_eq!(
            (hit.status, hit.value.as_slice(), origin.calls()),
            (CacheStatus::Hit, &b"v2"[..], 3),
            "{key}"
        );
    }
}

/// `invalidate` deletes the stored value in every instance's view: the next call computes.
async fn invalidate_makes_the_next_call_compute<I: Instances>(i: &I) {
    let (a, b) = (i.instance(plain).await, i.instance(plain).await);
    let key = unique("invalidate");
    let origin = Origin::default();
    for expected in [CacheStatus::Computed, CacheStatus::Hit] {
        let origin = origin.clone();
        let got = a
            .entry(&key)
            .try_get_with(move || origin.call(Duration::ZERO, "v"))
            .await
            .unwrap();
        assert_eq!(got.status, expected);
    }
    b.invalidate(&key).await.unwrap();
    let after = compute_now(&a, &key, &origin, "v").await;
    assert_eq!(after.status, CacheStatus::Computed);
    assert_eq!(origin.calls(), 2);
    assert!(a.invalidate("").await.unwrap_err().is_invalid_input());
}

/// Bad keys, windows and sizes are typed errors.
async fn bad_input_is_typed<I: Instances>(i: &I) {
    let cache = i.instance(tiny).await;
    let ok = || async { Ok::<_, String>(b"12345".to_vec()) };
    bad_input_is_refused(
        cache.entry("").try_get_with(ok),
        cache.entry("k").fresh_for(Duration::ZERO).try_get_with(ok),
        cache.entry(unique("big")).try_get_with(ok),
    )
    .await;
}

/// A cache's values at most 4 bytes long.
fn tiny(builder: lock_core::cache::CacheBuilder) -> lock_core::cache::CacheBuilder {
    builder.max_value_bytes(4)
}

/// Each call on a cache of [`tiny`] values is refused with its typed error: `empty_key` (the
/// key `""`) as an invalid key, `zero_window` (a zero fresh window) as an invalid duration,
/// `too_large` (a 5-byte value) as too large.
async fn bad_input_is_refused<E: std::fmt::Display>(
    empty_key: impl std::future::Future<Output = Result<impl std::fmt::Debug, CacheError<E>>>,
    zero_window: impl std::future::Future<Output = Result<impl std::fmt::Debug, CacheError<E>>>,
    too_large: impl std::future::Future<Output = Result<impl std::fmt::Debug, CacheError<E>>>,
) {
    let err = empty_key.await.unwrap_err();
    assert!(
        matches!(err, CacheError::Lock(LockError::InvalidKey { .. })),
        "{err}"
    );
    let err = zero_window.await.unwrap_err();
    assert!(
        matches!(err, CacheError::Lock(LockError::InvalidDuration { .. })),
        "{err}"
    );
    let err = too_large.await.unwrap_err();
    assert!(
        matches!(err, CacheError::TooLarge { size: 5, limit: 4 }),
        "{err}"
    );
}

macro_rules! cache_suite {
    ($module:ident, $make:expr) => {
        mod $module {
            use super::*;

            cache_suite!(@tests $make; cold_misses_collapse, errors_are_cached_only_when_asked,
                a_failure_keeps_the_stale_value_for_the_negative_window,
                waiters_are_handed_a_failure_instead_of_computing_it_again,
                stale_is_served_while_one_refresh_runs, stale_if_error_serves_the_old_value,
                a_cancelled_computation_hands_over, a_stale_writer_is_refused,
                the_wait_deadline_follows_its_policy, uncacheable_values_are_not_shared,
                recompute_replaces_a_fresh_value_once, invalidate_makes_the_next_call_compute,
                bad_input_is_typed, calls_in_a_row_take_leases_of_their_own,
                get_reads_and_insert_stores, insert_after_a_computation_wins,
                lookups_have_typed_errors);

            /// On one thread the lease of the call before is still releasing when the next
            /// call asks for it.
            #[tokio::test(flavor = "current_thread")]
            async fn calls_in_a_row_on_one_thread() {
                if let Some(instances) = $make.await {
                    let check = super::calls_in_a_row_take_leases_of_their_own(&instances);
                    timeout(BOUND, check).await.expect("bounded");
                    instances.after_check().await;
                }
            }
        }
    };
    (@tests $make:expr; $($check:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                if let Some(instances) = $make.await {
                    timeout(BOUND, super::$check(&instances)).await.expect("bounded");
                    instances.after_check().await;
                }
            }
        )*
    };
}

struct Memory {
    store: MemoryResultStore,
    backend: MemoryBackend,
}

impl Instances for Memory {
    async fn instance(
        &self,
        configure: fn(lock_core::cache::CacheBuilder) -> lock_core::cache::CacheBuilder,
    ) -> Cache {
        configure(Cache::builder(self.store.clone(), self.backend.clone()).namespace(NAMESPACE))
            .build()
            .unwrap()
    }

    async fn lease_waiters(&self, key: &str) -> usize {
        self.backend.waiter_count(&cache_support::lease_key(key))
    }
}

async fn memory() -> Option<Memory> {
    Some(Memory {
        store: MemoryResultStore::new(),
        backend: MemoryBackend::new(),
    })
}

cache_suite!(on_memory, memory());

#[cfg(feature = "redis")]
#[derive(Clone)]
struct Redis {
    url: String,
    /// A backend with the instances' key prefix, to name their keys.
    names: lock_core::RedisBackend,
    /// The server, when it is the test's own (an ACL user's): kept until the test ends.
    acl: Option<Arc<crate::acl_support::AclRedis>>,
}

#[cfg(feature = "redis")]
impl Redis {
    /// Another instance's backend: a connection of its own, the instances' key prefix.
    async fn backend(&self) -> lock_core::RedisBackend {
        lock_core::RedisBackend::builder(self.url.as_str())
            .key_prefix(self.names.key_prefix())
            .connect()
            .await
            .unwrap()
    }
}

#[cfg(feature = "redis")]
impl Instances for Redis {
    async fn instance(
        &self,
        configure: fn(lock_core::cache::CacheBuilder) -> lock_core::cache::CacheBuilder,
    ) -> Cache {
        configure(cache_support::on_redis(self.backend().await).await)
            .build()
            .unwrap()
    }

    async fn lease_waiters(&self, key: &str) -> usize {
        cache_support::redis_lease_waiters(&self.url, &self.names, key).await
    }

    async fn after_check(&self) {
        if let Some(acl) = &self.acl {
            acl.assert_no_refusals().await;
        }
    }
}

#[cfg(feature = "redis")]
async fn redis() -> Option<Redis> {
    let url = cache_support::redis_url()?;
    let names = lock_core::RedisBackend::connect(&url).await.unwrap();
    Some(Redis {
        url,
        names,
        acl: None,
    })
}

#[cfg(feature = "redis")]
cache_suite!(on_redis, redis());

/// Redis as an ACL user limited to its key prefix (`~svc:*`, `&svc:*`; see `acl_support.rs`)
/// on a server of the test's own: every key and channel of the cache is under the prefix.
#[cfg(feature = "redis")]
async fn redis_acl_user() -> Option<Redis> {
    let acl = crate::acl_support::AclRedis::start("svc").await;
    Some(Redis {
        url: acl.url(),
        names: acl.backend().await,
        acl: Some(Arc::new(acl)),
    })
}

#[cfg(feature = "redis")]
cache_suite!(on_redis_acl_user, redis_acl_user());

/// A Redis Cluster or Sentinel deployment of the stack, each instance on connections of its
/// own.
#[cfg(feature = "redis")]
struct OnDeployment {
    deployment: crate::redis_support::Deployment,
    names: lock_core::RedisBackend,
    admin: lock_core::redis::RedisConnection,
}

#[cfg(feature = "redis")]
impl Instances for OnDeployment {
    async fn instance(
        &self,
        configure: fn(lock_core::cache::CacheBuilder) -> lock_core::cache::CacheBuilder,
    ) -> Cache {
        configure(cache_support::on_redis(self.deployment.backend().await).await)
            .build()
            .unwrap()
    }

    async fn lease_waiters(&self, key: &str) -> usize {
        redis::cmd("ZCARD")
            .arg(self.names.waiters_key(&cache_support::lease_key(key)))
            .query_async(&mut self.admin.clone())
            .await
            .unwrap()
    }
}

#[cfg(feature = "redis")]
async fn on_deployment(
    deployment: Option<crate::redis_support::Deployment>,
) -> Option<OnDeployment> {
    let deployment = deployment?;
    Some(OnDeployment {
        names: deployment.backend().await,
        admin: deployment.admin().await,
        deployment,
    })
}

#[cfg(feature = "redis")]
cache_suite!(
    on_redis_cluster,
    on_deployment(crate::redis_support::Deployment::cluster())
);
#[cfg(feature = "redis")]
cache_suite!(
    on_redis_sentinel,
    on_deployment(crate::redis_support::Deployment::sentinel())
);

/// Redis with the store connected on a backend of its own: not the leases' own backend, so
/// the miss's lease and its second read go as two commands (see `on_redis`: one script).
#[cfg(feature = "redis")]
struct RedisTwoSteps(Redis);

#[cfg(feature = "redis")]
impl Instances for RedisTwoSteps {
    async fn instance(
        &self,
        configure: fn(lock_core::cache::CacheBuilder) -> lock_core::cache::CacheBuilder,
    ) -> Cache {
        let leases = self.0.backend().await;
        let values = self.0.backend().await;
        let store = lock_core::redis::RedisResultStore::from_backend(&values)
            .await
            .unwrap();
        configure(Cache::builder(store, leases).namespace(NAMESPACE))
            .build()
            .unwrap()
    }

    async fn lease_waiters(&self, key: &str) -> usize {
        self.0.lease_waiters(key).await
    }
}

#[cfg(feature = "redis")]
cache_suite!(on_redis_two_steps, async {
    redis().await.map(RedisTwoSteps)
});

/// Another program's value of another type under a cache key (a hash) is not a backend
/// failure: even a cache that fails closed on those answers by computing (the origin once)
/// without storing, on both Redis paths; the hash is left as it was, and the lease is gone
/// afterwards.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_value_under_a_redis_key_is_computed_around() {
    let Some(redis) = redis().await else {
        return;
    };
    timeout(BOUND, async {
        fn closed(builder: lock_core::cache::CacheBuilder) -> lock_core::cache::CacheBuilder {
            builder.on_backend_error(lock_core::cache::OnBackendError::FailClosed)
        }
        let fused = redis.instance(closed).await;
        let apart = RedisTwoSteps(redis.clone()).instance(closed).await;
        let mut raw = redis::Client::open(redis.url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        for cache in [fused, apart] {
            let key = unique("foreign");
            let entry = format!("{}:cache:{{#{NAMESPACE}:{key}}}", redis.names.key_prefix());
            let () = redis::cmd("HSET")
                .arg(&entry)
                .arg("someone")
                .arg("else")
                .query_async(&mut raw)
                .await
                .unwrap();
            let origin = Origin::default();
            let got = compute_now(&cache, &key, &origin, "v").await;
            assert_eq!((got.value.as_slice(), origin.calls()), (&b"v"[..], 1));
            assert_eq!(got.status, CacheStatus::FailOpen);
            let kind: String = redis::cmd("TYPE")
                .arg(&entry)
                .query_async(&mut raw)
                .await
                .unwrap();
            assert_eq!(kind, "hash");
            let lease = redis.names.redis_key(&cache_support::lease_key(&key));
            crate::conformance::eventually("the lease released", || {
                let mut raw = raw.clone();
                let lease = lease.clone();
                async move {
                    let held: bool = redis::cmd("EXISTS")
                        .arg(&lease)
                        .query_async(&mut raw)
                        .await
                        .unwrap();
                    !held
                }
            })
            .await;
        }
    })
    .await
    .expect("bounded");
}

/// On Redis with the store on the leases' own backend, a miss reads the entry once by itself,
/// then once more inside the script that grants its lease (after the grant), and computes:
/// one round trip fewer than the lease and the read sent apart, which a cache with its store
/// on another connection still does (checked too, so the count can tell them apart).
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_miss_reads_again_in_its_lease_script() {
    use futures_util::StreamExt;

    let Some(redis) = redis().await else {
        return;
    };
    timeout(BOUND, async {
        let fused = redis.instance(|builder| builder).await;
        let apart = RedisTwoSteps(redis.clone())
            .instance(|builder| builder)
            .await;
        for (cache, reads_by_themselves, reads_in_scripts) in [(fused, 1, 1), (apart, 2, 0)] {
            let key = unique("fused-read");
            // The entry's Redis key: `<prefix>:cache:{#<namespace>:<key>}`.
            let entry = format!(
                "\"{}:cache:{{#{NAMESPACE}:{key}}}\"",
                redis.names.key_prefix()
            );
            let client = redis::Client::open(redis.url.as_str()).unwrap();
            // Monitoring from here on (the answer to `MONITOR` has come back).
            let mut lines = client
                .get_async_monitor()
                .await
                .unwrap()
                .into_on_message::<String>();
            let got = answer(&cache, &key, b"v").await;
            assert_eq!(got.status, CacheStatus::Computed);
            // Every command on the entry before its store (the store's script, its keys the
            // entry and its watchers, reads the entry too).
            let store = format!("\"2\" {entry}");
            let mut seen = Vec::new();
            while let Some(line) = lines.next().await {
                if line.contains(&store) {
                    break;
                }
                if line.contains(&entry) {
                    seen.push(line);
                }
            }
            let gets = |in_script: bool| {
                seen.iter()
                    .filter(|line| line.contains(&format!("\"GET\" {entry}")))
                    .filter(|line| line.contains("[0 lua]") == in_script)
                    .count()
            };
            assert_eq!(
                (gets(false), gets(true)),
                (reads_by_themselves, reads_in_scripts),
                "reads of the entry by themselves and inside scripts: {seen:#?}"
            );
        }
    })
    .await
    .expect("bounded");
}

/// The cache's values in PostgreSQL (each instance its own connections and listener), its
/// leases on a memory backend the instances share, so the suite can see who queues.
#[cfg(feature = "postgres")]
struct Postgres {
    url: String,
    backend: MemoryBackend,
}

#[cfg(feature = "postgres")]
impl Instances for Postgres {
    async fn instance(
        &self,
        configure: fn(lock_core::cache::CacheBuilder) -> lock_core::cache::CacheBuilder,
    ) -> Cache {
        let store = lock_core::sql::PostgresResultStore::connect(&self.url)
            .await
            .unwrap();
        configure(Cache::builder(store, self.backend.clone()).namespace(NAMESPACE))
            .build()
            .unwrap()
    }

    async fn lease_waiters(&self, key: &str) -> usize {
        self.backend.waiter_count(&cache_support::lease_key(key))
    }
}

#[cfg(feature = "postgres")]
async fn postgres() -> Option<Postgres> {
    let url = lock_testing::server_url("LOCK_TEST_POSTGRES_URL").expect("test server")?;
    Some(Postgres {
        url,
        backend: MemoryBackend::new(),
    })
}

#[cfg(feature = "postgres")]
cache_suite!(on_postgres, postgres());

/// A cache key's fencing counter on Redis goes with its entry (and lease), not a day later:
/// a scan of random URLs leaves nothing behind once their entries are gone.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_keys_fencing_counter_lives_as_long_as_its_entry() {
    let Some(redis) = redis().await else { return };
    let cache = redis.instance(plain).await;
    let key = unique("counter");
    let fresh = Duration::from_secs(2);
    cache
        .entry(&key)
        .fresh_for(fresh)
        .try_get_with(|| async { Ok::<_, String>(b"v".to_vec()) })
        .await
        .unwrap();
    let client = redis::Client::open(redis.url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let counter = format!("lock:{{#{}}}:fence", cache_support::lease_key(&key));
    let pttl: i64 = redis::cmd("PTTL")
        .arg(&counter)
        .query_async(&mut connection)
        .await
        .unwrap();
    let lease = lock_core::cache::DEFAULT_COMPUTE_LEASE.ttl();
    assert!(
        pttl > 0 && pttl <= (fresh + lease).as_millis() as i64,
        "the counter {counter} expires in {pttl} ms; its entry in {fresh:?}"
    );
}

/// A cache key's lock row on PostgreSQL is swept once its short lease has ended, not a day
/// later: a scan of random URLs leaves no rows behind after the next sweep.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_keys_lock_row_is_swept_soon_after_its_lease() {
    let Some(url) = lock_testing::server_url("LOCK_TEST_POSTGRES_URL").expect("test server") else {
        return;
    };
    let backend = lock_core::PostgresBackend::connect(&url).await.unwrap();
    let store = lock_core::sql::PostgresResultStore::connect(&url)
        .await
        .unwrap();
    let cache = Cache::builder(store, backend.clone())
        .namespace(NAMESPACE)
        .build()
        .unwrap();
    let key = unique("row");
    answer(&cache, &key, b"v").await;
    let rows = |free: bool| {
        let (pool, name) = (backend.pool().clone(), cache_support::lease_key(&key));
        async move {
            let sql = if free {
                "SELECT count(*) FROM lock_core_locks WHERE name = $1 AND owner = ''"
            } else {
                "SELECT count(*) FROM lock_core_locks WHERE name = $1"
            };
            sqlx::query_scalar::<_, i64>(sql)
                .bind(name)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    // The lease is released in a task of its own.
    timeout(BOUND, async {
        while rows(true).await == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("released");
    tokio::time::sleep(lock_core::cache::DEFAULT_COMPUTE_LEASE.ttl()).await;
    backend.sweep_expired().await.unwrap();
    assert_eq!(rows(false).await, 0, "the lock row outlived its retention");
}
