//! Redis down under the cache, the lock, the keyed-lock answer and the idempotency records, on
//! a `redis-server` the test starts and kills: once the outage is known (the connection's
//! breaker open), fail-open cache calls are answered in the origin's time plus a few
//! milliseconds, fail-closed calls fail at once (a keyed-lock 503 saying when the probe is
//! due), the process logs one WARN for the outage and one INFO when Redis is back, and
//! collapsing resumes.
//!
//! Its own test binary, as it installs a process-wide tracing subscriber to count log lines.
#![cfg(feature = "redis")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::breaker::BreakerState;
use lock_core::cache::{Cache, CacheError, CacheStatus, OnBackendError};
use lock_core::http::keyed::{KeyedLockOptions, RequestLock};
use lock_core::idempotency::{Begin, Fingerprint, Idempotency, InFlight};
use lock_core::redis::RedisResultStore;
use lock_core::results::StoredResponse;
use lock_core::{LockClient, RedisBackend};
use lock_testing::{free_port, server_url, unique, LogLines, RedisServer};
use tokio::time::{timeout, Instant};
use tracing::Level;

/// How long the origin takes.
const ORIGIN: Duration = Duration::from_millis(20);
/// What a call may add to the origin's time once the outage is known: the brief's "a few
/// milliseconds", with room for two shared cores (before the breaker, a call waited for the
/// connection's timeouts: 0.5 s and more).
const SLACK: Duration = Duration::from_millis(25);

/// One origin call.
type Computation =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<u8>, String>> + Send>>;

/// An origin that counts its calls and answers after a delay.
#[derive(Clone, Default)]
struct Origin(Arc<AtomicUsize>);

impl Origin {
    fn compute(&self, delay: Duration) -> impl FnOnce() -> Computation + Send + 'static {
        let calls = self.0.clone();
        move || {
            Box::pin(async move {
                calls.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                Ok(b"value".to_vec())
            })
        }
    }

    fn calls(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

async fn timed<T>(call: impl std::future::Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    let outcome = call.await;
    (outcome, started.elapsed())
}

#[test]
fn an_outage_is_answered_fast_and_reported_once() {
    if server_url("LOCK_TEST_REDIS_URL")
        .expect("test server")
        .is_none()
    {
        return;
    }
    let lines: &'static LogLines = Box::leak(Box::default());
    tracing::subscriber::set_global_default(lines).expect("the only subscriber of this binary");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        timeout(Duration::from_secs(90), outage(lines))
            .await
            .expect("bounded");
    });
}

async fn outage(lines: &'static LogLines) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("redis-outage-{}", std::process::id()));
    let mut server = RedisServer::start(free_port(), dir);
    // One connection, as one instance of a service has: its breaker is the one that reports.
    let backend = RedisBackend::builder(server.url())
        .response_timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap();
    let store = RedisResultStore::from_backend(&backend).await.unwrap();
    let namespace = unique("outage");
    let cache = |on_error| {
        Cache::builder(store.clone(), backend.clone())
            .namespace(namespace.as_str())
            .on_backend_error(on_error)
            .build()
            .unwrap()
    };
    // Two caches have a flight each, as two instances would: what collapses them is Redis.
    let caches = [
        cache(OnBackendError::FailOpen),
        cache(OnBackendError::FailOpen),
    ];
    let closed_cache = cache(OnBackendError::FailClosed);
    let locks = LockClient::builder(backend.clone())
        .namespace(namespace.as_str())
        .build()
        .unwrap();
    let idempotency = Idempotency::builder(store.clone(), backend.clone())
        .namespace(namespace.as_str())
        .build()
        .unwrap();
    let origin = Origin::default();
    let warm = caches[0]
        .entry("warm")
        .try_get_with(origin.compute(ORIGIN))
        .await
        .unwrap();
    assert_eq!(warm.status, CacheStatus::Computed);
    lines.take();
    // A request whose handler is running as Redis dies.
    let fingerprint = Fingerprint::builder("POST", "/pay").finish();
    let running = idempotency
        .begin("alice", "paid-as-it-died", fingerprint, InFlight::Conflict)
        .await
        .unwrap();
    let Begin::Run(running) = running else {
        panic!("a new key runs");
    };

    server.kill();
    let down_at = Instant::now();
    // Until the outage is known (the breaker open), calls wait for the connection's errors.
    let mut slow = 0;
    while backend.breaker().state() == BreakerState::Closed {
        let cached = caches[slow % 2]
            .entry(format!("down:{slow}"))
            .try_get_with(origin.compute(ORIGIN))
            .await;
        assert_eq!(cached.unwrap().status, CacheStatus::FailOpen);
        slow += 1;
        assert!(
            down_at.elapsed() < Duration::from_secs(15),
            "the outage never became known ({slow} calls)"
        );
    }
    let known_after = down_at.elapsed();
    // Its response cannot be stored: the error says so (and the store_failed count), not a
    // log line of its own: the breaker's WARN told the outage once.
    let response = StoredResponse {
        status: 201,
        headers: Vec::new(),
        body: b"paid".to_vec(),
        initial_age: Duration::ZERO,
        fresh: Duration::ZERO,
    };
    let stored = running.complete(response).await;
    assert!(stored.expect_err("Redis is down").is_unavailable());
    assert_eq!(idempotency.stats().store_failed, 1);

    let before = origin.calls();
    let mut slowest = Duration::ZERO;
    for n in 0..40 {
        let (cached, took) = timed(
            caches[n % 2]
                .entry(format!("fast:{n}"))
                .try_get_with(origin.compute(ORIGIN)),
        )
        .await;
        assert_eq!(cached.unwrap().status, CacheStatus::FailOpen);
        slowest = slowest.max(took);
    }
    assert_eq!(
        origin.calls() - before,
        40,
        "each fail-open call computed once"
    );
    assert!(
        slowest <= ORIGIN + SLACK,
        "a fail-open call took {slowest:?} for a {ORIGIN:?} origin"
    );

    let keyed = KeyedLockOptions::new().retry_after(Duration::from_secs(30));
    let mut slowest_refusal = Duration::ZERO;
    for n in 0..20 {
        let (acquired, took) = timed(locks.lock(format!("sku:{n}")).try_acquire()).await;
        let error = acquired.expect_err("fail closed");
        assert!(error.is_unavailable(), "{error}");
        slowest_refusal = slowest_refusal.max(took);
        let (answered, took) = timed(RequestLock::acquire(&locks, "sku", &keyed)).await;
        let rejection = answered.expect_err("fail closed");
        assert_eq!(rejection.response.status, 503);
        let retry_after = rejection.retry_after().expect("Retry-After");
        assert!(
            retry_after <= 5,
            "Retry-After {retry_after}: the options' 30 s, not when the probe is due"
        );
        slowest_refusal = slowest_refusal.max(took);
        let fingerprint = Fingerprint::builder("POST", "/pay").finish();
        let (begun, took) = timed(idempotency.begin(
            "alice",
            &format!("key-{n}"),
            fingerprint,
            InFlight::Conflict,
        ))
        .await;
        let error = begun.expect_err("fail closed");
        assert!(error.is_unavailable(), "{error}");
        slowest_refusal = slowest_refusal.max(took);
        let before = origin.calls();
        let (cached, took) = timed(
            closed_cache
                .entry(format!("closed:{n}"))
                .try_get_with(origin.compute(ORIGIN)),
        )
        .await;
        assert!(
            matches!(&cached, Err(CacheError::Lock(error)) if error.is_unavailable()),
            "{:?}",
            cached.map(|c| c.status)
        );
        assert_eq!(
            origin.calls(),
            before,
            "a fail-closed cache does not compute"
        );
        slowest_refusal = slowest_refusal.max(took);
    }
    assert!(
        slowest_refusal <= Duration::from_millis(10),
        "a fail-closed call took {slowest_refusal:?} to be refused"
    );

    server.spawn();
    let back_at = Instant::now();
    // Collapsing resumes once a probe finds Redis back: a computed value is stored again.
    let mut n = 0;
    loop {
        let cached = caches[0]
            .entry(format!("back:{n}"))
            .try_get_with(origin.compute(ORIGIN))
            .await
            .unwrap();
        if cached.status == CacheStatus::Computed {
            break;
        }
        assert_eq!(cached.status, CacheStatus::FailOpen);
        assert!(
            back_at.elapsed() < Duration::from_secs(15),
            "Redis is back but the cache still fails open"
        );
        n += 1;
    }
    let resumed_after = back_at.elapsed();
    let before = origin.calls();
    let crowd = (0..20).map(|n| {
        let cache = caches[n % 2].clone();
        let compute = origin.compute(Duration::from_millis(200));
        tokio::spawn(async move { cache.entry("crowd").try_get_with(compute).await })
    });
    let mut statuses = Vec::new();
    for caller in crowd.collect::<Vec<_>>() {
        statuses.push(caller.await.unwrap().unwrap().status);
    }
    assert_eq!(origin.calls() - before, 1, "{statuses:?}");

    let seen = lines.take();
    let count = |level| seen.iter().filter(|(l, _)| *l == level).count();
    eprintln!(
        "outage: known after {known_after:?} ({slow} slow calls), fail-open calls at most \
         {slowest:?} for a {ORIGIN:?} origin, refusals at most {slowest_refusal:?}, collapsing \
         again {resumed_after:?} after Redis was back; log lines: {seen:?}"
    );
    assert_eq!(count(Level::WARN), 1, "{seen:?}");
    assert_eq!(count(Level::ERROR), 0, "{seen:?}");
    assert_eq!(count(Level::INFO), 1, "{seen:?}");
    assert!(
        seen.iter()
            .any(|(l, m)| *l == Level::WARN && m.contains("lock backend down")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|(l, m)| *l == Level::INFO && m.contains("lock backend back")),
        "{seen:?}"
    );
}
