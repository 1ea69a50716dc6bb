//! `chaos web ...`: the service scenario 17 takes Redis away from, in a process of its own so
//! that its log lines are its own: lock-tower's three web layers on one `RedisBackend`
//! (one connection, as one instance of a service has), in front of handlers that take a
//! known time.
//!
//! Routes (every handler sleeps [`ORIGIN_MS`] first, as an origin would):
//! - `GET /products/{id}`: behind the response cache (fails open), `max-age=2`;
//! - `GET /raw/{id}`: the same handler with no layer: the floor the cache is measured against;
//! - `POST /pay`: behind the idempotency layer (`Idempotency-Key` required; fails closed);
//! - `POST /orders/{id}`: behind the keyed lock on `{id}` (fails closed).
//!
//! Prints `EV ready <µs> <port>` once it serves, and `EV log <µs> <LEVEL> <message>` for every
//! INFO, WARN or ERROR line of lock-core (`lock_testing::LogLines`); runs until killed.

use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::routing::{get, post};
use axum::Router;
use lock_core::breaker::BreakerOptions;
use lock_core::cache::{Cache, Freshness, OnBackendError};
use lock_core::idempotency::Idempotency;
use lock_core::redis::RedisResultStore;
use lock_core::{LockClient, RedisBackend};
use lock_testing::LogLines;
use lock_tower::{IdempotencyLayer, KeySource, KeyedLockLayer, ResponseCacheLayer};
use tracing::Level;

use super::worker::wall_us;

/// The flags of `chaos web`.
pub const FLAGS: &[&str] = &["url", "namespace", "no-fail-fast"];

/// How long each handler takes.
pub const ORIGIN_MS: u64 = 20;

/// Serves until killed; returns an exit code on a setup failure.
pub async fn run(flags: &example_support::flags::Flags) -> i32 {
    let Some(url) = flags.get("url") else {
        eprintln!("chaos web: --url is required");
        return 2;
    };
    let namespace = flags.get("namespace").unwrap_or("chaos-web");
    let lines: &'static LogLines = Box::leak(Box::new(LogLines::with_sink(print_line)));
    if tracing::subscriber::set_global_default(lines).is_err() {
        eprintln!("chaos web: a tracing subscriber is installed already");
        return 2;
    }
    match serve(url, namespace, flags.get("no-fail-fast").is_some()).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("chaos web: {e}");
            println!("EV error {} {e}", wall_us());
            1
        }
    }
}

async fn serve(url: &str, namespace: &str, no_fail_fast: bool) -> Result<(), String> {
    let backend = RedisBackend::builder(url)
        .breaker(BreakerOptions::new().fail_fast(!no_fail_fast))
        .connect()
        .await
        .map_err(|e| format!("connect: {}", e.with_causes()))?;
    let store = RedisResultStore::from_backend(&backend)
        .await
        .map_err(|e| format!("result store: {}", e.with_causes()))?;
    let cache = Cache::builder(store.clone(), backend.clone())
        .namespace(namespace)
        .on_backend_error(OnBackendError::FailOpen)
        .build()
        .map_err(|e| e.to_string())?;
    let cached = ResponseCacheLayer::builder(cache)
        .default_freshness(Freshness::fresh_for(Duration::from_secs(2)))
        .build()
        .map_err(|e| e.to_string())?;
    let idempotency = Idempotency::builder(store, backend.clone())
        .namespace(namespace)
        .build()
        .map_err(|e| e.to_string())?;
    let idempotent = IdempotencyLayer::builder(idempotency)
        // One client, the harness: every request in one scope.
        .shared_scope()
        .build()
        .map_err(|e| e.to_string())?;
    let locks = LockClient::builder(backend)
        .namespace(namespace)
        .build()
        .map_err(|e| e.to_string())?;
    let keyed = KeyedLockLayer::builder(locks, KeySource::path_param("/orders/{id}", "id"))
        .methods(["POST"])
        .build()
        .map_err(|e| e.to_string())?;
    let app = Router::new()
        .route("/products/{id}", get(origin))
        .route_layer(cached)
        .merge(
            Router::new()
                .route("/pay", post(origin))
                .route_layer(idempotent),
        )
        .merge(
            Router::new()
                .route("/orders/{id}", post(origin))
                .route_layer(keyed),
        )
        .route("/raw/{id}", get(origin));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("bind: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("address: {e}"))?
        .port();
    println!("EV ready {} {port}", wall_us());
    axum::serve(listener, app)
        .await
        .map_err(|e| format!("serve: {e}"))
}

/// Every handler: the origin's time, then a small cacheable answer.
async fn origin() -> (
    StatusCode,
    [(header::HeaderName, &'static str); 1],
    &'static str,
) {
    tokio::time::sleep(Duration::from_millis(ORIGIN_MS)).await;
    (StatusCode::OK, [(header::CACHE_CONTROL, "max-age=2")], "ok")
}

/// Prints one of lock-core's INFO, WARN or ERROR lines as an event for the coordinator to
/// count (what an operator would read at the default level).
fn print_line(level: Level, message: &str) {
    println!("EV log {} {level} {message}", wall_us());
}
