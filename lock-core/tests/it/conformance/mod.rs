//! The conformance suite: one set of behaviour checks every backend must pass.
//!
//! Each backend's test file implements [`Harness`] and expands [`conformance_suite!`], which
//! makes one `#[tokio::test]` per check. A check that needs a capability the backend says it
//! lacks ([`lock_core::Capabilities`]) returns early and prints that it was skipped.

mod dropped;
pub(crate) mod operator;
mod scoped;

pub(crate) use dropped::{dropped_acquires_leave_nothing, dropped_releases_still_release};
pub(crate) use operator::{
    a_latch_shows_its_count_until_it_opens, force_release_of_one_holder_touches_only_it,
    force_release_refuses_what_is_not_held, force_release_revokes_and_hands_over,
    inspect_shows_holder_and_waiters, listing_pages_through_held_keys,
};
pub(crate) use scoped::{shutdown_releases_every_lease, with_lock_releases_on_every_path};

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lock_core::{LockClient, LockError, LostReason, MAX_KEY_LEN};
use tokio::time::{timeout, Instant};

/// How a backend's test file gives the suite clients and fault injection.
pub(crate) trait Harness: Send + Sync + 'static {
    /// A new client on its own backend connection (as another process would have), locking the
    /// same store.
    fn client(&self) -> impl std::future::Future<Output = LockClient> + Send;
    /// Deletes the lock `full_key` in the store, behind its holder's back.
    fn delete_behind(&self, full_key: &str) -> impl std::future::Future<Output = ()> + Send;
    /// Waiter entries the store keeps for `full_key`.
    fn queued(&self, full_key: &str) -> impl std::future::Future<Output = usize> + Send;
}

/// Every check is bounded: a hang is a failure, not a stuck CI run.
const BOUND: Duration = Duration::from_secs(30);

/// A client on `backend` in the suites' namespace (`conformance`), labelled as this process
/// plus `client=<n>`, a number no other client of this process has (so the operator's checks
/// can tell clients apart).
pub(crate) fn client_on(backend: impl lock_core::LockBackend) -> LockClient {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let label = lock_core::HolderLabel::from_process()
        .with("client", &n.to_string())
        .unwrap();
    LockClient::builder(backend)
        .namespace("conformance")
        .label(label)
        .build()
        .unwrap()
}

/// `connect` (to a server that is not there, or does not speak its protocol) fails with an
/// unavailable error, within 5 s: typed and fail-closed, quickly.
#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper"))]
pub(crate) async fn unavailable_quickly<T>(
    connect: impl std::future::Future<Output = lock_core::Result<T>>,
) -> lock_core::LockError {
    let started = tokio::time::Instant::now();
    let Err(err) = connect.await else {
        panic!("connected");
    };
    assert!(err.is_unavailable(), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    err
}

/// `connect` is refused as a bad setting ([`LockError::InvalidConfig`](lock_core::LockError)).
#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper"))]
pub(crate) async fn refused_as_config<T>(
    connect: impl std::future::Future<Output = lock_core::Result<T>>,
) {
    let Err(err) = connect.await else {
        panic!("connected");
    };
    assert!(
        matches!(err, lock_core::LockError::InvalidConfig(_)),
        "{err}"
    );
}

/// A key no earlier run used (Redis keeps fencing counters).
pub(crate) fn unique_key(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{name}:{}:{nanos}:{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

pub(crate) async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    bounded_for(BOUND, future).await
}

/// [`bounded`] with a longer bound, for checks that run many rounds.
pub(crate) async fn bounded_for<F: std::future::Future>(bound: Duration, future: F) -> F::Output {
    timeout(bound, future)
        .await
        .expect("check ran past its bound")
}

/// Waits (bounded) until `condition` holds; the signal being waited for lives in the store,
/// which offers nothing to subscribe to.
pub(crate) async fn eventually<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !condition().await {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "never happened: {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Tasks on separate clients contend for one key; overlapping critical sections are counted.
pub(crate) async fn exclusion<H: Harness>(h: &H) {
    bounded(async {
        let key = unique_key("exclusion");
        let inside = Arc::new(AtomicUsize::new(0));
        let violations = Arc::new(AtomicUsize::new(0));
        let sections = Arc::new(AtomicUsize::new(0));
        let last_fence = Arc::new(Mutex::new(0u64));
        let mut tasks = Vec::new();
        for _ in 0..6 {
            let client = h.client().await;
            let (key, inside, violations, sections, last_fence) = (
                key.clone(),
                inside.clone(),
                violations.clone(),
                sections.clone(),
                last_fence.clone(),
            );
            tasks.push(tokio::spawn(async move {
                for _ in 0..15 {
                    let guard = client.lock(&key).await.unwrap();
                    if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                        violations.fetch_add(1, Ordering::SeqCst);
                    }
                    {
                        let mut last = last_fence.lock().unwrap();
                        assert!(guard.fencing_token().get() > *last, "fence went backwards");
                        *last = guard.fencing_token().get();
                    }
                    tokio::task::yield_now().await;
                    tokio::time::sleep(Duration::from_micros(200)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    sections.fetch_add(1, Ordering::SeqCst);
                    assert!(guard.release().await.unwrap());
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(sections.load(Ordering::SeqCst), 90);
        assert_eq!(
            violations.load(Ordering::SeqCst),
            0,
            "critical sections overlapped"
        );
    })
    .await;
}

/// A held key is `None` for another owner, at once.
pub(crate) async fn try_on_held_key<H: Harness>(h: &H) {
    bounded(async {
        let key = unique_key("try");
        let (a, b) = (h.client().await, h.client().await);
        let guard = a.lock(&key).await.unwrap();
        let start = Instant::now();
        assert!(b.lock(&key).try_acquire().await.unwrap().is_none());
        assert!(start.elapsed() < Duration::from_secs(1));
        guard.release().await.unwrap();
        let again = b.lock(&key).try_acquire().await.unwrap();
        assert!(again.is_some(), "free after release");
    })
    .await;
}

/// Waiting up to D on a held key gives `None` after about D.
pub(crate) async fn wait_timeout<H: Harness>(h: &H) {
    bounded(async {
        let key = unique_key("wait-timeout");
        let (a, b) = (h.client().await, h.client().await);
        let _guard = a.lock(&key).await.unwrap();
        let start = Instant::now();
        let outcome = b
            .lock(&key)
            .acquire_within(Duration::from_millis(150))
            .await
            .unwrap();
        let waited = start.elapsed();
        assert!(outcome.is_none());
        assert!(
            waited >= Duration::from_millis(150),
            "gave up early: {waited:?}"
        );
        assert!(waited < Duration::from_secs(2), "overslept: {waited:?}");
    })
    .await;
}

/// A waiter holds the lock within a few ms of the release, not after a poll interval.
pub(crate) async fn wakeup_latency<H: Harness>(h: &H) {
    if !h.client().await.capabilities().push_wakeups {
        eprintln!("skipped: backend has no push wake-ups");
        return;
    }
    bounded(async {
        let key = unique_key("wakeup");
        let (a, b) = (h.client().await, h.client().await);
        let mut worst = Duration::ZERO;
        for _ in 0..5 {
            let guard = a.lock(&key).await.unwrap();
            let (tx, rx) = tokio::sync::oneshot::channel();
            let waiter = tokio::spawn({
                let (b, key) = (b.clone(), key.clone());
                async move {
                    let guard = b.lock(&key).await.unwrap();
                    let at = Instant::now();
                    tx.send(()).ok();
                    guard.release().await.unwrap();
                    at
                }
            });
            // Let the waiter queue up first; the wake-up, not its first try, is measured.
            eventually("the waiter queued", || async {
                h.queued(guard.key().full()).await > 0
            })
            .await;
            let released = Instant::now();
            guard.release().await.unwrap();
            rx.await.unwrap();
            let acquired = waiter.await.unwrap();
            worst = worst.max(acquired.saturating_duration_since(released));
        }
        eprintln!("worst release-to-acquire latency: {worst:?}");
        assert!(
            worst < Duration::from_millis(100),
            "woken by polling, not push: {worst:?}"
        );
    })
    .await;
}

/// A holder that dies without releasing loses the key when its lease runs out.
pub(crate) async fn crashed_holder_expires<H: Harness>(h: &H) {
    if !h.client().await.capabilities().lease_expiry {
        eprintln!("skipped: backend leases do not expire");
        return;
    }
    bounded(async {
        let key = unique_key("crash");
        let (a, b) = (h.client().await, h.client().await);
        let ttl = Duration::from_millis(400);
        let guard = a
            .lock(&key)
            .lease(lock_core::LeaseMode::watchdog(ttl))
            .await
            .unwrap();
        let crashed_at = Instant::now();
        guard.abandon();
        assert!(
            b.lock(&key).try_acquire().await.unwrap().is_none(),
            "held right after the crash"
        );
        let next = b
            .lock(&key)
            .acquire_within(Duration::from_secs(5))
            .await
            .unwrap();
        assert!(next.is_some(), "the lease never expired");
        let after = crashed_at.elapsed();
        assert!(
            after < ttl + Duration::from_millis(600),
            "expired late: {after:?}"
        );
    })
    .await;
}

/// The watchdog keeps a short lease alive for many TTLs.
pub(crate) async fn watchdog_holds_past_ttl<H: Harness>(h: &H) {
    bounded(async {
        let key = unique_key("watchdog");
        let (a, b) = (h.client().await, h.client().await);
        let ttl = Duration::from_millis(300);
        let guard = a
            .lock(&key)
            .lease(lock_core::LeaseMode::watchdog(ttl))
            .await
            .unwrap();
        // Time passing is what is tested here.
        let held_until = Instant::now() + ttl * 4;
        while Instant::now() < held_until {
            assert!(
                b.lock(&key).try_acquire().await.unwrap().is_none(),
                "lease ran out"
            );
            tokio::time::sleep(ttl / 4).await;
        }
        assert!(!guard.is_lost());
        assert!(guard.release().await.unwrap(), "still held after 4 TTLs");
    })
    .await;
}

/// Deleting the lock behind the holder fires `lost()` within a renewal period.
pub(crate) async fn lost_fires_on_delete<H: Harness>(h: &H) {
    bounded(async {
        let key = unique_key("lost");
        let a = h.client().await;
        let ttl = Duration::from_millis(600);
        let guard = a
            .lock(&key)
            .lease(lock_core::LeaseMode::watchdog(ttl))
            .await
            .unwrap();
        h.delete_behind(guard.key().full()).await;
        let reason = timeout(ttl, guard.lost())
            .await
            .expect("lost() did not fire");
        assert_eq!(reason, LostReason::NotOwner);
        assert!(guard.is_lost());
        assert!(matches!(
            guard.ensure_held(),
            Err(LockError::LeaseLost { .. })
        ));
        assert!(
            !guard.release().await.unwrap(),
            "released a lock it no longer held"
        );
    })
    .await;
}

/// A former holder's release and extend change nothing for the current holder.
pub(crate) async fn non_owner_refused<H: Harness>(h: &H) {
    bounded(async {
        let key = unique_key("non-owner");
        let (a, b, c) = (h.client().await, h.client().await, h.client().await);
        let stale = a
            .lock(&key)
            .lease(lock_core::LeaseMode::fixed(Duration::from_millis(150)))
            .await
            .unwrap();
        let current = b
            .lock(&key)
            .acquire_within(Duration::from_secs(5))
            .await
            .unwrap()
            .expect("the fixed lease ran out");
        assert!(current.fencing_token() > stale.fencing_token());
        timeout(Duration::from_secs(1), stale.lost())
            .await
            .expect("stale holder not told");
        assert!(stale.extend(Duration::from_secs(5)).await.is_err() || stale.is_lost());
        assert!(
            !stale.release().await.unwrap(),
            "stale release reported success"
        );
        assert!(
            c.lock(&key).try_acquire().await.unwrap().is_none(),
            "stale release freed the lock"
        );
        assert!(current.extend(Duration::from_secs(5)).await.unwrap());
        assert!(current.release().await.unwrap());
    })
    .await;
}

/// Fencing tokens strictly increase across holders and clients.
pub(crate) async fn fencing_increases<H: Harness>(h: &H) {
    bounded(async {
        let key = unique_key("fence");
        let clients = [h.client().await, h.client().await, h.client().await];
        let mut last = 0;
        for round in 0..12 {
            let guard = clients[round % 3].lock(&key).await.unwrap();
            let fence = guard.fencing_token().get();
            assert!(fence > last, "fence {fence} after {last}");
            last = fence;
            guard.release().await.unwrap();
        }
    })
    .await;
}

/// The same task re-enters and counts; other tasks of the same client stay excluded.
pub(crate) async fn reentrancy<H: Harness>(h: &H) {
    bounded(async {
        let key = unique_key("reentry");
        let a = h.client().await;
        let outer = a.lock(&key).await.unwrap();
        let inner = a
            .lock(&key)
            .try_acquire()
            .await
            .unwrap()
            .expect("re-entry refused");
        assert_eq!(inner.hold_count(), 2);
        assert_eq!(inner.fencing_token(), outer.fencing_token());
        let other_task = tokio::spawn({
            let (a, key) = (a.clone(), key.clone());
            async move { a.lock(&key).try_acquire().await.unwrap().is_none() }
        });
        assert!(
            other_task.await.unwrap(),
            "another task of this process got in"
        );
        assert!(inner.release().await.unwrap());
        assert_eq!(outer.hold_count(), 1);
        let b = h.client().await;
        assert!(
            b.lock(&key).try_acquire().await.unwrap().is_none(),
            "inner release freed it"
        );
        assert!(outer.release().await.unwrap());
        assert!(b.lock(&key).try_acquire().await.unwrap().is_some());
        assert_eq!(a.held_leases(), 0);
    })
    .await;
}

/// A waiter whose future is dropped leaves no queue entry, and the next owner is not delayed.
pub(crate) async fn cancelled_waiter_leaves_nothing<H: Harness>(h: &H) {
    bounded(async {
        let key = unique_key("cancel");
        let (a, b, c) = (h.client().await, h.client().await, h.client().await);
        let guard = a.lock(&key).await.unwrap();
        let full = guard.key().full().to_owned();
        let waiter = tokio::spawn({
            let (b, key) = (b.clone(), key.clone());
            async move { b.lock(&key).await.map(|g| g.abandon()) }
        });
        eventually("the waiter queued", || async { h.queued(&full).await > 0 }).await;
        waiter.abort();
        assert!(waiter.await.unwrap_err().is_cancelled());
        eventually("the queue entry went", || async {
            h.queued(&full).await == 0
        })
        .await;
        assert_eq!(b.held_leases(), 0);
        guard.release().await.unwrap();
        // The next caller gets the lock within a second. Not at once: a cancelled waiter's
        // attempt that was already on the wire runs to its end and may be granted once the
        // holder releases; the cancelled acquisition's clean-up (spawned, as a drop cannot
        // wait) releases that grant by its owner token right after. What must not happen is
        // a grant left behind until its lease runs out.
        let start = Instant::now();
        let next = c
            .lock(&key)
            .acquire_within(Duration::from_secs(1))
            .await
            .unwrap();
        assert!(
            next.is_some() && start.elapsed() < Duration::from_secs(1),
            "the lock was not free within a second of the release: the cancelled waiter left \
             a grant behind ({:?})",
            start.elapsed()
        );
    })
    .await;
}

/// Bad keys and durations are typed errors.
pub(crate) async fn bad_input_is_typed<H: Harness>(h: &H) {
    bounded(async {
        let a = h.client().await;
        let long = "k".repeat(MAX_KEY_LEN + 1);
        for key in ["", long.as_str(), "nul\0"] {
            let err = a.lock(key).try_acquire().await.unwrap_err();
            assert!(
                matches!(err, LockError::InvalidKey { .. }),
                "{key:?}: {err}"
            );
            assert!(err.is_invalid_input());
        }
        let err = a
            .lock("ok")
            .lease(lock_core::LeaseMode::watchdog(Duration::from_millis(1)))
            .try_acquire()
            .await
            .unwrap_err();
        assert!(matches!(err, LockError::InvalidDuration { .. }), "{err}");
        // Characters with meaning elsewhere are plain data.
        let odd = unique_key("'; DROP TABLE locks; -- {tag} \"q\" 库存 \\ %s");
        let guard = a.lock(&odd).try_acquire().await.unwrap().expect("odd key");
        assert_eq!(guard.key().name(), odd);
        guard.release().await.unwrap();
    })
    .await;
}

/// Expands to one test per check for the harness built by `$make` (an async expression).
macro_rules! conformance_suite {
    ($make:expr) => {
        $crate::conformance::conformance_suite!(@tests $make;
            exclusion, try_on_held_key, wait_timeout, wakeup_latency, crashed_holder_expires,
            watchdog_holds_past_ttl, lost_fires_on_delete, non_owner_refused, fencing_increases,
            reentrancy, cancelled_waiter_leaves_nothing, dropped_acquires_leave_nothing,
            dropped_releases_still_release, bad_input_is_typed, with_lock_releases_on_every_path,
            shutdown_releases_every_lease, inspect_shows_holder_and_waiters,
            force_release_revokes_and_hands_over, force_release_refuses_what_is_not_held,
            listing_pages_through_held_keys, force_release_of_one_holder_touches_only_it,
            a_latch_shows_its_count_until_it_opens);
    };
    (@tests $make:expr; $($check:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                if let Some(harness) = $make.await {
                    $crate::conformance::$check(&harness).await;
                }
            }
        )*
    };
}

pub(crate) use conformance_suite;
