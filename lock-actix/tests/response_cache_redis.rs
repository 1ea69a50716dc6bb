//! The response cache middleware on a real Redis: two instances (two caches on two
//! connections) call the handler once for a crowd of cold requests; with Redis stopped,
//! requests are answered fail-open (or a generic 503 when the cache fails closed).
//!
//! Needs `LOCK_TEST_REDIS_URL` (set by `cargo xtask test`); the outage test also starts a
//! `redis-server` of its own.

mod redis_server;

use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::test::{self, TestRequest};
use actix_web::{web, App, HttpResponse};
use lock_actix::ResponseCache;
use lock_core::cache::{Cache, OnBackendError, RedisCacheStore};
use lock_core::RedisBackend;
use redis_server::{free_port, Server};
use tokio::time::timeout;

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

async fn product(calls: web::Data<Arc<AtomicUsize>>, id: web::Path<u32>) -> HttpResponse {
    calls.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    HttpResponse::Ok()
        .insert_header(("cache-control", "max-age=60"))
        .body(format!("product {id}"))
}

/// One instance of the service: its own cache on its own connections, a shared call count.
async fn instance(
    cache: Cache,
    calls: &Arc<AtomicUsize>,
) -> Rc<
    impl Service<
        actix_http::Request,
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
    >,
> {
    Rc::new(
        test::init_service(
            App::new()
                .app_data(web::Data::new(calls.clone()))
                .wrap(ResponseCache::builder(cache).build().unwrap())
                .route("/products/{id}", web::get().to(product)),
        )
        .await,
    )
}

async fn send<S, B>(app: &S, path: &str) -> (StatusCode, String, String)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let request = TestRequest::get().uri(path).to_request();
    let response = timeout(LIMIT, app.call(request))
        .await
        .expect("answered in time")
        .unwrap();
    let status = response.status();
    let cache_status = response
        .headers()
        .get("cache-status")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let body = actix_web::body::to_bytes(response.into_body())
        .await
        .map_err(|_| "body error")
        .unwrap();
    (
        status,
        cache_status,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

#[actix_web::test]
async fn two_instances_call_the_handler_once() {
    let Some(url) = lock_core::testing::server_url("LOCK_TEST_REDIS_URL").expect("test server")
    else {
        return;
    };
    let namespace = unique("actix-two");
    let calls = Arc::new(AtomicUsize::new(0));
    let a = instance(
        cache(&url, &namespace, OnBackendError::FailOpen).await,
        &calls,
    )
    .await;
    let b = instance(
        cache(&url, &namespace, OnBackendError::FailOpen).await,
        &calls,
    )
    .await;
    let mut tasks = Vec::new();
    for n in 0..100 {
        let (a, b) = (a.clone(), b.clone());
        tasks.push(actix_web::rt::spawn(async move {
            if n % 2 == 0 {
                send(&*a, "/products/9").await
            } else {
                send(&*b, "/products/9").await
            }
        }));
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
    let (_, cache_status, _) = send(&*b, "/products/9").await;
    assert!(cache_status.starts_with("lock-core; hit"), "{cache_status}");
}

#[actix_web::test]
async fn redis_down_fails_open_or_answers_a_generic_503() {
    if lock_core::testing::server_url("LOCK_TEST_REDIS_URL")
        .expect("test server")
        .is_none()
    {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("actix-cache-outage-{}", std::process::id()));
    let mut server = Server::start(free_port(), dir);
    let namespace = unique("actix-down");
    let calls = Arc::new(AtomicUsize::new(0));
    let open = instance(
        cache(&server.url(), &namespace, OnBackendError::FailOpen).await,
        &calls,
    )
    .await;
    let closed = instance(
        cache(&server.url(), &namespace, OnBackendError::FailClosed).await,
        &calls,
    )
    .await;
    server.kill();
    let (status, cache_status, body) = send(&*open, "/products/1").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "product 1"));
    assert_eq!(
        cache_status,
        "lock-core; fwd=miss; fwd-status=200; detail=fail-open"
    );
    // Requests of one process still share one call while the backend is down.
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let open = open.clone();
        tasks.push(actix_web::rt::spawn(async move {
            send(&*open, "/products/2").await
        }));
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
    let (status, cache_status, body) = send(&*closed, "/products/1").await;
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
