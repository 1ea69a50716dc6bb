//! Redis-specific checks of the fair lock's server-side handoff, the read-write lock, the
//! semaphore and the count-down latch (the shared checks are `primitives_suite!` in
//! `redis.rs`). The server comes from `LOCK_TEST_REDIS_URL`, as in `redis.rs`.

use std::future::{Future, IntoFuture};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lock_core::backend::{AcquireRequest, LeaseKind, LockBackend};
use lock_core::{LockClient, LockGuard, LockKey, OwnerToken, RedisBackend};
use tokio::task::JoinHandle;
use tokio::time::{timeout, Instant};

const NAMESPACE: &str = "prim";
const BOUND: Duration = Duration::from_secs(30);

/// Runs `check` on the Redis server's URL, bounded; does nothing when there is no server (and
/// may be none).
async fn on_redis<F: Future<Output = ()>>(check: impl FnOnce(String) -> F) {
    let Some(url) = lock_testing::server_url("LOCK_TEST_REDIS_URL").expect("test server") else {
        return;
    };
    timeout(BOUND, check(url)).await.expect("bounded");
}

/// A backend of its own (as another process would have) and a client on it.
async fn connect(url: &str, claim: Duration, poll: Duration) -> (RedisBackend, LockClient) {
    let backend = RedisBackend::builder(url)
        .claim_window(claim)
        .poll_cap(poll)
        .connect()
        .await
        .unwrap();
    let client = LockClient::builder(backend.clone())
        .namespace(NAMESPACE)
        .build()
        .unwrap();
    (backend, client)
}

/// A client with a long claim window and poll cap: no timer re-check can stand in for a
/// handoff.
async fn slow(url: &str) -> (RedisBackend, LockClient) {
    connect(url, Duration::from_secs(30), Duration::from_secs(10)).await
}

async fn plain(url: &str) -> (RedisBackend, LockClient) {
    connect(url, Duration::from_secs(2), Duration::from_secs(1)).await
}

fn unique(name: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}:{nanos}:{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Waits (bounded) until `condition` holds: the state waited for lives in Redis.
async fn until<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !condition().await {
        assert!(start.elapsed() < Duration::from_secs(10), "never: {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn queued(client: &LockClient, kind: LeaseKind, key: &str) -> usize {
    client.queue_length(kind, key).await.unwrap()
}

/// Waits (bounded) until `client` sees `n` waiters of `kind` queued for `key`.
async fn until_queued(what: &str, client: &LockClient, kind: LeaseKind, key: &str, n: usize) {
    until(what, || async { queued(client, kind, key).await == n }).await;
}

/// `client` waits for the fair lock `key` in a task of its own, returned once `observer` sees
/// `n` waiters queued.
async fn queue_fair(
    client: LockClient,
    observer: &LockClient,
    key: &str,
    n: usize,
) -> JoinHandle<LockGuard> {
    let waiter = tokio::spawn({
        let key = key.to_owned();
        async move { client.fair_lock(&key).await.unwrap() }
    });
    until_queued("the next waiter queued", observer, LeaseKind::Fair, key, n).await;
    waiter
}

/// Polls `acquire` until `what` holds (`client` sees `n` waiters of `kind` queued for `key`),
/// then leaves it unpolled; it must not be granted meanwhile.
async fn poll_until_queued<F: Future + Unpin>(
    acquire: &mut F,
    what: &str,
    (client, kind, key, n): (&LockClient, LeaseKind, &str, usize),
) {
    tokio::select! {
        _ = acquire => panic!("granted while held"),
        () = until_queued(what, client, kind, key, n) => {}
    }
}

/// The number of members of the sorted set `key`.
async fn zcard(admin: &redis::aio::MultiplexedConnection, key: &str) -> usize {
    redis::cmd("ZCARD")
        .arg(key)
        .query_async(&mut admin.clone())
        .await
        .unwrap()
}

async fn admin(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Eight waiters queued in a known order are granted in that order, one at a time, each woken
/// holding the lock: between queueing and its guard, a waiter sends the one renewal that
/// extends the claim window to its lease, and at most one look besides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_hands_over_in_fifo_order_without_an_acquire_round_trip() {
    on_redis(|url| async move {
        let key = unique("fair-fifo");
        let (_, holder_client) = slow(&url).await;
        let holder = holder_client.fair_lock(&key).await.unwrap();
        let holder_fence = holder.fencing_token();
        let order = Arc::new(Mutex::new(Vec::new()));
        let (inside, overlaps) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let mut waiters = Vec::new();
        for i in 0..8 {
            let (backend, client) = slow(&url).await;
            let counter = backend.clone();
            let queued_at = Arc::new(std::sync::atomic::AtomicU64::new(u64::MAX));
            let (task_key, order, inside, overlaps, mark) = (
                key.clone(),
                order.clone(),
                inside.clone(),
                overlaps.clone(),
                queued_at.clone(),
            );
            waiters.push(tokio::spawn(async move {
                let guard = client
                    .fair_lock(&task_key)
                    .lease(lock_core::LeaseMode::fixed(Duration::from_secs(60)))
                    .await
                    .unwrap();
                let spent = backend
                    .commands_sent()
                    .saturating_sub(mark.load(Ordering::SeqCst));
                if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                order
                    .lock()
                    .unwrap()
                    .push((i, guard.fencing_token(), spent));
                tokio::task::yield_now().await;
                inside.fetch_sub(1, Ordering::SeqCst);
                assert!(guard.release().await.unwrap());
            }));
            until_queued(
                "the waiter queued",
                &holder_client,
                LeaseKind::Fair,
                &key,
                i + 1,
            )
            .await;
            // Its first attempt (the enqueue) has been counted by now.
            queued_at.store(counter.commands_sent(), Ordering::SeqCst);
        }
        holder.release().await.unwrap();
        for waiter in waiters {
            waiter.await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        assert_eq!(
            order.iter().map(|(i, ..)| *i).collect::<Vec<_>>(),
            (0..8).collect::<Vec<_>>(),
            "granted out of arrival order"
        );
        assert_eq!(
            overlaps.load(Ordering::SeqCst),
            0,
            "fair sections overlapped"
        );
        let mut last = holder_fence;
        for (i, fence, spent) in &order {
            assert!(*fence > last, "waiter {i}: fence {fence} not above {last}");
            // One renewal after the wake-up; a nudge that reached a waiter before its turn
            // costs it one more look (`fair_waiter_wakes_holding_the_lock` checks the exact
            // count for one waiter). Never an acquire per predecessor.
            assert!(
                *spent <= 2,
                "waiter {i}: {spent} commands after queueing, more than a renewal and a look"
            );
            last = *fence;
        }
        assert_eq!(queued(&holder_client, LeaseKind::Fair, &key).await, 0);
    })
    .await;
}

/// Counts the commands a woken waiter sends: its enqueue, then exactly one renewal (a fixed
/// lease sets its full length at once), and no acquire round trip after the wake-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_waiter_wakes_holding_the_lock() {
    on_redis(|url| async move {
        let key = unique("fair-handoff");
        let (_, holder_client) = slow(&url).await;
        let (waiter_backend, waiter_client) = slow(&url).await;
        let holder = holder_client.fair_lock(&key).await.unwrap();
        let holder_fence = holder.fencing_token();
        let before = waiter_backend.commands_sent();
        let waiter = tokio::spawn({
            let key = key.clone();
            async move {
                waiter_client
                    .fair_lock(&key)
                    .lease(lock_core::LeaseMode::fixed(Duration::from_secs(60)))
                    .await
                    .unwrap()
            }
        });
        until_queued(
            "the waiter queued",
            &holder_client,
            LeaseKind::Fair,
            &key,
            1,
        )
        .await;
        let wakeups = waiter_backend.wakeups_received();
        holder.release().await.unwrap();
        let guard = waiter.await.unwrap();
        assert_eq!(
            waiter_backend.commands_sent() - before,
            2,
            "enqueue + one renewal; anything more is an acquire after the wake-up"
        );
        assert_eq!(waiter_backend.wakeups_received(), wakeups + 1);
        assert!(
            guard.fencing_token() > holder_fence,
            "the handoff's own fence"
        );
        assert!(
            guard.remaining() > Duration::from_secs(50),
            "extended to the whole lease"
        );
        guard.release().await.unwrap();
    })
    .await;
}

/// A waiter whose future is dropped after the lock was handed to it releases it at once and
/// hands it on: the next waiter does not wait out the claim window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_waiter_after_handoff_passes_the_lock_on_at_once() {
    on_redis(|url| async move {
        let key = unique("fair-dropped");
        let (_, a) = slow(&url).await;
        let (_, b) = slow(&url).await;
        let (_, c) = slow(&url).await;
        let holder = a.fair_lock(&key).await.unwrap();
        // B's acquisition is polled until it queues, then left unpolled: the handoff reaches
        // its process while nobody runs the future.
        let mut parked = b.fair_lock(&key).into_future();
        poll_until_queued(&mut parked, "B queued", (&a, LeaseKind::Fair, &key, 1)).await;
        let next = queue_fair(c, &a, &key, 2).await;
        holder.release().await.unwrap();
        // The release handed the lock to B (B's entry left the queue).
        until_queued("handed to B", &a, LeaseKind::Fair, &key, 1).await;
        let dropped = Instant::now();
        drop(parked);
        let turn = next.await.unwrap();
        assert!(
            dropped.elapsed() < Duration::from_secs(3),
            "waited {:?}: the claim window (30 s) ran out instead",
            dropped.elapsed()
        );
        turn.release().await.unwrap();
    })
    .await;
}

/// A waiter whose process died (its backend and subscription are gone, its queue entry left
/// behind, as after SIGKILL) is skipped: the publish reaches nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_waiter_process_is_skipped() {
    on_redis(|url| async move {
        let key = unique("fair-dead");
        let (_, a) = slow(&url).await;
        let (_, c) = slow(&url).await;
        let holder = a.fair_lock(&key).await.unwrap();
        let dead = RedisBackend::builder(&url).connect().await.unwrap();
        let lock_key = LockKey::new(NAMESPACE, &key).unwrap();
        let request = AcquireRequest::new(
            &lock_key,
            OwnerToken::random().unwrap(),
            Duration::from_secs(30),
            None,
        )
        .with_kind(LeaseKind::Fair);
        let mut doomed = Box::pin(LockBackend::acquire(&dead, request));
        poll_until_queued(
            &mut doomed,
            "the doomed waiter queued",
            (&a, LeaseKind::Fair, &key, 1),
        )
        .await;
        // SIGKILL: none of its clean-up runs, its connections close.
        #[allow(clippy::mem_forget)] // the test's stand-in for a killed process
        std::mem::forget(doomed);
        drop(dead);
        let mut admin = admin(&url).await;
        let queue_key = format!("lock:fair:{{#{NAMESPACE}:{key}}}:queue");
        until("its subscription closed", || {
            let (mut admin, queue_key) = (admin.clone(), queue_key.clone());
            async move {
                let channels: Vec<String> = redis::cmd("PUBSUB")
                    .arg("CHANNELS")
                    .arg("lock:wake:*")
                    .query_async(&mut admin)
                    .await
                    .unwrap();
                let entries: Vec<String> = redis::cmd("ZRANGE")
                    .arg(&queue_key)
                    .arg(0)
                    .arg(0)
                    .query_async(&mut admin)
                    .await
                    .unwrap();
                let client = entries[0].split(':').next().unwrap().to_owned();
                !channels.contains(&format!("lock:wake:{client}"))
            }
        })
        .await;
        let next = queue_fair(c, &a, &key, 2).await;
        let released = Instant::now();
        holder.release().await.unwrap();
        let turn = next.await.unwrap();
        assert!(
            released.elapsed() < Duration::from_secs(2),
            "{:?}",
            released.elapsed()
        );
        turn.release().await.unwrap();
        let _: () = redis::cmd("PING").query_async(&mut admin).await.unwrap();
        assert_eq!(queued(&a, LeaseKind::Fair, &key).await, 0);
    })
    .await;
}

/// A waiter that was handed the lock but never claims it (paused, cut off) costs the queue the
/// claim window, then the next waiter's re-check moves the queue on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unclaimed_handoff_expires_after_the_claim_window() {
    on_redis(|url| async move {
        let key = unique("fair-claim");
        let claim = Duration::from_millis(400);
        let (_, a) = connect(&url, claim, Duration::from_secs(1)).await;
        let (_, b) = connect(&url, claim, Duration::from_secs(1)).await;
        let (_, c) = connect(&url, claim, Duration::from_secs(1)).await;
        let holder = a.fair_lock(&key).await.unwrap();
        let mut paused = b.fair_lock(&key).into_future();
        poll_until_queued(&mut paused, "B queued", (&a, LeaseKind::Fair, &key, 1)).await;
        let next = queue_fair(c, &a, &key, 2).await;
        let released = Instant::now();
        holder.release().await.unwrap();
        let turn = next.await.unwrap();
        let waited = released.elapsed();
        assert!(
            waited >= claim - Duration::from_millis(50),
            "B's claim was skipped: {waited:?}"
        );
        assert!(
            waited < claim + Duration::from_secs(1),
            "the queue stalled: {waited:?}"
        );
        turn.release().await.unwrap();
        drop(paused);
    })
    .await;
}

/// Readers on separate clients share; writers exclude everyone, counted by the resource.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rw_writers_exclude_readers_and_readers_share() {
    on_redis(|url| async move {
        let key = unique("rw-count");
        let readers = Arc::new(AtomicUsize::new(0));
        let writers = Arc::new(AtomicUsize::new(0));
        let (violations, max_readers) =
            (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let mut tasks = Vec::new();
        for t in 0..6 {
            let (_, client) = plain(&url).await;
            let (key, readers, writers, violations, max_readers) = (
                key.clone(),
                readers.clone(),
                writers.clone(),
                violations.clone(),
                max_readers.clone(),
            );
            tasks.push(tokio::spawn(async move {
                let rw = client.read_write_lock(&key);
                for i in 0..20 {
                    if (t + i) % 4 == 0 {
                        let guard = rw.write().await.unwrap();
                        if writers.fetch_add(1, Ordering::SeqCst) != 0
                            || readers.load(Ordering::SeqCst) != 0
                        {
                            violations.fetch_add(1, Ordering::SeqCst);
                        }
                        tokio::task::yield_now().await;
                        writers.fetch_sub(1, Ordering::SeqCst);
                        guard.release().await.unwrap();
                    } else {
                        let guard = rw.read().await.unwrap();
                        let now = readers.fetch_add(1, Ordering::SeqCst) + 1;
                        max_readers.fetch_max(now, Ordering::SeqCst);
                        if writers.load(Ordering::SeqCst) != 0 {
                            violations.fetch_add(1, Ordering::SeqCst);
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        readers.fetch_sub(1, Ordering::SeqCst);
                        guard.release().await.unwrap();
                    }
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(
            violations.load(Ordering::SeqCst),
            0,
            "a writer overlapped someone"
        );
        assert!(
            max_readers.load(Ordering::SeqCst) > 1,
            "readers never shared"
        );
    })
    .await;
}

/// A waiting writer blocks newer readers; when it is done the readers queued behind it enter
/// together (each granted reader wakes the next); a writer may downgrade.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rw_queued_readers_enter_together_after_the_writer() {
    on_redis(|url| async move {
        let key = unique("rw-chain");
        let (_, a) = plain(&url).await;
        let reader = a.read_write_lock(&key).read().await.unwrap();
        let (_, w) = plain(&url).await;
        let writer = tokio::spawn({
            let key = key.clone();
            async move { w.read_write_lock(&key).write().await.unwrap() }
        });
        until_queued("the writer queued", &a, LeaseKind::Read, &key, 1).await;
        let (_, late) = plain(&url).await;
        assert!(
            late.read_write_lock(&key)
                .read()
                .try_acquire()
                .await
                .unwrap()
                .is_none(),
            "a newer reader overtook the waiting writer"
        );
        let both_in = Arc::new(tokio::sync::Barrier::new(3));
        let mut readers = Vec::new();
        for n in 0..3 {
            let (_, client) = plain(&url).await;
            let (task_key, both_in) = (key.clone(), both_in.clone());
            readers.push(tokio::spawn(async move {
                let guard = client.read_write_lock(&task_key).read().await.unwrap();
                both_in.wait().await; // all three hold a read share at once
                guard.release().await.unwrap();
            }));
            until_queued("the reader queued", &a, LeaseKind::Read, &key, 2 + n).await;
        }
        reader.release().await.unwrap();
        let writer = writer.await.unwrap();
        writer.release().await.unwrap();
        for reader in readers {
            reader.await.unwrap();
        }
        assert_eq!(queued(&a, LeaseKind::Read, &key).await, 0);
    })
    .await;
}

/// A writer taking a read share (to downgrade) is blocked neither by its own write lease nor
/// by the writer queued behind it; that writer waits for the read share too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rw_downgrade_jumps_the_queue() {
    on_redis(|url| async move {
        let key = unique("rw-downgrade");
        let (_, a) = plain(&url).await;
        let (_, b) = plain(&url).await;
        let (_, probe) = plain(&url).await;
        let rw = a.read_write_lock(&key);
        let write = rw.write().await.unwrap();
        let next_writer = tokio::spawn({
            let key = key.clone();
            async move { b.read_write_lock(&key).write().await.unwrap() }
        });
        until_queued("the other writer queued", &a, LeaseKind::Write, &key, 1).await;
        let read = rw
            .read()
            .try_acquire()
            .await
            .unwrap()
            .expect("downgrade jumps the queue");
        assert!(
            read.fencing_token() > write.fencing_token(),
            "one counter for reads and writes"
        );
        write.release().await.unwrap();
        assert!(
            probe
                .read_write_lock(&key)
                .write()
                .try_acquire()
                .await
                .unwrap()
                .is_none(),
            "the downgraded read share excludes writers"
        );
        assert!(
            !next_writer.is_finished(),
            "a writer got in beside the read share"
        );
        read.release().await.unwrap();
        next_writer.await.unwrap().release().await.unwrap();
    })
    .await;
}

/// A reader that crashed (stopped renewing) frees only its own share when its lease runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rw_crashed_reader_frees_only_its_share() {
    on_redis(|url| async move {
        let key = unique("rw-crash");
        let (_, a) = plain(&url).await;
        let (_, b) = plain(&url).await;
        let (_, w) = plain(&url).await;
        let crashed = a
            .read_write_lock(&key)
            .read()
            .lease(lock_core::LeaseMode::watchdog(Duration::from_millis(300)))
            .await
            .unwrap();
        let alive = b.read_write_lock(&key).read().await.unwrap();
        crashed.abandon();
        tokio::time::sleep(Duration::from_millis(600)).await; // past the crashed lease
        assert!(
            w.read_write_lock(&key)
                .write()
                .try_acquire()
                .await
                .unwrap()
                .is_none(),
            "the live reader's share went too"
        );
        assert!(!alive.is_lost());
        alive.release().await.unwrap();
        let writer = w.read_write_lock(&key).write().try_acquire().await.unwrap();
        assert!(writer.is_some(), "the crashed share was not freed");
    })
    .await;
}

/// Many tasks on separate clients never hold more than N permits, counted by the resource;
/// resizing up and down never over-grants.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_never_over_grants_while_resized() {
    on_redis(|url| async move {
        let key = unique("sem-count");
        let (_, admin_client) = plain(&url).await;
        let semaphore = admin_client.semaphore(&key, 3);
        semaphore.set_permits(3).await.unwrap();
        let in_use = Arc::new(AtomicUsize::new(0));
        let limit = Arc::new(AtomicUsize::new(3));
        let violations = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for t in 0..8 {
            let (_, client) = plain(&url).await;
            let (key, in_use, limit, violations, done) = (
                key.clone(),
                in_use.clone(),
                limit.clone(),
                violations.clone(),
                done.clone(),
            );
            tasks.push(tokio::spawn(async move {
                let semaphore = client.semaphore(&key, 3);
                for i in 0..15 {
                    let count = 1 + u32::from((t + i) % 3 == 0);
                    let permit = semaphore.acquire(count).await.unwrap();
                    let now = in_use.fetch_add(count as usize, Ordering::SeqCst) + count as usize;
                    if now > limit.load(Ordering::SeqCst).max(3) {
                        violations.fetch_add(1, Ordering::SeqCst);
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    in_use.fetch_sub(count as usize, Ordering::SeqCst);
                    permit.release().await.unwrap();
                    done.fetch_add(1, Ordering::SeqCst);
                }
            }));
        }
        // Grow, then shrink while they run (after 20 and 50 of the 120 sections): the checker
        // allows the larger size during a change.
        until("20 sections done", || async {
            done.load(Ordering::SeqCst) >= 20
        })
        .await;
        limit.store(5, Ordering::SeqCst);
        semaphore.set_permits(5).await.unwrap();
        until("50 sections done", || async {
            done.load(Ordering::SeqCst) >= 50
        })
        .await;
        semaphore.set_permits(3).await.unwrap();
        // Permits granted under the larger size may still be out, some not yet counted in
        // `in_use` (acquired, not yet added): the server's count says when none is left.
        until("back within 3", || async {
            semaphore.state().await.unwrap().held <= 3
        })
        .await;
        limit.store(3, Ordering::SeqCst);
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(
            violations.load(Ordering::SeqCst),
            0,
            "more permits out than the size"
        );
        let state = semaphore.state().await.unwrap();
        assert_eq!((state.permits, state.held), (Some(3), 0));
        // Shrinking never takes permits away, and nobody gets one above the new size.
        let two = semaphore.acquire(2).await.unwrap();
        semaphore.set_permits(1).await.unwrap();
        assert!(semaphore.acquire(1).try_acquire().await.unwrap().is_none());
        two.release().await.unwrap();
        assert!(semaphore.acquire(1).try_acquire().await.unwrap().is_some());
        assert!(semaphore
            .acquire(2)
            .try_acquire()
            .await
            .unwrap_err()
            .is_invalid_input());
    })
    .await;
}

/// Waiters on other clients are pushed when the latch reaches zero; a dropped wait leaves
/// nothing in Redis; a latch expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_pushes_waiters_and_expires() {
    on_redis(|url| async move {
        let key = unique("latch");
        // A long poll cap: only the push can open the waits in time.
        let (_, a) = connect(&url, Duration::from_secs(2), Duration::from_secs(20)).await;
        let latch = a.latch(&key);
        assert!(latch.try_set_count(2).await.unwrap());
        assert!(!latch.try_set_count(5).await.unwrap(), "running: not reset");
        let mut waits = Vec::new();
        for _ in 0..3 {
            let (_, client) = connect(&url, Duration::from_secs(2), Duration::from_secs(20)).await;
            let key = key.clone();
            waits.push(tokio::spawn(async move {
                client.latch(&key).wait().await.unwrap();
                Instant::now()
            }));
        }
        let admin = admin(&url).await;
        let waiters_key = format!("lock:latch:{{#{NAMESPACE}:{key}}}:waiters");
        until("the waiters registered", || async {
            zcard(&admin, &waiters_key).await == 3
        })
        .await;
        assert_eq!(latch.count_down().await.unwrap(), 1);
        assert_eq!(latch.count().await.unwrap(), 1);
        let opened = Instant::now();
        assert_eq!(latch.count_down().await.unwrap(), 0);
        for wait in waits {
            let woke = wait.await.unwrap();
            assert!(
                woke.duration_since(opened) < Duration::from_secs(2),
                "not pushed"
            );
        }
        // A wait that is dropped leaves nothing behind.
        assert!(latch.try_set_count(1).await.unwrap());
        assert!(!latch.wait_within(Duration::from_millis(30)).await.unwrap());
        until("the dropped wait left", || async {
            zcard(&admin, &waiters_key).await == 0
        })
        .await;
        // Expiry: a latch nobody counts down opens when it expires.
        let short = a
            .latch(unique("latch-expiry"))
            .expire_after(Duration::from_millis(200));
        assert!(short.try_set_count(3).await.unwrap());
        assert_eq!(short.count().await.unwrap(), 3);
        assert!(short.wait_within(Duration::from_secs(3)).await.unwrap());
        assert_eq!(short.count().await.unwrap(), 0);
    })
    .await;
}

/// The operator's view of a semaphore on Redis: each permit holder's label, and a forced
/// release of one holder pushed to it (well before its next renewal) while the other keeps
/// its permits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_holder_shows_its_label_and_hears_of_its_revocation_by_push() {
    use lock_core::backend::Primitive;
    use lock_core::{HolderLabel, LeaseMode, LostReason};

    on_redis(|url| async move {
        let labelled = |who: &str| {
            let url = url.clone();
            let label = HolderLabel::from_process().with("who", who).unwrap();
            async move {
                LockClient::builder(RedisBackend::connect(&url).await.unwrap())
                    .namespace(NAMESPACE)
                    .label(label)
                    .build()
                    .unwrap()
            }
        };
        let (a, b) = (labelled("a").await, labelled("b").await);
        let name = format!("sem-operator:{}", OwnerToken::random().unwrap());
        let lease = LeaseMode::watchdog(Duration::from_secs(30));
        let first = a.semaphore(&name, 3).acquire(2).lease(lease).await.unwrap();
        let second = b.semaphore(&name, 3).acquire(1).lease(lease).await.unwrap();
        let admin = a.admin();
        let seen = admin
            .inspect_primitive(Primitive::Semaphore, &name)
            .await
            .unwrap();
        let mut whos: Vec<_> = seen
            .holders
            .iter()
            .map(|h| {
                h.label
                    .as_ref()
                    .and_then(|l| l.get("who"))
                    .unwrap_or("?")
                    .to_owned()
            })
            .collect();
        whos.sort();
        assert_eq!(whos, ["a", "b"]);
        assert_eq!(seen.permits.map(|p| (p.in_use, p.size)), Some((3, Some(3))));
        let started = Instant::now();
        let record = admin
            .force_release_holder(
                Primitive::Semaphore,
                &name,
                Some(first.owner_token()),
                "drill",
                "ops",
            )
            .await
            .unwrap();
        assert_eq!(
            record.old_label.as_ref().and_then(|l| l.get("who")),
            Some("a")
        );
        let reason = timeout(Duration::from_secs(2), first.lost())
            .await
            .expect("not pushed");
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(matches!(reason, LostReason::Revoked { .. }), "{reason:?}");
        assert!(!second.is_lost());
        let seen = admin
            .inspect_primitive(Primitive::Semaphore, &name)
            .await
            .unwrap();
        assert_eq!(seen.permits.map(|p| p.in_use), Some(1));
        second.release().await.unwrap();
    })
    .await;
}
