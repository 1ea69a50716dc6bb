//! The keyed-lock layer on an axum router: the adapters' conformance suite
//! (`lock_testing::keyed_lock`: exclusion per key counted by the handler, the fence in
//! the handler, busy and unavailable answers with their bodies, a missing key, request
//! selection, a lost lease, refused settings, a dead Redis), then what is the layer's own:
//! the inner service's errors and `Infallible`, merged routers and `route_layer`, the
//! builder's methods, and `error_response` for a handler's own lock errors.

use std::convert::Infallible;
use std::time::Duration;

use crate::axum_driver::keyed_lock::{handle, AxumKeyedLock};
use axum::extract::State;
use axum::routing::{get, post};
use axum::Router;
use http::Response;
use lock_core::{LockClient, LockError, MemoryBackend};
use lock_testing::keyed_lock::{self as suite, send, Driver, Handler, Request, Unreachable};
use lock_tower::{
    BusyStatus, KeySource, KeyedLockLayer, KeyedLockOptions, LockRejection, OnLost, ResponseFuture,
    WaitPolicy,
};
use tower::{service_fn, Layer, Service, ServiceExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_key_runs_one_request_at_a_time() {
    suite::one_key_runs_one_request_at_a_time::<AxumKeyedLock>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn different_keys_run_at_the_same_time() {
    suite::different_keys_run_at_the_same_time::<AxumKeyedLock>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_request_gets_the_lock_when_it_is_released() {
    suite::a_waiting_request_gets_the_lock_when_it_is_released::<AxumKeyedLock>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lease_cancels_the_handler_with_503() {
    suite::a_lost_lease_cancels_the_handler_with_503::<AxumKeyedLock>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lease_can_be_left_to_the_handler() {
    suite::a_lost_lease_can_be_left_to_the_handler::<AxumKeyedLock>().await;
}

#[tokio::test]
async fn the_handler_sees_increasing_fencing_tokens() {
    suite::the_handler_sees_increasing_fencing_tokens::<AxumKeyedLock>().await;
}

#[tokio::test]
async fn busy_answers_409_or_429_with_retry_after_and_a_problem() {
    suite::busy_answers_409_or_429_with_retry_after_and_a_problem::<AxumKeyedLock>().await;
}

#[tokio::test]
async fn requests_the_middleware_does_not_select_pass_through() {
    suite::requests_the_middleware_does_not_select_pass_through::<AxumKeyedLock>().await;
}

#[tokio::test]
async fn a_missing_or_malformed_key_answers_400() {
    suite::a_missing_or_malformed_key_answers_400::<AxumKeyedLock>().await;
}

#[tokio::test]
async fn an_unreachable_backend_answers_503_and_never_runs_the_handler() {
    suite::an_unreachable_backend_answers_503_and_never_runs_the_handler::<AxumKeyedLock>().await;
}

#[tokio::test]
async fn a_zero_wait_is_a_try() {
    suite::a_zero_wait_is_a_try::<AxumKeyedLock>().await;
}

#[tokio::test]
async fn the_builder_refuses_bad_settings() {
    suite::the_builder_refuses_bad_settings::<AxumKeyedLock>().await;
}

#[tokio::test]
async fn a_dead_redis_answers_a_generic_503() {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    suite::a_dead_redis_answers_a_generic_503::<AxumKeyedLock>(tmp).await;
}

#[tokio::test]
async fn errors_of_the_inner_service_pass_through_and_infallible_stays_infallible() {
    #[derive(Debug, PartialEq)]
    struct Broken;
    let failing =
        service_fn(|_: http::Request<String>| async { Err::<Response<String>, _>(Broken) });
    let layer = KeyedLockLayer::new(
        LockClient::new(MemoryBackend::new()),
        KeySource::path_index(0),
    );
    let mut service = layer.layer(failing);
    let request = http::Request::post("/k").body(String::new()).unwrap();
    let error = service
        .ready()
        .await
        .unwrap()
        .call(request)
        .await
        .unwrap_err();
    assert_eq!(error, Broken);

    let infallible = service_fn(|_: http::Request<String>| async {
        Ok::<_, Infallible>(Response::new(String::new()))
    });
    let service = layer.layer(infallible);
    fn stays_infallible<S>(_: &S)
    where
        S: Service<
            http::Request<String>,
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
    let handler = Handler::new();
    let shop = Router::new()
        .route("/buy/{sku}", post(handle))
        .with_state(handler.clone())
        .layer(KeyedLockLayer::new(
            locks.clone(),
            KeySource::path_param("/buy/{sku}", "sku"),
        ));
    let app = Router::new()
        .route("/health", get(|| async { "ok" }))
        .merge(shop);
    let get = |uri: &str| Request::new("GET", uri);
    assert_eq!(send::<AxumKeyedLock>(&app, get("/")).await.status, 404);
    let nowhere = send::<AxumKeyedLock>(&app, get("/nowhere/at/all")).await;
    assert_eq!(nowhere.status, 404);
    assert_eq!(
        send::<AxumKeyedLock>(&app, get("/health")).await.status,
        200
    );
    let bought = send::<AxumKeyedLock>(&app, Request::post("/buy/a")).await;
    assert_eq!((bought.status, bought.text().as_str()), (200, "a 1"));
    // Its own route with a malformed key is still the layer's 400.
    let malformed = send::<AxumKeyedLock>(&app, Request::post("/buy/%zz")).await;
    assert_eq!(malformed.status, 400);

    // A header key on `route_layer`: only matched routes see the layer.
    let paid = Router::new()
        .route("/pay", post(|| async { "paid" }))
        .route_layer(KeyedLockLayer::new(
            locks,
            KeySource::header("Idempotency-Key"),
        ));
    let app = Router::new().merge(paid);
    assert_eq!(send::<AxumKeyedLock>(&app, get("/")).await.status, 404);
    let pay = send::<AxumKeyedLock>(&app, Request::post("/pay")).await;
    assert_eq!(pay.status, 400);
    assert_eq!(handler.runs(), 1);
}

/// Item 3: every setting of the builder reaches the layer.
#[tokio::test]
async fn the_builder_takes_every_setting() {
    let locks = LockClient::new(MemoryBackend::new());
    let layer = KeyedLockLayer::builder(locks, KeySource::path_param("/buy/{sku}", "sku"))
        .wait(WaitPolicy::Within(Duration::from_secs(1)))
        .key_prefix("sku:")
        .methods(["POST"])
        .path_prefix("/buy")
        .busy_status(BusyStatus::TooManyRequests)
        .retry_after(Duration::from_secs(2))
        .lease(lock_tower::LeaseMode::watchdog(Duration::from_secs(10)))
        .on_lost(OnLost::Cancel)
        .expose_errors(false)
        .build()
        .unwrap();
    let app = AxumKeyedLock::app(layer, Handler::new()).await;
    let bought = send::<AxumKeyedLock>(&app, Request::post("/buy/a")).await;
    assert_eq!((bought.status, bought.text().as_str()), (200, "sku:a 1"));
}

/// The layer answers a backend's error as `error_response` does for the same error.
#[tokio::test]
async fn the_layer_answers_a_backend_error_as_error_response_does() {
    let locks = LockClient::new(Unreachable);
    let options = KeyedLockOptions::new();
    let source = KeySource::path_index(0);
    let app = suite::app::<AxumKeyedLock>(locks, source, options, Handler::new()).await;
    let answer = send::<AxumKeyedLock>(&app, Request::post("/a")).await;
    let same: Response<String> =
        lock_tower::error_response(&LockError::unavailable("unreachable", "connection refused"));
    assert_eq!(
        (same.status().as_u16(), same.body().as_str()),
        (answer.status, answer.text().as_str())
    );
    for (name, value) in same.headers() {
        assert_eq!(answer.header(name.as_str()), value.to_str().ok(), "{name}");
    }
}

/// Items 5 and 6: the adapter exports what its snippets need, and a handler's own lock error
/// answers as the layer would.
#[tokio::test]
async fn a_handler_answers_its_lock_errors_like_the_layer() {
    use lock_tower::FencingToken;

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
    let restock_request = || Request::post("/restock");
    assert_eq!(
        send::<AxumKeyedLock>(&app, restock_request()).await.status,
        200
    );
    let held = locks.lock("stock").await.unwrap();
    let answer = send::<AxumKeyedLock>(&app, restock_request()).await;
    suite::assert_problem(&answer, 409, "urn:distributed-lock:busy");
    assert_eq!(answer.header("retry-after"), Some("1"));
    held.release().await.unwrap();
    let info: Option<lock_tower::LockInfo> = None;
    assert!(info.is_none());
}
