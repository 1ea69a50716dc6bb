//! The scenario of a Redis outage's length: how fast the layer answers while the backend is
//! known to be down, and that collapsing resumes once it is back.

use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;

use super::origin::{Calls, Origin};
use super::{http_cache, send, together, Adapter, Answer, Request};
use crate::{free_port, server_url, unique, RedisServer};
use lock_core::breaker::{Breaker, BreakerState};
use lock_core::cache::{Cache, OnBackendError};
use lock_core::redis::RedisResultStore;
use lock_core::RedisBackend;

/// How long the origin takes to answer.
const ORIGIN: Duration = Duration::from_millis(50);
/// What the layer may add to the origin's time while the outage is known. Without the breaker
/// each request waited for the connection's timeouts (2 s); with it, a few milliseconds. The
/// bound sits between the two with room for a loaded 2-core CI machine running the suite's
/// other tests beside this one (30 ms was exceeded there once: 92 ms for a 50 ms origin).
const SLACK: Duration = Duration::from_millis(250);
/// How long a fail-closed 503 may take while the outage is known (at once, against the 2 s of
/// a request that waits for the connection; the same room for a loaded machine).
const REFUSAL: Duration = Duration::from_millis(250);
/// How long finding out either way (down, back) may take.
const NOTICE: Duration = Duration::from_secs(15);

/// A cache on a connection of its own, and that connection's breaker.
async fn cache(url: &str, namespace: &str, on_error: OnBackendError) -> (Cache, Breaker) {
    let backend = RedisBackend::connect(url).await.unwrap();
    let breaker = backend.breaker().clone();
    let store = RedisResultStore::from_backend(&backend).await.unwrap();
    let cache = Cache::builder(store, backend)
        .namespace(namespace)
        .on_backend_error(on_error)
        .build()
        .unwrap();
    (cache, breaker)
}

/// Sends requests to `app` until `breaker` knows the outage (each answered with `status`).
async fn until_known<A: Adapter>(app: &A::App, breaker: &Breaker, status: u16, since: Instant) {
    let mut n = 0;
    while breaker.state() == BreakerState::Closed {
        let (answer, _) = timed::<A>(app, &format!("/products/down-{n}")).await;
        assert_eq!(answer.status, status, "{}", answer.text());
        n += 1;
        assert!(since.elapsed() < NOTICE, "the outage never became known");
    }
}

async fn timed<A: Adapter>(app: &A::App, path: &str) -> (Answer, Duration) {
    let started = Instant::now();
    let answer = send::<A>(app, Request::get(path, &[])).await;
    (answer, started.elapsed())
}

/// With its own `redis-server` (working in a directory under `tmp`) killed: once the outage
/// is known, a fail-open cache answers each request in the origin's time plus a few
/// milliseconds, and a fail-closed one answers 503 at once with a `Retry-After` of when the
/// breaker's probe is due (at most its 5 s cool-down); once Redis is back, a crowd of cold
/// requests over two instances calls the origin once again.
///
/// # Panics
/// When it does not, or when Redis is required but `LOCK_TEST_REDIS_URL` is unset.
pub async fn redis_down_answers_in_the_origins_time_and_collapses_again<A: Adapter>(tmp: &Path) {
    if server_url("LOCK_TEST_REDIS_URL")
        .expect("test server")
        .is_none()
    {
        return;
    }
    let dir = tmp.join(format!("{}-cache-breaker-{}", A::NAME, std::process::id()));
    let mut server = RedisServer::start(free_port(), dir);
    let namespace = unique(&format!("{}-breaker", A::NAME));
    let calls = Calls::default();
    let origin = || Origin::products(&calls, "max-age=60", ORIGIN, false);
    let mut open = Vec::new();
    let mut breakers = Vec::new();
    for _ in 0..2 {
        let (cache, breaker) = cache(&server.url(), &namespace, OnBackendError::FailOpen).await;
        open.push(A::app(http_cache(cache, None), origin()).await);
        breakers.push(breaker);
    }
    let (closed_cache, closed_breaker) =
        cache(&server.url(), &namespace, OnBackendError::FailClosed).await;
    let closed = A::app(http_cache(closed_cache, None), origin()).await;

    server.kill();
    let down_at = Instant::now();
    // Until the outage is known (each connection's breaker open), requests wait for the
    // connection's errors.
    for (app, breaker) in open.iter().zip(&breakers) {
        until_known::<A>(app, breaker, 200, down_at).await;
    }
    until_known::<A>(&closed, &closed_breaker, 503, down_at).await;
    let mut slowest = Duration::ZERO;
    for n in 0..20 {
        let (answer, took) = timed::<A>(&open[n % 2], &format!("/products/fast-{n}")).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
        assert_eq!(
            answer.headers.get("cache-status"),
            "lock-core; fwd=miss; fwd-status=200; detail=fail-open"
        );
        slowest = slowest.max(took);
    }
    assert!(
        slowest <= ORIGIN + SLACK,
        "a fail-open answer took {slowest:?} for a {ORIGIN:?} origin"
    );

    let before = calls.count();
    let mut slowest = Duration::ZERO;
    for n in 0..20 {
        let (answer, took) = timed::<A>(&closed, &format!("/products/closed-{n}")).await;
        assert_eq!(answer.status, 503, "{}", answer.text());
        let retry_after: u64 = answer.headers.get("retry-after").parse().unwrap();
        assert!(
            (1..=5).contains(&retry_after),
            "Retry-After {retry_after} is not when the probe is due"
        );
        slowest = slowest.max(took);
    }
    assert!(slowest <= REFUSAL, "a 503 took {slowest:?}");
    assert_eq!(calls.count(), before, "fail closed never calls the handler");

    server.spawn();
    let back_at = Instant::now();
    // Each instance's breaker finds out by its own probe.
    for (i, app) in open.iter().enumerate() {
        let mut n = 0;
        loop {
            let (answer, _) = timed::<A>(app, &format!("/products/back-{i}-{n}")).await;
            if answer.headers.get("cache-status").ends_with("; stored") {
                break;
            }
            n += 1;
            assert!(
                back_at.elapsed() < NOTICE,
                "Redis is back but instance {i} still fails open"
            );
            // Let the breaker's background probe run, as a server's network reads would.
            tokio::task::yield_now().await;
        }
    }
    let before = calls.count();
    let answers =
        together((0..20).map(|n| send::<A>(&open[n % 2], Request::get("/products/crowd", &[]))))
            .await;
    assert!(answers.iter().all(|a| a.status == 200));
    assert_eq!(
        calls.count() - before,
        1,
        "collapsed again over both instances"
    );
}
