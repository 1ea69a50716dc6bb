//! `MultiLock`: several locks taken as one, all or none, in one order whatever order they
//! were given in, lost when any part is, and across backends (memory beside a real Redis when
//! `LOCK_TEST_REDIS_URL` is set; it fails without it when servers are required).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::{LockClient, LockError, LockOwner, LostReason, MemoryBackend, MultiLock};

use crate::conformance::{bounded, eventually, unique_key};

fn memory() -> LockClient {
    LockClient::new(MemoryBackend::new())
}

/// `key` on `client`, taken at once by `owner` (another owner than the test's task).
async fn held_by(client: &LockClient, key: &str, owner: &LockOwner) -> lock_core::LockGuard {
    let guard = client.lock(key).owner(owner).try_acquire().await.unwrap();
    guard.expect("the key is free")
}

/// Whether `owner` can take `key` on `client` at once (and gives it back).
async fn free(client: &LockClient, key: &str, owner: &LockOwner) -> bool {
    match client.lock(key).owner(owner).try_acquire().await.unwrap() {
        Some(guard) => guard.release().await.unwrap(),
        None => false,
    }
}

/// A busy part means no part is held: those taken before it are released again, whether the
/// multi-lock tried once or waited.
#[tokio::test]
async fn a_busy_part_leaves_none_held() {
    let (a, b) = (memory(), memory());
    let [x, y, z] = ["x", "y", "z"].map(|n| unique_key(&format!("busy-{n}")));
    let other = LockOwner::new();
    let blocker = held_by(&a, &y, &other).await;
    // Given out of order: taken x, y, z, so x is held when y turns out busy.
    let multi = || MultiLock::new([b.lock(&z), a.lock(&y), a.lock(&x)]);
    assert!(multi().try_acquire().await.unwrap().is_none());
    let waited = bounded(multi().acquire_within(Duration::from_millis(100))).await;
    assert!(waited.unwrap().is_none());
    assert!(free(&a, &x, &other).await, "x stayed held");
    assert!(free(&b, &z, &other).await, "z was taken");
    assert!(blocker.release().await.unwrap());
    let all = multi().try_acquire().await.unwrap().expect("all free now");
    let keys: Vec<&str> = all.parts().iter().map(|p| p.key().name()).collect();
    assert_eq!(
        keys,
        [x.as_str(), y.as_str(), z.as_str()],
        "the canonical order"
    );
    assert!(all.release().await.unwrap());
}

/// Parts are taken in key order whatever order they were given in: a multi-lock waiting for
/// its first key holds none of the later ones, so another multi-lock over the same keys never
/// holds one it waits for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_in_key_order_holding_nothing_later() {
    let a = memory();
    let (p, q) = (unique_key("order-a"), unique_key("order-b"));
    assert!(p < q);
    let other = LockOwner::new();
    let first = held_by(&a, &p, &other).await;
    let waiting = tokio::spawn({
        let (a, p, q) = (a.clone(), p.clone(), q.clone());
        // Given the later key first.
        async move { MultiLock::new([a.lock(&q), a.lock(&p)]).await }
    });
    eventually("the multi-lock queued for p", || async {
        a.queue_length(lock_core::backend::LeaseKind::Exclusive, &p)
            .await
            .unwrap()
            == 1
    })
    .await;
    assert!(free(&a, &q, &other).await, "q taken before p, out of order");
    assert!(first.release().await.unwrap());
    let both = bounded(waiting).await.unwrap().unwrap();
    assert!(both.release().await.unwrap());
}

/// Two tasks asking for the same two keys in opposite orders, 200 times each, all finish
/// within the bound and are never inside together (the order itself is checked by
/// `waits_in_key_order_holding_nothing_later`: memory locks free at once hide a wrong one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opposite_orders_never_deadlock() {
    let (a, b) = (memory(), memory());
    let (p, q) = (unique_key("order-p"), unique_key("order-q"));
    let inside = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let sections = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..2)
        .map(|i| {
            let (a, b, p, q) = (a.clone(), b.clone(), p.clone(), q.clone());
            let (inside, overlaps, sections) = (inside.clone(), overlaps.clone(), sections.clone());
            tokio::spawn(async move {
                for _ in 0..200 {
                    let parts = if i == 0 {
                        [a.lock(&p), b.lock(&q)]
                    } else {
                        [b.lock(&q), a.lock(&p)]
                    };
                    let guard = MultiLock::new(parts).await.unwrap();
                    if inside.fetch_add(1, Ordering::SeqCst) > 0 {
                        overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                    tokio::task::yield_now().await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    sections.fetch_add(1, Ordering::SeqCst);
                    assert!(guard.release().await.unwrap());
                }
            })
        })
        .collect();
    for task in tasks {
        bounded(task).await.unwrap();
    }
    assert_eq!(sections.load(Ordering::SeqCst), 400);
    assert_eq!(overlaps.load(Ordering::SeqCst), 0);
}

/// The guard's lost signal fires when any one part is lost, naming it.
#[tokio::test]
async fn lost_when_any_part_is() {
    let (a, b) = (memory(), memory());
    let (x, y) = (unique_key("lost-x"), unique_key("lost-y"));
    let guard = MultiLock::new([
        a.lock(&x),
        b.lock(&y)
            .lease(lock_core::LeaseMode::fixed(Duration::from_millis(150))),
    ])
    .try_acquire()
    .await
    .unwrap()
    .expect("free");
    assert!(!guard.is_lost());
    guard.ensure_held().unwrap();
    let lost = bounded(guard.lost()).await;
    assert_eq!(lost.key.name(), y);
    assert_eq!(lost.reason, LostReason::Expired);
    assert!(guard.is_lost());
    assert!(matches!(
        guard.ensure_held(),
        Err(LockError::LeaseLost { .. })
    ));
    // (Just after an expiry the backend may still have the lease for the drift margin, so
    // what the release says of that part is not checked.)
    guard.release().await.unwrap();
    assert!(free(&b, &y, &LockOwner::new()).await);
}

/// No parts, an invalid key and the same lock twice (a read and a write lock of one name are
/// one lock) are typed errors, with nothing left held.
#[tokio::test]
async fn bad_requests_are_typed_errors() {
    let a = memory();
    let x = unique_key("bad-x");
    let empty = MultiLock::new(Vec::new()).try_acquire().await;
    assert!(
        matches!(empty, Err(LockError::InvalidInput { .. })),
        "{empty:?}"
    );
    let twice = MultiLock::new([a.lock(&x), a.lock(&x)]).try_acquire().await;
    assert!(
        matches!(twice, Err(LockError::InvalidInput { .. })),
        "{twice:?}"
    );
    let rw = a.read_write_lock(&x);
    let both_sides = MultiLock::new([rw.read(), rw.write()]).try_acquire().await;
    assert!(
        matches!(both_sides, Err(LockError::InvalidInput { .. })),
        "{both_sides:?}"
    );
    let invalid = MultiLock::new([a.lock(&x), a.lock("")]).try_acquire().await;
    assert!(invalid.is_err(), "an empty key was taken");
    assert!(free(&a, &x, &LockOwner::new()).await);
    // A wait too long to represent is a wait without a deadline, not a panic.
    let long = MultiLock::new([a.lock(&x)])
        .acquire_within(Duration::MAX)
        .await;
    assert!(long.unwrap().expect("free").release().await.unwrap());
    // The same key on two clients is two locks (two servers, say): both are taken, in the
    // order given; the same lock twice among them is still refused.
    let b = memory();
    let two = MultiLock::new([b.lock(&x), a.lock(&x)]).try_acquire().await;
    assert!(two.unwrap().expect("two locks").release().await.unwrap());
    let again = MultiLock::new([a.lock(&x), b.lock(&x), a.lock(&x)])
        .try_acquire()
        .await;
    assert!(
        matches!(again, Err(LockError::InvalidInput { .. })),
        "{again:?}"
    );
}

/// An acquisition dropped while it waits for a later part releases the parts it took.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_acquisition_releases_what_it_took() {
    let a = memory();
    let (x, y) = (unique_key("drop-x"), unique_key("drop-y"));
    let other = LockOwner::new();
    let blocker = held_by(&a, &y, &other).await;
    let waiting = tokio::spawn({
        let (a, x, y) = (a.clone(), x.clone(), y.clone());
        async move { MultiLock::new([a.lock(&x), a.lock(&y)]).await }
    });
    eventually("x taken by the waiting multi-lock", || async {
        !free(&a, &x, &other).await
    })
    .await;
    waiting.abort();
    eventually("x released after the abort", || async {
        free(&a, &x, &other).await
    })
    .await;
    assert!(blocker.release().await.unwrap());
}

/// Parts on two backends, a real Redis and memory: the Redis key exists while held (another
/// owner is refused) and is gone after the release; each part is fenced by its own backend.
#[cfg(feature = "redis")]
#[tokio::test]
async fn parts_on_two_backends() {
    let Some(url) = lock_testing::server_url("LOCK_TEST_REDIS_URL").expect("test server") else {
        return;
    };
    let backend = lock_core::RedisBackend::connect(&url).await.unwrap();
    let (redis, mem) = (LockClient::new(backend.clone()), memory());
    let (x, y) = (unique_key("two-x"), unique_key("two-y"));
    let guard = MultiLock::new([mem.lock(&y), redis.lock(&x)])
        .try_acquire()
        .await
        .unwrap()
        .expect("free");
    let on_redis = guard.part(&x).expect("the Redis part");
    let full = on_redis.key().full().to_owned();
    let admin = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let exists = || {
        let mut admin = admin.clone();
        let key = backend.redis_key(&full);
        async move {
            redis::cmd("EXISTS")
                .arg(key)
                .query_async::<i64>(&mut admin)
                .await
                .unwrap()
        }
    };
    assert_eq!(exists().await, 1);
    let other = LockOwner::new();
    assert!(redis
        .lock(&x)
        .owner(&other)
        .try_acquire()
        .await
        .unwrap()
        .is_none());
    let on_memory = guard.part(&y).expect("the memory part");
    // A later grant of each key is fenced above this one, each by its own backend.
    let (x_fence, y_fence) = (on_redis.fencing_token(), on_memory.fencing_token());
    assert!(guard.release().await.unwrap());
    assert_eq!(exists().await, 0);
    let again = MultiLock::new([redis.lock(&x), mem.lock(&y)])
        .try_acquire()
        .await
        .unwrap()
        .expect("free again");
    assert!(again.part(&x).unwrap().fencing_token() > x_fence);
    assert!(again.part(&y).unwrap().fencing_token() > y_fence);
    assert!(again.release().await.unwrap());
}
