//! Lease, renewal and drift behaviour on a paused clock: deterministic, no long sleeps.
//!
//! A thin wrapper around the memory backend injects the faults a network would: renewals that
//! fail, replies that arrive late.

use lock_core::LeaseMode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::backend::{
    Abandoned, AcquireRequest, Capabilities, Grant, LeaseKind, LockBackend, Primitives,
};
use lock_core::lease::{drift_margin, renew_interval};
use lock_core::{LockClient, LockError, LostReason, MemoryBackend, MemoryLease, Result};
use tokio::time::{advance, Instant};

#[derive(Clone, Default)]
struct Faulty {
    inner: MemoryBackend,
    renew_fails: Arc<AtomicBool>,
    reply_delay: Arc<std::sync::Mutex<Duration>>,
    renewals: Arc<AtomicUsize>,
    /// Acquires are granted, but their reply is lost (an error comes back).
    reply_lost: Arc<AtomicBool>,
    /// How long a release takes to reach the store.
    release_delay: Arc<std::sync::Mutex<Duration>>,
    /// Grants are held by the store for this long only (a fair lock's claim window).
    claim_window: Arc<std::sync::Mutex<Option<Duration>>>,
    /// The backend offers the lock only.
    lock_only: Arc<AtomicBool>,
}

impl LockBackend for Faulty {
    type Lease = MemoryLease;

    fn capabilities(&self) -> Capabilities {
        let mut caps = LockBackend::capabilities(&self.inner);
        if self.lock_only.load(Ordering::SeqCst) {
            caps.primitives = Primitives::NONE;
        }
        caps
    }

    async fn acquire(&self, request: AcquireRequest<'_>) -> Result<Option<Grant<MemoryLease>>> {
        let mut grant = self.inner.acquire(request).await?;
        let window = *self.claim_window.lock().unwrap();
        if let Some(window) = window {
            if let Some(granted) = grant.take() {
                assert!(self.inner.renew(&granted.lease, Some(window)).await?);
                grant = Some(granted.with_ttl(window));
            }
        }
        if self.reply_lost.load(Ordering::SeqCst) {
            return Err(LockError::unavailable("faulty", "reply lost"));
        }
        let delay = *self.reply_delay.lock().unwrap();
        tokio::time::sleep(delay).await;
        Ok(grant)
    }

    async fn renew(&self, lease: &MemoryLease, ttl: Option<Duration>) -> Result<bool> {
        self.renewals.fetch_add(1, Ordering::SeqCst);
        if self.renew_fails.load(Ordering::SeqCst) {
            return Err(LockError::unavailable("faulty", "connection refused"));
        }
        self.inner.renew(lease, ttl).await
    }

    async fn release(&self, lease: &MemoryLease) -> Result<bool> {
        let delay = *self.release_delay.lock().unwrap();
        tokio::time::sleep(delay).await;
        self.inner.release(lease).await
    }

    async fn release_abandoned(&self, abandoned: &Abandoned) -> Result<bool> {
        self.inner.release_abandoned(abandoned).await
    }
}

fn client(backend: &Faulty) -> LockClient {
    LockClient::new(backend.clone())
}

#[tokio::test(start_paused = true)]
async fn watchdog_renews_every_third_of_the_ttl_for_hours() {
    let backend = Faulty::default();
    let locks = client(&backend);
    let ttl = Duration::from_secs(30);
    let lease = LeaseMode::watchdog(ttl);
    let guard = locks.lock("k").lease(lease).await.unwrap();
    // Ten simulated minutes, well past 3 × TTL.
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(!guard.is_lost());
    let renewals = backend.renewals.load(Ordering::SeqCst);
    assert!(
        (59..=61).contains(&renewals),
        "{renewals} renewals in 600 s at 10 s"
    );
    assert!(
        guard.remaining()
            > ttl - renew_interval(ttl) - drift_margin(ttl) - Duration::from_millis(1)
    );
    let other = tokio::spawn({
        let locks = locks.clone();
        async move { locks.lock("k").try_acquire().await.unwrap().is_none() }
    });
    assert!(other.await.unwrap());
    assert!(guard.release().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn failed_renewals_fire_lost_before_the_lease_ends_not_after() {
    let backend = Faulty::default();
    let locks = client(&backend);
    let ttl = Duration::from_secs(30);
    let start = Instant::now();
    let lease = LeaseMode::watchdog(ttl);
    let guard = locks.lock("k").lease(lease).await.unwrap();
    backend.renew_fails.store(true, Ordering::SeqCst);
    let reason = guard.lost().await;
    let fired_after = start.elapsed();
    assert!(
        matches!(reason, LostReason::RenewalFailed(ref e) if e.contains("connection refused")),
        "{reason:?}"
    );
    // Fired at sent_at + ttl - drift: before the server would free the key.
    assert_eq!(fired_after, ttl - drift_margin(ttl));
    // Retried while the lease lasted, not given up after one failure.
    assert!(backend.renewals.load(Ordering::SeqCst) > 3);
    assert!(matches!(
        guard.ensure_held(),
        Err(LockError::LeaseLost { .. })
    ));
}

#[tokio::test(start_paused = true)]
async fn a_renewal_that_recovers_keeps_the_lease() {
    let backend = Faulty::default();
    let locks = client(&backend);
    let ttl = Duration::from_secs(30);
    let lease = LeaseMode::watchdog(ttl);
    let guard = locks.lock("k").lease(lease).await.unwrap();
    backend.renew_fails.store(true, Ordering::SeqCst);
    advance(Duration::from_secs(15)).await;
    backend.renew_fails.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert!(!guard.is_lost());
}

#[tokio::test(start_paused = true)]
async fn fixed_leases_are_not_renewed_and_end_with_expired() {
    let backend = Faulty::default();
    let locks = client(&backend);
    let ttl = Duration::from_secs(9);
    let start = Instant::now();
    let guard = locks.lock("k").lease(LeaseMode::fixed(ttl)).await.unwrap();
    assert_eq!(guard.lost().await, LostReason::Expired);
    assert_eq!(start.elapsed(), ttl - drift_margin(ttl));
    // Ownership was checked meanwhile, but never extended.
    assert!(backend.renewals.load(Ordering::SeqCst) >= 2);
    // The store still had it for the drift margin; past that, nothing is released.
    advance(drift_margin(ttl)).await;
    assert!(
        !guard.release().await.unwrap(),
        "an expired lease reported as released"
    );
}

#[tokio::test(start_paused = true)]
async fn extend_moves_a_fixed_lease_and_its_loss() {
    let backend = Faulty::default();
    let locks = client(&backend);
    let start = Instant::now();
    let guard = locks
        .lock("k")
        .lease(LeaseMode::fixed(Duration::from_secs(10)))
        .await
        .unwrap();
    advance(Duration::from_secs(5)).await;
    assert!(guard.extend(Duration::from_secs(20)).await.unwrap());
    guard.lost().await;
    let ttl = Duration::from_secs(20);
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(5) + ttl - drift_margin(ttl)
    );
}

#[tokio::test(start_paused = true)]
async fn a_reply_delayed_past_the_lease_is_not_a_grant() {
    let backend = Faulty::default();
    let locks = client(&backend);
    *backend.reply_delay.lock().unwrap() = Duration::from_secs(31);
    let outcome = locks
        .lock("k")
        .lease(LeaseMode::watchdog(Duration::from_secs(30)))
        .try_acquire()
        .await
        .unwrap();
    assert!(
        outcome.is_none(),
        "a grant older than its lease was reported held"
    );
    assert_eq!(
        backend.inner.active_keys(),
        0,
        "the late grant was not released"
    );
    *backend.reply_delay.lock().unwrap() = Duration::ZERO;
    assert!(locks.lock("k").try_acquire().await.unwrap().is_some());
}

#[tokio::test(start_paused = true)]
async fn a_slow_reply_shortens_the_lease() {
    let backend = Faulty::default();
    let locks = client(&backend);
    let ttl = Duration::from_secs(30);
    *backend.reply_delay.lock().unwrap() = Duration::from_secs(4);
    let guard = locks
        .lock("k")
        .lease(LeaseMode::watchdog(ttl))
        .try_acquire()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        guard.remaining(),
        ttl - drift_margin(ttl) - Duration::from_secs(4)
    );
}

/// A holder whose process was paused past its lease (here the runtime's only thread is
/// blocked, as under SIGSTOP, so the watchdog cannot run) is told by every check, the moment
/// it runs again, that the lease is gone: the checks read the clock, not only the signal.
#[tokio::test(flavor = "current_thread")]
async fn a_holder_paused_past_its_lease_sees_it_lost_at_once() {
    let locks = LockClient::new(MemoryBackend::new());
    let ttl = Duration::from_millis(100);
    let lease = LeaseMode::watchdog(ttl);
    let checked = locks.lock("paused:ensure").lease(lease).await.unwrap();
    let lease = LeaseMode::watchdog(ttl);
    let asked = locks.lock("paused:is-lost").lease(lease).await.unwrap();
    let lease = LeaseMode::watchdog(ttl);
    let awaited = locks.lock("paused:lost").lease(lease).await.unwrap();
    let lost = awaited.lost();
    std::thread::sleep(ttl * 3);
    let err = checked.ensure_held().unwrap_err();
    assert!(
        matches!(
            &err,
            LockError::LeaseLost {
                reason: LostReason::Expired,
                ..
            }
        ),
        "{err}"
    );
    assert!(asked.is_lost());
    assert_eq!(asked.remaining(), Duration::ZERO);
    // Resolves on its first poll, before any other task (the watchdog) has run.
    let reason = tokio::time::timeout(Duration::ZERO, lost).await;
    assert_eq!(reason, Ok(LostReason::Expired));
}

/// An acquire whose grant reached the store but whose reply never came back (every retry
/// lost) fails, and what it was granted is released at once: the next owner does not wait for
/// the lease to run out.
#[tokio::test(start_paused = true)]
async fn a_failed_acquire_releases_what_the_store_granted() {
    let backend = Faulty::default();
    backend.reply_lost.store(true, Ordering::SeqCst);
    let locks = client(&backend);
    let err = locks
        .lock("k")
        .lease(LeaseMode::watchdog(Duration::from_secs(60)))
        .try_acquire()
        .await
        .unwrap_err();
    assert!(err.is_unavailable(), "{err}");
    backend.reply_lost.store(false, Ordering::SeqCst);
    assert_free_at_once(&backend, "the lost grant still blocks the key").await;
}

/// A `release()` whose future is dropped before the store answered (a timeout around it, a
/// cancelled task) still releases: the release goes on in a task of its own.
#[tokio::test(start_paused = true)]
async fn a_dropped_release_still_releases() {
    let backend = Faulty::default();
    *backend.release_delay.lock().unwrap() = Duration::from_millis(50);
    let locks = client(&backend);
    let guard = locks
        .lock("k")
        .lease(LeaseMode::watchdog(Duration::from_secs(60)))
        .await
        .unwrap();
    let cut_short = tokio::time::timeout(Duration::from_millis(10), guard.release()).await;
    assert!(cut_short.is_err(), "the release was meant to be cut short");
    assert_free_at_once(&backend, "the dropped release left the lock held").await;
}

/// Another owner gets `k` within a second (not after the 60 s lease these tests take).
async fn assert_free_at_once(backend: &Faulty, what: &str) {
    let started = Instant::now();
    let next = LockClient::new(backend.inner.clone())
        .lock("k")
        .acquire_within(Duration::from_secs(30))
        .await
        .unwrap();
    assert!(next.is_some(), "{what}");
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(1), "{what}: {waited:?}");
}

/// A grant the store holds for a short claim window only (a fair lock handed over by the
/// server) is renewed to the full lease by the watchdog, in the background, a third of the way
/// into the window, and trusted for the window until then; a fixed lease is set to its length
/// before the guard is handed out.
#[tokio::test(start_paused = true)]
async fn a_claim_window_grant_is_extended_to_the_full_lease() {
    let backend = Faulty::default();
    *backend.claim_window.lock().unwrap() = Some(Duration::from_millis(200));
    let locks = client(&backend);
    let guard = locks
        .lock("k")
        .lease(LeaseMode::watchdog(Duration::from_secs(30)))
        .await
        .unwrap();
    assert!(guard.remaining() <= Duration::from_millis(200));
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!guard.is_lost(), "the watchdog extended the claim window");
    assert!(guard.remaining() > Duration::from_secs(20));
    guard.release().await.unwrap();

    let fixed = locks
        .lock("k")
        .lease(LeaseMode::fixed(Duration::from_secs(30)))
        .await
        .unwrap();
    assert!(fixed.remaining() > Duration::from_secs(29));
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!fixed.is_lost());
    fixed.release().await.unwrap();
}

/// A primitive the backend does not offer is a typed error before anything reaches it.
#[tokio::test]
async fn a_primitive_the_backend_lacks_is_unsupported() {
    let backend = Faulty::default();
    backend.lock_only.store(true, Ordering::SeqCst);
    let locks = client(&backend);
    let fair = locks.fair_lock("k").try_acquire().await.unwrap_err();
    assert!(
        matches!(
            fair,
            LockError::Unsupported {
                primitive: "fair lock",
                ..
            }
        ),
        "{fair}"
    );
    let read = locks
        .read_write_lock("k")
        .read()
        .try_acquire()
        .await
        .unwrap_err();
    assert!(matches!(read, LockError::Unsupported { .. }), "{read}");
    assert!(matches!(
        locks
            .semaphore("k", 2)
            .available_permits()
            .await
            .unwrap_err(),
        LockError::Unsupported {
            primitive: "semaphore",
            ..
        }
    ));
    assert!(matches!(
        locks.latch("k").count().await.unwrap_err(),
        LockError::Unsupported { .. }
    ));
    assert_eq!(backend.inner.active_keys(), 0);
}

/// A backend without a queue in the store says so, not that it has no lock.
#[tokio::test]
async fn a_backend_without_a_stored_queue_says_so() {
    #[derive(Clone)]
    struct NoQueue(MemoryBackend);
    impl LockBackend for NoQueue {
        type Lease = MemoryLease;
        fn capabilities(&self) -> Capabilities {
            LockBackend::capabilities(&self.0)
        }
        async fn acquire(&self, request: AcquireRequest<'_>) -> Result<Option<Grant<MemoryLease>>> {
            self.0.acquire(request).await
        }
        async fn renew(&self, lease: &MemoryLease, ttl: Option<Duration>) -> Result<bool> {
            self.0.renew(lease, ttl).await
        }
        async fn release(&self, lease: &MemoryLease) -> Result<bool> {
            self.0.release(lease).await
        }
        async fn release_abandoned(&self, abandoned: &Abandoned) -> Result<bool> {
            self.0.release_abandoned(abandoned).await
        }
    }
    let locks = LockClient::new(NoQueue(MemoryBackend::new()));
    let err = locks
        .queue_length(LeaseKind::Exclusive, "k")
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the memory backend has no waiter queue in the store"
    );
}
