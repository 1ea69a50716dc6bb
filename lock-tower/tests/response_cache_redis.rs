//! The response cache layer on a real Redis: two instances (two caches on two connections)
//! call the handler once for a crowd of cold requests; with Redis stopped, requests are
//! answered fail-open (or a generic 503 when the cache fails closed).
//!
//! Needs `LOCK_TEST_REDIS_URL` (set by `cargo xtask test`); the outage test also starts a
//! `redis-server` of its own.

mod redis_server;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Path;
use axum::routing::get;
use axum::Router;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use lock_core::cache::{Cache, OnBackendError, RedisCacheStore};
use lock_core::RedisBackend;
use lock_tower::ResponseCacheLayer;
use redis_server::{free_port, Server};
use tokio::time::timeout;
use tower::ServiceExt;

const LIMIT: Duration = Duration::from_secs(30);

fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

async fn cache(url: &str, namespace: &str, on_error: OnBackendError) -> Cache {
    let backend = RedisBackend::connect(url).await.unwrap();
    let store = RedisCacheStore::connect(&backend).await.unwrap();
    Cache::builder(store, backend)
        .namespace(namespace)
        .on_backend_error(on_error)
        .build()
        .unwrap()
}

/// One instance of the service: its own cache on its own connections, a shared call count.
fn instance(cache: Cache, calls: &Arc<AtomicUsize>) -> Router {
    let calls = calls.clone();
    Router::new()
        .route(
            "/products/{id}",
            get(move |Path(id): Path<u32>| async move {
                calls.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(300)).await;
                ([("cache-control", "max-age=60")], format!("product {id}"))
            }),
        )
        .layer(ResponseCacheLayer::builder(cache).build().unwrap())
}

async fn send(app: &Router, path: &str) -> (StatusCode, String, String) {
    let request = Request::get(path).body(Body::empty()).unwrap();
    let response = timeout(LIMIT, app.clone().oneshot(request))
        .await
        .expect("answered in time")
        .unwrap();
    let status = response.status();
    let cache_status = response.headers()["cache-status"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        cache_status,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_call_the_handler_once() {
    let Some(url) = lock_core::testing::server_url("LOCK_TEST_REDIS_URL").expect("test server")
    else {
        return;
    };
    let namespace = unique("tower-two");
    let calls = Arc::new(AtomicUsize::new(0));
    let apps = [
        instance(
            cache(&url, &namespace, OnBackendError::FailOpen).await,
            &calls,
        ),
        instance(
            cache(&url, &namespace, OnBackendError::FailOpen).await,
            &calls,
        ),
    ];
    let mut tasks = Vec::new();
    for n in 0..100 {
        let app = apps[n % 2].clone();
        tasks.push(tokio::spawn(async move { send(&app, "/products/9").await }));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        let (status, cache_status, body) = task.await.unwrap();
        assert_eq!((status, body.as_str()), (StatusCode::OK, "product 9"));
        statuses.push(cache_status);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "{statuses:?}");
    let stored = statuses.iter().filter(|s| s.ends_with("; stored")).count();
    assert_eq!(stored, 1, "{statuses:?}");
    // The other instance reads what the first stored.
    let (_, cache_status, _) = send(&apps[1], "/products/9").await;
    assert!(cache_status.starts_with("lock-core; hit"), "{cache_status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_fails_open_or_answers_a_generic_503() {
    if lock_core::testing::server_url("LOCK_TEST_REDIS_URL")
        .expect("test server")
        .is_none()
    {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tower-cache-outage-{}", std::process::id()));
    let mut server = Server::start(free_port(), dir);
    let namespace = unique("tower-down");
    let calls = Arc::new(AtomicUsize::new(0));
    let open = instance(
        cache(&server.url(), &namespace, OnBackendError::FailOpen).await,
        &calls,
    );
    let closed = instance(
        cache(&server.url(), &namespace, OnBackendError::FailClosed).await,
        &calls,
    );
    server.kill();
    let (status, cache_status, body) = send(&open, "/products/1").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "product 1"));
    assert_eq!(
        cache_status,
        "lock-core; fwd=miss; fwd-status=200; detail=fail-open"
    );
    // Requests of one process still share one call while the backend is down.
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let open = open.clone();
        tasks.push(tokio::spawn(
            async move { send(&open, "/products/2").await },
        ));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        let (status, cache_status, body) = task.await.unwrap();
        assert_eq!((status, body.as_str()), (StatusCode::OK, "product 2"));
        statuses.push(cache_status);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 2, "{statuses:?}");
    let collapsed = statuses
        .iter()
        .filter(|s| {
            s.starts_with("lock-core; fwd=miss; collapsed; ttl=")
                && s.ends_with("; detail=fail-open")
        })
        .count();
    assert_eq!(collapsed, 19, "{statuses:?}");
    let (status, cache_status, body) = send(&closed, "/products/1").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(cache_status, "lock-core; fwd=miss; detail=unavailable");
    assert!(
        body.contains("urn:distributed-lock:cache-unavailable"),
        "{body}"
    );
    let port = server
        .url()
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_owned();
    for leak in ["redis", "refused", "127.0.0.1", port.as_str()] {
        assert!(!body.to_lowercase().contains(leak), "{leak} in {body}");
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "fail closed never calls the handler"
    );
}
