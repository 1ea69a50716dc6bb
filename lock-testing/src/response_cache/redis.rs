//! The scenarios on a real Redis (`LOCK_TEST_REDIS_URL`; skipped loudly without it, unless
//! servers are required).

use std::path::Path;
use std::time::Duration;

use tokio::time::timeout;

use super::origin::{Calls, Origin};
use super::{http_cache, together, Adapter, Answer, Request};
use crate::{free_port, server_url, unique, RedisServer};
use lock_core::cache::{Cache, OnBackendError};
use lock_core::redis::RedisResultStore;
use lock_core::RedisBackend;

/// How long the Redis scenarios wait for an answer's head.
const LIMIT: Duration = Duration::from_secs(30);

async fn cache(url: &str, namespace: &str, on_error: OnBackendError) -> Cache {
    let backend = RedisBackend::connect(url).await.unwrap();
    let store = RedisResultStore::from_backend(&backend).await.unwrap();
    Cache::builder(store, backend)
        .namespace(namespace)
        .on_backend_error(on_error)
        .build()
        .unwrap()
}

/// One instance of the service: its own cache on its own connections, a shared call count.
async fn instance<A: Adapter>(cache: Cache, calls: &Calls) -> A::App {
    let origin = Origin::products(calls, "max-age=60", Duration::from_millis(300), false);
    A::app(http_cache(cache, None), origin).await
}

/// One instance of the service in front of `origin`: its own cache (failing open) on its own
/// connections to the Redis at `url`.
async fn failing_instance<A: Adapter>(url: &str, namespace: &str, origin: &Origin) -> A::App {
    let cache = cache(url, namespace, OnBackendError::FailOpen).await;
    A::app(http_cache(cache, None), origin.clone()).await
}

/// Status, `Cache-Status` (which every answer has) and body.
async fn send<A: Adapter>(app: &A::App, path: &str) -> (u16, String, String) {
    let response = timeout(LIMIT, A::call(app, Request::get(path, &[])))
        .await
        .expect("answered in time");
    let answer = Answer {
        status: response.status,
        headers: response.headers,
        body: response.body.await,
    };
    assert!(answer.headers.contains("cache-status"));
    let cache_status = answer.headers.get("cache-status").to_owned();
    (answer.status, cache_status, answer.text())
}

/// Two instances on one Redis namespace, 100 cold requests spread over both: the origin runs
/// once, one answer is stored, and the other instance then hits it.
///
/// # Panics
/// When they do not, or when Redis is required but `LOCK_TEST_REDIS_URL` is unset.
pub async fn two_instances_call_the_handler_once<A: Adapter>() {
    let Some(url) = server_url("LOCK_TEST_REDIS_URL").expect("test server") else {
        return;
    };
    let namespace = unique(&format!("{}-two", A::NAME));
    let calls = Calls::default();
    let apps = [
        instance::<A>(
            cache(&url, &namespace, OnBackendError::FailOpen).await,
            &calls,
        )
        .await,
        instance::<A>(
            cache(&url, &namespace, OnBackendError::FailOpen).await,
            &calls,
        )
        .await,
    ];
    let answers = together((0..100).map(|n| send::<A>(&apps[n % 2], "/products/9"))).await;
    let mut statuses = Vec::new();
    for (status, cache_status, body) in answers {
        assert_eq!((status, body.as_str()), (200, "product 9"));
        statuses.push(cache_status);
    }
    assert_eq!(calls.count(), 1, "{statuses:?}");
    let stored = statuses.iter().filter(|s| s.ends_with("; stored")).count();
    assert_eq!(stored, 1, "{statuses:?}");
    // The other instance reads what the first stored.
    let (_, cache_status, _) = send::<A>(&apps[1], "/products/9").await;
    assert!(cache_status.starts_with("lock-core; hit"), "{cache_status}");
}

/// With its own `redis-server` (working in a directory under `tmp`) killed: a fail-open cache
/// answers from the origin, still one call per key in the process; a fail-closed one answers
/// a generic 503 that names neither Redis nor its address, without calling the origin.
///
/// # Panics
/// When it does not, or when Redis is required but `LOCK_TEST_REDIS_URL` is unset.
pub async fn redis_down_fails_open_or_answers_a_generic_503<A: Adapter>(tmp: &Path) {
    if server_url("LOCK_TEST_REDIS_URL")
        .expect("test server")
        .is_none()
    {
        return;
    }
    let dir = tmp.join(format!("{}-cache-outage-{}", A::NAME, std::process::id()));
    let mut server = RedisServer::start(free_port(), dir);
    let namespace = unique(&format!("{}-down", A::NAME));
    let calls = Calls::default();
    let open = instance::<A>(
        cache(&server.url(), &namespace, OnBackendError::FailOpen).await,
        &calls,
    )
    .await;
    let closed = instance::<A>(
        cache(&server.url(), &namespace, OnBackendError::FailClosed).await,
        &calls,
    )
    .await;
    server.kill();
    let (status, cache_status, body) = send::<A>(&open, "/products/1").await;
    assert_eq!((status, body.as_str()), (200, "product 1"));
    assert_eq!(
        cache_status,
        "lock-core; fwd=miss; fwd-status=200; detail=fail-open"
    );
    // Requests of one process still share one call while the backend is down.
    let answers = together((0..20).map(|_| send::<A>(&open, "/products/2"))).await;
    let mut statuses = Vec::new();
    for (status, cache_status, body) in answers {
        assert_eq!((status, body.as_str()), (200, "product 2"));
        statuses.push(cache_status);
    }
    assert_eq!(calls.count(), 2, "{statuses:?}");
    let collapsed = statuses
        .iter()
        .filter(|s| {
            s.starts_with("lock-core; fwd=miss; collapsed; ttl=")
                && s.ends_with("; detail=fail-open")
        })
        .count();
    assert_eq!(collapsed, 19, "{statuses:?}");
    let (status, cache_status, body) = send::<A>(&closed, "/products/1").await;
    assert_eq!(status, 503);
    assert_eq!(cache_status, "lock-core; fwd=miss; detail=unavailable");
    assert!(
        body.contains("urn:distributed-lock:cache-unavailable"),
        "{body}"
    );
    let port = server.port().to_string();
    for leak in ["redis", "refused", "127.0.0.1", port.as_str()] {
        assert!(!body.to_lowercase().contains(leak), "{leak} in {body}");
    }
    assert_eq!(calls.count(), 2, "fail closed never calls the handler");
}

/// Two instances on one Redis and a failing application: 100 cold requests spread over both
/// call it once, and every request is answered with its `503` and `Retry-After`; with a stored
/// response within its `stale-if-error` window, 100 requests over both call it once and every
/// one is answered with the stored response (the requests that waited too).
///
/// # Panics
/// When they are not, or when Redis is required but `LOCK_TEST_REDIS_URL` is unset.
pub async fn two_instances_share_a_failure<A: Adapter>() {
    let Some(url) = server_url("LOCK_TEST_REDIS_URL").expect("test server") else {
        return;
    };
    let namespace = unique(&format!("{}-failing", A::NAME));
    let calls = Calls::default();
    let origin = Origin::flaky(&calls, Duration::from_millis(300));
    let apps = [
        failing_instance::<A>(&url, &namespace, &origin).await,
        failing_instance::<A>(&url, &namespace, &origin).await,
    ];
    // Stored, then stale within stale-if-error.
    let (status, _, _) = send::<A>(&apps[0], "/products/2").await;
    assert_eq!(status, 200);
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    origin.fail(true);
    let answers = together((0..100).map(|n| send::<A>(&apps[n % 2], "/products/1"))).await;
    assert_eq!(
        calls.count(),
        2,
        "one call for the stored response, one for the cold one"
    );
    for (status, cache_status, body) in answers {
        assert_eq!((status, body.as_str()), (503, "down"), "{cache_status}");
    }
    let answers = together((0..100).map(|n| send::<A>(&apps[n % 2], "/products/2"))).await;
    assert_eq!(
        calls.count(),
        3,
        "one call for the 100 requests of a stale response"
    );
    for (status, cache_status, body) in answers {
        assert_eq!(
            (status, body.as_str()),
            (200, "product 2"),
            "{cache_status}"
        );
        assert!(
            cache_status.contains("detail=stale-if-error"),
            "{cache_status}"
        );
    }
}
