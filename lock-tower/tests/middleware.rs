//! The keyed-lock layer on an axum router: busy and unavailable answers with their bodies,
//! the fencing token in the handler, cancellation on a lost lease, selection of requests.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::routing::post;
use axum::{Extension, Router};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use lock_core::backend::{AcquireRequest, Capabilities, Grant, LockBackend};
use lock_core::{LockClient, LockError, MemoryBackend, WaitPolicy};
use lock_tower::{
    BusyStatus, KeySource, KeyedLockLayer, KeyedLockOptions, LockInfo, OnLost, ResponseFuture,
};
use tokio::sync::mpsc;
use tokio::time::timeout;
use tower::{service_fn, Layer, Service, ServiceExt};

const LIMIT: Duration = Duration::from_secs(10);

async fn fence(Extension(lock): Extension<LockInfo>) -> String {
    format!("{} {}", lock.key, lock.fence)
}

fn app(locks: LockClient, options: KeyedLockOptions) -> Router {
    Router::new()
        .route("/buy/{sku}", post(fence).get(|| async { "stock" }))
        .layer(
            KeyedLockLayer::new(locks, KeySource::path_param("/buy/{sku}", "sku")).options(options),
        )
}

fn buy(sku: &str) -> Request<Body> {
    Request::post(format!("/buy/{sku}"))
        .body(Body::empty())
        .unwrap()
}

async fn send(app: &Router, request: Request<Body>) -> (StatusCode, http::HeaderMap, String) {
    let response = timeout(LIMIT, app.clone().oneshot(request))
        .await
        .unwrap()
        .unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

#[tokio::test]
async fn the_handler_sees_increasing_fencing_tokens() {
    let app = app(
        LockClient::new(MemoryBackend::new()),
        KeyedLockOptions::new().key_prefix("sku:"),
    );
    let (status, _, first) = send(&app, buy("a")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(first, "sku:a 1");
    let (_, _, second) = send(&app, buy("a")).await;
    assert_eq!(second, "sku:a 2");
}

#[tokio::test]
async fn busy_answers_409_or_429_with_retry_after_and_a_problem() {
    let locks = LockClient::new(MemoryBackend::new());
    let held = locks.lock("sku:a").await.unwrap();
    let options = KeyedLockOptions::new()
        .key_prefix("sku:")
        .retry_after(Duration::from_secs(3));
    let (status, headers, body) = send(&app(locks.clone(), options.clone()), buy("a")).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(headers["retry-after"], "3");
    assert_eq!(headers["content-type"], "application/problem+json");
    assert!(
        body.starts_with(
            r#"{"type":"urn:distributed-lock:busy","title":"Resource busy","status":409,"#
        ),
        "{body}"
    );
    assert!(body.ends_with(r#","key":"sku:a"}"#), "{body}");

    let too_many = options.busy_status(BusyStatus::TooManyRequests);
    let (status, headers, body) = send(&app(locks.clone(), too_many), buy("a")).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers["retry-after"], "3");
    assert!(body.contains(r#""status":429"#));

    // Another key and unselected methods are not held up.
    let (status, _, _) = send(
        &app(locks.clone(), KeyedLockOptions::new().key_prefix("sku:")),
        buy("b"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let get_only = KeyedLockOptions::new().key_prefix("sku:").methods(["POST"]);
    let request = Request::get("/buy/a").body(Body::empty()).unwrap();
    let (status, _, body) = send(&app(locks.clone(), get_only), request).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "stock"));
    held.release().await.unwrap();
}

#[tokio::test]
async fn a_waiting_request_gets_the_lock_when_it_is_released() {
    let backend = MemoryBackend::new();
    let locks = LockClient::new(backend.clone());
    let held = locks.lock("a").await.unwrap();
    let waiting = KeyedLockOptions::new().wait(WaitPolicy::Within(LIMIT));
    let app = app(locks.clone(), waiting);
    let request = tokio::spawn(async move { send(&app, buy("a")).await });
    // Release only once the request is queued behind the holder.
    timeout(LIMIT, async {
        while backend.waiter_count("a") == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    held.release().await.unwrap();
    let (status, _, body) = timeout(LIMIT, request).await.unwrap().unwrap();
    assert_eq!((status, body.as_str()), (StatusCode::OK, "a 2"));
}

/// A backend whose server cannot be reached.
#[derive(Clone)]
struct Unreachable;

impl LockBackend for Unreachable {
    type Lease = ();

    fn capabilities(&self) -> Capabilities {
        Capabilities::new("unreachable")
    }

    async fn acquire(&self, _: AcquireRequest<'_>) -> lock_core::Result<Option<Grant<()>>> {
        Err(LockError::unavailable("unreachable", "connection refused"))
    }

    async fn renew(&self, (): &(), _: Option<Duration>) -> lock_core::Result<bool> {
        Err(LockError::unavailable("unreachable", "connection refused"))
    }

    async fn release(&self, (): &()) -> lock_core::Result<bool> {
        Err(LockError::unavailable("unreachable", "connection refused"))
    }

    async fn release_abandoned(
        &self,
        _: &lock_core::LockKey,
        _: lock_core::backend::LeaseKind,
        _: lock_core::OwnerToken,
    ) -> lock_core::Result<bool> {
        Err(LockError::unavailable("unreachable", "connection refused"))
    }
}

#[tokio::test]
async fn an_unreachable_backend_answers_503_and_never_runs_the_handler() {
    let (status, headers, body) = send(
        &app(LockClient::new(Unreachable), KeyedLockOptions::new()),
        buy("a"),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(headers["retry-after"], "1");
    assert_eq!(headers["content-type"], "application/problem+json");
    assert!(
        body.contains(r#""type":"urn:distributed-lock:unavailable""#),
        "{body}"
    );
    assert!(!body.contains("refused"), "5xx bodies are generic: {body}");
    // The same answer a handler gets from `error_response` for the same error.
    let same: Response<String> =
        lock_tower::error_response(&LockError::unavailable("unreachable", "connection refused"));
    assert_eq!(
        (same.status(), same.body().as_str()),
        (status, body.as_str())
    );

    let exposed = KeyedLockOptions::new().expose_errors(true);
    let (status, _, body) = send(&app(LockClient::new(Unreachable), exposed), buy("a")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains("connection refused"), "{body}");
}

#[tokio::test]
async fn a_missing_key_answers_400() {
    let app = Router::new()
        .route("/", post(|| async { "ran" }))
        .layer(KeyedLockLayer::new(
            LockClient::new(MemoryBackend::new()),
            KeySource::header("Idempotency-Key"),
        ));
    let (status, headers, body) = send(&app, Request::post("/").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(headers["content-type"], "application/problem+json");
    assert!(body.contains("header `Idempotency-Key`"), "{body}");
}

/// Sends on drop: tells the test the handler's future was dropped.
struct DropSignal(mpsc::UnboundedSender<&'static str>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        self.0.send("dropped").ok();
    }
}

async fn lost_lease(on_lost: OnLost) -> (StatusCode, Vec<&'static str>) {
    let backend = MemoryBackend::new();
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let (finish_tx, finish) = tokio::sync::watch::channel(false);
    let handler = move || {
        let (events_tx, mut finish) = (events_tx.clone(), finish.clone());
        async move {
            let _signal = DropSignal(events_tx.clone());
            events_tx.send("entered").ok();
            finish.wait_for(|go| *go).await.ok();
            events_tx.send("finished").ok();
            "done"
        }
    };
    let app = Router::new().route("/job/{id}", post(handler)).layer(
        KeyedLockLayer::new(LockClient::new(backend.clone()), KeySource::path_index(1))
            .options(KeyedLockOptions::new().key_prefix("job:").on_lost(on_lost)),
    );
    let request = tokio::spawn(async move {
        send(&app, Request::post("/job/7").body(Body::empty()).unwrap()).await
    });
    assert_eq!(events.recv().await, Some("entered"));
    assert!(backend.simulate_external_delete("job:7"));
    if on_lost == OnLost::Continue {
        finish_tx.send(true).unwrap();
    }
    let (status, _, _) = timeout(LIMIT, request).await.unwrap().unwrap();
    let mut seen = vec!["entered"];
    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
    (status, seen)
}

#[tokio::test]
async fn a_lost_lease_cancels_the_handler_with_503() {
    let (status, events) = lost_lease(OnLost::Cancel).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(events, ["entered", "dropped"]);
}

#[tokio::test]
async fn a_lost_lease_can_be_left_to_the_handler() {
    let (status, events) = lost_lease(OnLost::Continue).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(events, ["entered", "finished", "dropped"]);
}

#[tokio::test]
async fn errors_of_the_inner_service_pass_through_and_infallible_stays_infallible() {
    #[derive(Debug, PartialEq)]
    struct Broken;
    let failing = service_fn(|_: Request<String>| async { Err::<Response<String>, _>(Broken) });
    let layer = KeyedLockLayer::new(
        LockClient::new(MemoryBackend::new()),
        KeySource::path_index(0),
    );
    let mut service = layer.layer(failing);
    let request = Request::post("/k").body(String::new()).unwrap();
    let error = service
        .ready()
        .await
        .unwrap()
        .call(request)
        .await
        .unwrap_err();
    assert_eq!(error, Broken);

    let infallible = service_fn(|_: Request<String>| async {
        Ok::<_, Infallible>(Response::new(String::new()))
    });
    let service = layer.layer(infallible);
    fn stays_infallible<S>(_: &S)
    where
        S: Service<
            Request<String>,
            Error = Infallible,
            Future = ResponseFuture<Result<Response<String>, Infallible>>,
        >,
    {
    }
    stays_infallible(&service);
}

/// Item 1: a layer on a router merged into an app leaves the app's other routes and its 404s
/// alone.
#[tokio::test]
async fn a_layer_on_a_merged_router_passes_unmatched_requests_through() {
    let locks = LockClient::new(MemoryBackend::new());
    let shop = Router::new()
        .route("/buy/{sku}", post(fence))
        .layer(KeyedLockLayer::new(
            locks.clone(),
            KeySource::path_param("/buy/{sku}", "sku"),
        ));
    let app = Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .merge(shop);
    let get = |uri: &str| Request::get(uri).body(Body::empty()).unwrap();
    assert_eq!(send(&app, get("/")).await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        send(&app, get("/nowhere/at/all")).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(send(&app, get("/health")).await.0, StatusCode::OK);
    let (status, _, body) = send(&app, buy("a")).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "a 1"));
    // Its own route with a malformed key is still the layer's 400.
    assert_eq!(send(&app, buy("%zz")).await.0, StatusCode::BAD_REQUEST);

    // A header key on `route_layer`: only matched routes see the layer.
    let paid = Router::new()
        .route("/pay", post(|| async { "paid" }))
        .route_layer(KeyedLockLayer::new(
            locks,
            KeySource::header("Idempotency-Key"),
        ));
    let app = Router::new().merge(paid);
    assert_eq!(send(&app, get("/")).await.0, StatusCode::NOT_FOUND);
    let pay = Request::post("/pay").body(Body::empty()).unwrap();
    assert_eq!(send(&app, pay).await.0, StatusCode::BAD_REQUEST);
}

/// Item 2: a zero wait is a try, as `acquire_within(Duration::ZERO)` is.
#[tokio::test]
async fn a_zero_wait_is_a_try() {
    let locks = LockClient::new(MemoryBackend::new());
    let zero = KeyedLockOptions::new().wait(WaitPolicy::Within(Duration::ZERO));
    assert!(zero.validate().is_ok());
    let app = app(locks.clone(), zero.clone());
    assert_eq!(send(&app, buy("a")).await.0, StatusCode::OK);
    let held = locks.lock("a").await.unwrap();
    assert_eq!(send(&app, buy("a")).await.0, StatusCode::CONFLICT);
    held.release().await.unwrap();
    let layer = KeyedLockLayer::builder(locks, KeySource::path_index(1))
        .options(zero)
        .build();
    assert!(layer.is_ok());
}

/// Item 3: bad settings are refused when the layer is built.
#[tokio::test]
async fn the_builder_refuses_bad_settings() {
    let locks = LockClient::new(MemoryBackend::new());
    let builder = || KeyedLockLayer::builder(locks.clone(), KeySource::path_index(1));
    assert!(builder().methods([""]).build().is_err());
    assert!(builder().methods(["PO ST"]).build().is_err());
    assert!(builder().key_prefix("sku\0").build().is_err());
    assert!(builder()
        .lease(lock_tower::LeaseMode::fixed(Duration::from_millis(1)))
        .build()
        .is_err());
    assert!(builder().retry_after(Duration::ZERO).build().is_err());
    let layer = builder()
        .wait(WaitPolicy::Within(Duration::from_secs(1)))
        .key_prefix("sku:")
        .methods(["POST"])
        .busy_status(BusyStatus::TooManyRequests)
        .retry_after(Duration::from_secs(2))
        .lease(lock_tower::LeaseMode::watchdog(Duration::from_secs(10)))
        .on_lost(OnLost::Cancel)
        .expose_errors(false)
        .build()
        .unwrap();
    let app = Router::new().route("/buy/{sku}", post(fence)).layer(layer);
    let (status, _, body) = send(&app, buy("a")).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "sku:a 1"));
}

/// Item 4: a Redis that went away answers a 503 that names neither Redis, its address nor the
/// OS error.
#[tokio::test]
async fn a_dead_redis_answers_a_generic_503() {
    use lock_core::testing::{free_port, RedisServer};
    let dir = std::env::temp_dir().join(format!("lock-tower-dead-redis-{}", std::process::id()));
    let mut server = RedisServer::start(free_port(), dir);
    let backend = lock_core::RedisBackend::builder(server.url())
        .response_timeout(Duration::from_millis(300))
        .attempts(1)
        .connect()
        .await
        .unwrap();
    let locks = LockClient::new(backend);
    let layer = |expose| {
        KeyedLockLayer::builder(locks.clone(), KeySource::path_param("/buy/{sku}", "sku"))
            .key_prefix("sku:")
            .expose_errors(expose)
            .build()
            .unwrap()
    };
    let generic = Router::new()
        .route("/buy/{sku}", post(fence))
        .layer(layer(false));
    assert_eq!(send(&generic, buy("a")).await.0, StatusCode::OK);
    server.kill();
    let (status, _, body) = send(&generic, buy("a")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    for secret in ["redis", "Redis", "refused", "127.0.0.1", "sku:a"] {
        assert!(!body.contains(secret), "{secret} in {body}");
    }
    let exposed = Router::new()
        .route("/buy/{sku}", post(fence))
        .layer(layer(true));
    let (status, _, body) = send(&exposed, buy("a")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.to_lowercase().contains("redis"), "{body}");
}

/// Items 5 and 6: the adapter exports what its snippets need, and a handler's own lock error
/// answers as the layer would.
#[tokio::test]
async fn a_handler_answers_its_lock_errors_like_the_layer() {
    use axum::extract::State;
    use lock_tower::{FencingToken, LockRejection};

    async fn restock(State(locks): State<LockClient>) -> Result<String, axum::response::Response> {
        let wait = lock_tower::WaitPolicy::Try;
        let guard = locks
            .lock("stock")
            .owner(&lock_core::LockOwner::new())
            .acquire_with(wait)
            .await
            .map_err(|e| LockRejection::from(e).into_response())?
            .ok_or_else(|| {
                let busy = LockError::Busy {
                    key: "stock".into(),
                    waited: Duration::ZERO,
                };
                lock_tower::error_response(&busy)
            })?;
        let fence: FencingToken = guard.fencing_token();
        guard
            .release()
            .await
            .map_err(|e| LockRejection::from(e).into_response())?;
        Ok(format!("restocked under {fence}"))
    }
    let locks = LockClient::new(MemoryBackend::new());
    let app = Router::new()
        .route("/restock", post(restock))
        .with_state(locks.clone());
    let restock_request = || Request::post("/restock").body(Body::empty()).unwrap();
    assert_eq!(send(&app, restock_request()).await.0, StatusCode::OK);
    let held = locks.lock("stock").await.unwrap();
    let (status, headers, body) = send(&app, restock_request()).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(headers["content-type"], "application/problem+json");
    assert_eq!(headers["retry-after"], "1");
    assert!(
        body.contains(r#""type":"urn:distributed-lock:busy""#),
        "{body}"
    );
    held.release().await.unwrap();
    let info: Option<lock_tower::LockInfo> = None;
    assert!(info.is_none());
}
