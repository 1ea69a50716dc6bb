//! The scenario that needs a Redis of its own, to kill it.

use std::path::Path;
use std::time::Duration;

use super::assertions::{assert_locked, assert_problem};
use super::{app, send, Driver, Handler, Request};
use crate::{free_port, RedisServer};
use lock_core::http::keyed::{KeySource, KeyedLockOptions};
use lock_core::{LockClient, RedisBackend};

/// With its own `redis-server` (working in a directory under `tmp`) killed after one request
/// ran: the next is answered a 503 `unavailable` problem that names neither Redis, its
/// address, the OS error nor the key, and the handler does not run; with `expose_errors`, the
/// body says it was Redis.
///
/// # Panics
/// When it does not, or when `redis-server` cannot be started.
pub async fn a_dead_redis_answers_a_generic_503<D: Driver>(tmp: &Path) {
    let dir = tmp.join(format!(
        "{}-keyed-dead-redis-{}",
        D::NAME,
        std::process::id()
    ));
    let mut server = RedisServer::start(free_port(), dir);
    let backend = RedisBackend::builder(server.url())
        .response_timeout(Duration::from_millis(300))
        .attempts(1)
        .connect()
        .await
        .unwrap();
    let locks = LockClient::new(backend);
    let handler = Handler::new();
    let source = || KeySource::path_param("/buy/{sku}", "sku");
    let options = KeyedLockOptions::new().key_prefix("sku:");
    let generic = app::<D>(locks.clone(), source(), options.clone(), handler.clone()).await;
    // Redis's fences are not small numbers: the key is enough.
    assert_locked(&send::<D>(&generic, Request::post("/buy/a")).await, "sku:a");
    server.kill();
    let port = server.port().to_string();
    let answer = send::<D>(&generic, Request::post("/buy/a")).await;
    assert_problem(&answer, 503, "urn:distributed-lock:unavailable");
    let body = answer.text();
    for secret in [
        "redis",
        "Redis",
        "refused",
        "127.0.0.1",
        port.as_str(),
        "sku:a",
    ] {
        assert!(!body.contains(secret), "{secret} in {body}");
    }

    let exposed = options.expose_errors(true);
    let exposed = app::<D>(locks, source(), exposed, handler.clone()).await;
    let answer = send::<D>(&exposed, Request::post("/buy/a")).await;
    assert_problem(&answer, 503, "urn:distributed-lock:unavailable");
    assert!(
        answer.text().to_lowercase().contains("redis"),
        "{}",
        answer.text()
    );
    assert_eq!(handler.runs(), 1, "nothing ran while Redis was down");
}
