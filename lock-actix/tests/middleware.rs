//! The keyed-lock middleware on an actix-web app: busy and unavailable answers with their
//! bodies, the fencing token in the handler, cancellation on a lost lease, request selection.

use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::test::{self, TestRequest};
use actix_web::{web, App};
use lock_actix::{BusyStatus, KeySource, KeyedLock, KeyedLockOptions, LockFence, OnLost};
use lock_core::backend::{AcquireRequest, Capabilities, Grant, LockBackend};
use lock_core::{LockClient, LockError, MemoryBackend, WaitPolicy};
use tokio::sync::mpsc;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(10);

async fn fence(lock: LockFence) -> String {
    format!("{} {}", lock.key, lock.fence)
}

async fn app(
    locks: LockClient,
    options: KeyedLockOptions,
) -> impl Service<actix_http::Request, Response = ServiceResponse, Error = actix_web::Error> {
    test::init_service(
        App::new().service(
            web::resource("/buy/{sku}")
                .wrap(
                    KeyedLock::new(locks, KeySource::path_param("/buy/{sku}", "sku"))
                        .options(options),
                )
                .route(web::post().to(fence))
                .route(web::get().to(|| async { "stock" })),
        ),
    )
    .await
}

async fn send<B: MessageBody + 'static>(
    app: &impl Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    request: TestRequest,
) -> (StatusCode, actix_web::http::header::HeaderMap, String) {
    let response = timeout(LIMIT, app.call(request.to_request()))
        .await
        .unwrap();
    let response = match response {
        Ok(response) => response.map_into_boxed_body(),
        // What actix's dispatcher sends for an error: the lost-lease 503 travels this way.
        Err(error) => ServiceResponse::new(
            TestRequest::default().to_http_request(),
            error.error_response(),
        ),
    };
    let (status, headers) = (response.status(), response.headers().clone());
    let body = test::read_body(response).await;
    (status, headers, String::from_utf8(body.to_vec()).unwrap())
}

fn buy(sku: &str) -> TestRequest {
    TestRequest::post().uri(&format!("/buy/{sku}"))
}

#[actix_web::test]
async fn the_handler_sees_increasing_fencing_tokens() {
    let app = app(
        LockClient::new(MemoryBackend::new()),
        KeyedLockOptions::new().key_prefix("sku:"),
    )
    .await;
    assert_eq!(send(&app, buy("a")).await.2, "sku:a 1");
    let (status, _, body) = send(&app, buy("a")).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "sku:a 2"));
}

#[actix_web::test]
async fn busy_answers_409_or_429_with_retry_after_and_a_problem() {
    let locks = LockClient::new(MemoryBackend::new());
    let held = locks.lock("sku:a").await.unwrap();
    let options = KeyedLockOptions::new()
        .key_prefix("sku:")
        .retry_after(Duration::from_secs(3));
    let (status, headers, body) = send(&app(locks.clone(), options.clone()).await, buy("a")).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(headers.get("retry-after").unwrap(), "3");
    assert_eq!(
        headers.get("content-type").unwrap(),
        "application/problem+json"
    );
    assert!(
        body.starts_with(
            r#"{"type":"urn:distributed-lock:busy","title":"Resource busy","status":409,"#
        ),
        "{body}"
    );
    assert!(body.ends_with(r#","key":"sku:a"}"#), "{body}");

    let too_many = options.busy_status(BusyStatus::TooManyRequests);
    let (status, headers, body) = send(&app(locks.clone(), too_many).await, buy("a")).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers.get("retry-after").unwrap(), "3");
    assert!(body.contains(r#""status":429"#));

    let plain = KeyedLockOptions::new().key_prefix("sku:");
    assert_eq!(
        send(&app(locks.clone(), plain).await, buy("b")).await.0,
        StatusCode::OK
    );
    let post_only = KeyedLockOptions::new().key_prefix("sku:").methods(["POST"]);
    let (status, _, body) = send(
        &app(locks.clone(), post_only).await,
        TestRequest::get().uri("/buy/a"),
    )
    .await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "stock"));
    held.release().await.unwrap();
}

#[actix_web::test]
async fn a_waiting_request_gets_the_lock_when_it_is_released() {
    let backend = MemoryBackend::new();
    let locks = LockClient::new(backend.clone());
    let held = locks.lock("a").await.unwrap();
    let app = app(
        locks.clone(),
        KeyedLockOptions::new().wait(WaitPolicy::Within(LIMIT)),
    )
    .await;
    let release = async {
        // Release only once the request is queued behind the holder.
        while backend.waiter_count("a") == 0 {
            tokio::task::yield_now().await;
        }
        held.release().await.unwrap();
    };
    let ((status, _, body), ()) =
        timeout(LIMIT, async { tokio::join!(send(&app, buy("a")), release) })
            .await
            .unwrap();
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

#[actix_web::test]
async fn an_unreachable_backend_answers_503_and_never_runs_the_handler() {
    let down = app(LockClient::new(Unreachable), KeyedLockOptions::new()).await;
    let (status, headers, body) = send(&down, buy("a")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(headers.get("retry-after").unwrap(), "1");
    assert_eq!(
        headers.get("content-type").unwrap(),
        "application/problem+json"
    );
    assert!(
        body.contains(r#""type":"urn:distributed-lock:unavailable""#),
        "{body}"
    );
    assert!(!body.contains("refused"), "5xx bodies are generic: {body}");
    // The same answer a handler gets from `LockRejection` for the same error.
    let same = lock_actix::LockRejection::from(LockError::unavailable(
        "unreachable",
        "connection refused",
    ));
    let same = actix_web::ResponseError::error_response(&same);
    assert_eq!(same.status(), status);
    let same_body = actix_web::body::to_bytes(same.into_body()).await.unwrap();
    assert_eq!(same_body, body.as_bytes());

    let exposed = KeyedLockOptions::new().expose_errors(true);
    let exposed = app(LockClient::new(Unreachable), exposed).await;
    let (status, _, body) = send(&exposed, buy("a")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains("connection refused"), "{body}");
}

#[actix_web::test]
async fn a_missing_key_answers_400() {
    let locks = LockClient::new(MemoryBackend::new());
    let app = test::init_service(
        App::new()
            .wrap(KeyedLock::new(locks, KeySource::header("Idempotency-Key")))
            .route("/", web::post().to(|| async { "ran" })),
    )
    .await;
    let (status, headers, body) = send(&app, TestRequest::post().uri("/")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        headers.get("content-type").unwrap(),
        "application/problem+json"
    );
    assert!(body.contains("header `Idempotency-Key`"), "{body}");
    let (status, _, body) = send(
        &app,
        TestRequest::post()
            .uri("/")
            .insert_header(("idempotency-key", "k1")),
    )
    .await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "ran"));
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
    let app = test::init_service(
        App::new()
            .wrap(
                KeyedLock::new(LockClient::new(backend.clone()), KeySource::path_index(1))
                    .options(KeyedLockOptions::new().key_prefix("job:").on_lost(on_lost)),
            )
            .route("/job/{id}", web::post().to(handler)),
    )
    .await;
    let interfere = async {
        assert_eq!(events.recv().await, Some("entered"));
        assert!(backend.simulate_external_delete("job:7"));
        if on_lost == OnLost::Continue {
            finish_tx.send(true).unwrap();
        }
    };
    let ((status, _, _), ()) = timeout(LIMIT, async {
        tokio::join!(send(&app, TestRequest::post().uri("/job/7")), interfere)
    })
    .await
    .unwrap();
    let mut seen = vec!["entered"];
    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
    (status, seen)
}

#[actix_web::test]
async fn a_lost_lease_cancels_the_handler_with_503() {
    let (status, events) = lost_lease(OnLost::Cancel).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(events, ["entered", "dropped"]);
}

#[actix_web::test]
async fn a_lost_lease_can_be_left_to_the_handler() {
    let (status, events) = lost_lease(OnLost::Continue).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(events, ["entered", "finished", "dropped"]);
}

#[actix_web::test]
async fn the_fence_extractor_outside_the_middleware_is_a_500() {
    let app = test::init_service(App::new().route("/", web::post().to(fence))).await;
    assert_eq!(
        send(&app, TestRequest::post().uri("/")).await.0,
        StatusCode::INTERNAL_SERVER_ERROR
    );
}

/// Item 1: middleware wrapped around the whole app leaves other routes and 404s alone when
/// its key's route template does not match.
#[actix_web::test]
async fn app_wide_middleware_passes_unmatched_requests_through() {
    let locks = LockClient::new(MemoryBackend::new());
    let app = test::init_service(
        App::new()
            .wrap(KeyedLock::new(
                locks,
                KeySource::path_param("/buy/{sku}", "sku"),
            ))
            .route("/buy/{sku}", web::post().to(fence))
            .route("/health", web::get().to(|| async { "ok" })),
    )
    .await;
    let (status, _, _) = send(&app, TestRequest::get().uri("/")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, body) = send(&app, TestRequest::get().uri("/health")).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "ok"));
    let (status, _, body) = send(&app, buy("a")).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "a 1"));
    assert_eq!(send(&app, buy("%zz")).await.0, StatusCode::BAD_REQUEST);
}

/// Item 2: a zero wait is a try, as `acquire_within(Duration::ZERO)` is.
#[actix_web::test]
async fn a_zero_wait_is_a_try() {
    let locks = LockClient::new(MemoryBackend::new());
    let zero = KeyedLockOptions::new().wait(WaitPolicy::Within(Duration::ZERO));
    assert!(zero.validate().is_ok());
    let app = app(locks.clone(), zero).await;
    assert_eq!(send(&app, buy("a")).await.0, StatusCode::OK);
    let held = locks.lock("a").await.unwrap();
    assert_eq!(send(&app, buy("a")).await.0, StatusCode::CONFLICT);
    held.release().await.unwrap();
}

/// Item 3: bad settings are refused when the middleware is built.
#[actix_web::test]
async fn the_builder_refuses_bad_settings() {
    let locks = LockClient::new(MemoryBackend::new());
    let builder = || KeyedLock::builder(locks.clone(), KeySource::path_param("/buy/{sku}", "sku"));
    assert!(builder().methods([""]).build().is_err());
    assert!(builder().key_prefix("sku\0").build().is_err());
    assert!(builder()
        .lease(lock_actix::LeaseMode::fixed(Duration::from_millis(1)))
        .build()
        .is_err());
    assert!(builder().retry_after(Duration::ZERO).build().is_err());
    let lock = builder()
        .wait(lock_actix::WaitPolicy::Within(Duration::from_secs(1)))
        .key_prefix("sku:")
        .methods(["POST"])
        .busy_status(BusyStatus::TooManyRequests)
        .retry_after(Duration::from_secs(2))
        .on_lost(OnLost::Cancel)
        .build()
        .unwrap();
    let app = test::init_service(
        App::new().service(
            web::resource("/buy/{sku}")
                .wrap(lock)
                .route(web::post().to(fence)),
        ),
    )
    .await;
    let (status, _, body) = send(&app, buy("a")).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "sku:a 1"));
}

/// Item 4: a Redis that went away answers a 503 that names neither Redis, its address nor the
/// OS error.
#[actix_web::test]
async fn a_dead_redis_answers_a_generic_503() {
    use lock_core::testing::{free_port, RedisServer};
    let dir = std::env::temp_dir().join(format!("lock-actix-dead-redis-{}", std::process::id()));
    let mut server = RedisServer::start(free_port(), dir);
    let backend = lock_core::RedisBackend::builder(server.url())
        .response_timeout(Duration::from_millis(300))
        .attempts(1)
        .connect()
        .await
        .unwrap();
    let locks = LockClient::new(backend);
    let options = KeyedLockOptions::new().key_prefix("sku:");
    let generic = app(locks.clone(), options.clone()).await;
    assert_eq!(send(&generic, buy("a")).await.0, StatusCode::OK);
    server.kill();
    let (status, _, body) = send(&generic, buy("a")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    for secret in ["redis", "Redis", "refused", "127.0.0.1", "sku:a"] {
        assert!(!body.contains(secret), "{secret} in {body}");
    }
    let exposed = app(locks, options.expose_errors(true)).await;
    let (status, _, body) = send(&exposed, buy("a")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.to_lowercase().contains("redis"), "{body}");
}

/// Items 5 and 6: the adapter exports what its snippets need, and a handler's own lock error
/// answers as the middleware would.
#[actix_web::test]
async fn a_handler_answers_its_lock_errors_like_the_middleware() {
    use lock_actix::{FencingToken, LockInfo, LockRejection};

    async fn restock(locks: web::Data<LockClient>) -> Result<String, LockRejection> {
        let guard = locks
            .lock("stock")
            .owner(&lock_core::LockOwner::new())
            .acquire_with(lock_actix::WaitPolicy::Try)
            .await?
            .ok_or_else(|| {
                LockRejection::from(LockError::Busy {
                    key: "stock".into(),
                    waited: Duration::ZERO,
                })
            })?;
        let fence: FencingToken = guard.fencing_token();
        guard.release().await?;
        Ok(format!("restocked under {fence}"))
    }
    let locks = LockClient::new(MemoryBackend::new());
    let app = test::init_service(
        App::new()
            .app_data(web::Data::new(locks.clone()))
            .route("/restock", web::post().to(restock)),
    )
    .await;
    let (status, _, _) = send(&app, TestRequest::post().uri("/restock")).await;
    assert_eq!(status, StatusCode::OK);
    let held = locks.lock("stock").await.unwrap();
    let (status, headers, body) = send(&app, TestRequest::post().uri("/restock")).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        headers.get("content-type").unwrap(),
        "application/problem+json"
    );
    assert_eq!(headers.get("retry-after").unwrap(), "1");
    assert!(
        body.contains(r#""type":"urn:distributed-lock:busy""#),
        "{body}"
    );
    held.release().await.unwrap();
    let info: Option<LockInfo> = None;
    assert!(info.is_none());
}
