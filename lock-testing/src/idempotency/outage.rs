//! The scenario of a Redis outage's length under the idempotency layer: 503s at once while
//! the backend is known to be down, saying when to retry, and requests run again once it is
//! back.

use std::path::Path;
use std::time::Duration;

use tokio::time::{timeout, Instant};

use super::{Driver, Handler, Request};
use crate::{free_port, server_url, unique, RedisServer};
use lock_core::breaker::BreakerState;
use lock_core::http::idempotency::IdempotencyRules;
use lock_core::idempotency::Idempotency;
use lock_core::redis::RedisResultStore;
use lock_core::RedisBackend;

/// How long one request may take.
const LIMIT: Duration = Duration::from_secs(30);
/// How long a 503 may take while the outage is known: at once, where before the breaker each
/// waited for the connection's timeouts (2 s); the bound sits between the two with room for a
/// loaded 2-core CI machine running the suite's other tests beside this one.
const REFUSAL: Duration = Duration::from_millis(250);
/// How long finding out either way (down, back) may take.
const NOTICE: Duration = Duration::from_secs(15);

/// With its own `redis-server` (working in a directory under `tmp`) killed: once the outage
/// is known, every request is answered 503 at once (nothing runs), with a `Retry-After` of
/// when the breaker's probe is due (at most its 5 s cool-down); once Redis is back, requests
/// with new keys run again.
///
/// # Panics
/// When it does not, or when Redis is required but `LOCK_TEST_REDIS_URL` is unset.
pub async fn the_store_down_answers_503_at_once_and_runs_again_when_back<D: Driver>(tmp: &Path) {
    if server_url("LOCK_TEST_REDIS_URL")
        .expect("test server")
        .is_none()
    {
        return;
    }
    let dir = tmp.join(format!(
        "{}-idempotency-breaker-{}",
        D::NAME,
        std::process::id()
    ));
    let mut server = RedisServer::start(free_port(), dir);
    let backend = RedisBackend::connect(&server.url()).await.unwrap();
    let breaker = backend.breaker().clone();
    let store = RedisResultStore::from_backend(&backend).await.unwrap();
    let idempotency = Idempotency::builder(store, backend)
        .namespace(unique(&format!("{}-breaker", D::NAME)))
        .build()
        .unwrap();
    let handler = Handler::new();
    let app = D::app(idempotency, IdempotencyRules::new(), handler.clone()).await;
    let send = |key: String| {
        let app = &app;
        async move {
            let started = Instant::now();
            let answer = timeout(LIMIT, D::send(app, Request::post("/pay").key(key)))
                .await
                .expect("answered in time");
            (answer, started.elapsed())
        }
    };
    let (up, _) = send("up".into()).await;
    assert_eq!(up.status, 201, "{}", up.text());

    server.kill();
    let down_at = Instant::now();
    // Until the outage is known (the breaker open), requests wait for the connection's errors.
    let mut n = 0;
    while breaker.state() == BreakerState::Closed {
        let (answer, _) = send(format!("down-{n}")).await;
        assert_eq!(answer.status, 503, "{}", answer.text());
        n += 1;
        assert!(down_at.elapsed() < NOTICE, "the outage never became known");
    }
    let mut slowest = Duration::ZERO;
    for n in 0..20 {
        let (answer, took) = send(format!("fast-{n}")).await;
        assert_eq!(answer.status, 503, "{}", answer.text());
        let retry_after: u64 = answer.header("retry-after").unwrap().parse().unwrap();
        assert!(
            (1..=5).contains(&retry_after),
            "Retry-After {retry_after} is not when the probe is due"
        );
        slowest = slowest.max(took);
    }
    assert!(slowest <= REFUSAL, "a 503 took {slowest:?}");
    assert_eq!(handler.runs(), 1, "nothing ran while the store was down");

    server.spawn();
    let back_at = Instant::now();
    let mut n = 0;
    loop {
        let (answer, _) = send(format!("back-{n}")).await;
        if answer.status == 201 {
            break;
        }
        assert_eq!(answer.status, 503, "{}", answer.text());
        n += 1;
        assert!(
            back_at.elapsed() < NOTICE,
            "Redis is back but requests still get 503"
        );
        // Refusals complete without yielding: let the breaker's background probe run, as a
        // server's network reads would (a single-threaded runtime would starve it).
        tokio::task::yield_now().await;
    }
    assert_eq!(handler.runs(), 2);
}
