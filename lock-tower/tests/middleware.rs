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
