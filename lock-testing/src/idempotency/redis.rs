//! The scenario that needs a Redis of its own, to kill it.

use std::path::Path;
use std::time::Duration;

use tokio::time::timeout;

use super::{Driver, Handler, Request};
use crate::{free_port, server_url, unique, RedisServer};
use lock_core::http::idempotency::IdempotencyRules;
use lock_core::http::PROBLEM_JSON;
use lock_core::idempotency::Idempotency;
use lock_core::redis::RedisResultStore;
use lock_core::RedisBackend;

/// How long a request may take to fail against the killed server.
const LIMIT: Duration = Duration::from_secs(30);

/// With its own `redis-server` (working in a directory under `tmp`) killed after one request
/// completed: new keys and duplicates alike are answered a generic 503 `unavailable` problem
/// with `Retry-After` that names neither Redis nor its address, and the handler does not run
/// (fail closed).
///
/// # Panics
/// When it does not, or when Redis is required but `LOCK_TEST_REDIS_URL` is unset.
pub async fn the_store_down_answers_503_and_runs_nothing<D: Driver>(tmp: &Path) {
    if server_url("LOCK_TEST_REDIS_URL")
        .expect("test server")
        .is_none()
    {
        return;
    }
    let dir = tmp.join(format!(
        "{}-idempotency-outage-{}",
        D::NAME,
        std::process::id()
    ));
    let mut server = RedisServer::start(free_port(), dir);
    let backend = RedisBackend::connect(&server.url()).await.unwrap();
    let store = RedisResultStore::from_backend(&backend).await.unwrap();
    let idempotency = Idempotency::builder(store, backend)
        .namespace(unique(&format!("{}-down", D::NAME)))
        .build()
        .unwrap();
    let handler = Handler::new();
    let app = D::app(idempotency, IdempotencyRules::new(), handler.clone()).await;
    let send = |request: Request| async {
        timeout(LIMIT, D::send(&app, request))
            .await
            .expect("answered in time")
    };
    let up = send(Request::post("/pay").key("up")).await;
    assert_eq!(up.status, 201, "{}", up.text());
    server.kill();
    let port = server.port().to_string();
    for key in ["down", "up"] {
        let answer = send(Request::post("/pay").key(key)).await;
        assert_eq!(answer.status, 503, "{key}: {}", answer.text());
        assert_eq!(answer.header("content-type"), Some(PROBLEM_JSON));
        // The rules' 1 s, or, once the backend's breaker has opened, the seconds until its
        // probe (its cool-down is at most 5 s by default).
        let retry_after = answer
            .header("retry-after")
            .and_then(|v| v.parse::<u64>().ok());
        assert!(
            retry_after.is_some_and(|secs| (1..=5).contains(&secs)),
            "{key}: Retry-After {:?}",
            answer.header("retry-after")
        );
        let body = answer.text();
        assert!(body.contains("urn:distributed-lock:unavailable"), "{body}");
        for leak in ["redis", "refused", "127.0.0.1", port.as_str()] {
            assert!(!body.to_lowercase().contains(leak), "{leak} in {body}");
        }
    }
    assert_eq!(handler.runs(), 1, "nothing ran while the store was down");
}
