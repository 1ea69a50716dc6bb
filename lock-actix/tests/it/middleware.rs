//! The keyed-lock middleware on an actix-web app: the adapters' conformance suite
//! (`lock_testing::keyed_lock`: exclusion per key counted by the handler, the fence in
//! the handler, busy and unavailable answers with their bodies, a missing key, request
//! selection, a lost lease, refused settings, a dead Redis), the same answers as lock-tower's
//! layer; then what is the middleware's own: the `HeldLock` extractor outside it, app-wide
//! `wrap` and 404s, the builder's methods, and `LockRejection` for a handler's own lock
//! errors.

use std::time::Duration;

use crate::actix_driver::idempotency::send_fn;
use crate::actix_driver::keyed_lock::{handle, ActixKeyedLock};
use actix_web::{web, App};
use lock_actix::{
    BusyStatus, HeldLock, KeySource, KeyedLock, KeyedLockOptions, LockRejection, OnLost,
};
use lock_core::{LockClient, LockError, MemoryBackend};
use lock_testing::keyed_lock::{self as suite, send, Driver, Handler, Request, Unreachable};

#[actix_web::test]
async fn one_key_runs_one_request_at_a_time() {
    suite::one_key_runs_one_request_at_a_time::<ActixKeyedLock>().await;
}

#[actix_web::test]
async fn different_keys_run_at_the_same_time() {
    suite::different_keys_run_at_the_same_time::<ActixKeyedLock>().await;
}

#[actix_web::test]
async fn a_waiting_request_gets_the_lock_when_it_is_released() {
    suite::a_waiting_request_gets_the_lock_when_it_is_released::<ActixKeyedLock>().await;
}

#[actix_web::test]
async fn a_lost_lease_cancels_the_handler_with_503() {
    suite::a_lost_lease_cancels_the_handler_with_503::<ActixKeyedLock>().await;
}

#[actix_web::test]
async fn a_lost_lease_can_be_left_to_the_handler() {
    suite::a_lost_lease_can_be_left_to_the_handler::<ActixKeyedLock>().await;
}

#[actix_web::test]
async fn the_handler_sees_increasing_fencing_tokens() {
    suite::the_handler_sees_increasing_fencing_tokens::<ActixKeyedLock>().await;
}

#[actix_web::test]
async fn busy_answers_409_or_429_with_retry_after_and_a_problem() {
    suite::busy_answers_409_or_429_with_retry_after_and_a_problem::<ActixKeyedLock>().await;
}

#[actix_web::test]
async fn requests_the_middleware_does_not_select_pass_through() {
    suite::requests_the_middleware_does_not_select_pass_through::<ActixKeyedLock>().await;
}

#[actix_web::test]
async fn a_missing_or_malformed_key_answers_400() {
    suite::a_missing_or_malformed_key_answers_400::<ActixKeyedLock>().await;
}

#[actix_web::test]
async fn an_unreachable_backend_answers_503_and_never_runs_the_handler() {
    suite::an_unreachable_backend_answers_503_and_never_runs_the_handler::<ActixKeyedLock>().await;
}

#[actix_web::test]
async fn a_zero_wait_is_a_try() {
    suite::a_zero_wait_is_a_try::<ActixKeyedLock>().await;
}

#[actix_web::test]
async fn the_builder_refuses_bad_settings() {
    suite::the_builder_refuses_bad_settings::<ActixKeyedLock>().await;
}

#[actix_web::test]
async fn a_dead_redis_answers_a_generic_503() {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    suite::a_dead_redis_answers_a_generic_503::<ActixKeyedLock>(tmp).await;
}

#[actix_web::test]
async fn the_held_lock_extractor_outside_the_middleware_is_a_500_problem() {
    let app = send_fn(
        App::new()
            .route("/", web::post().to(|_: HeldLock| async { "" }))
            .route(
                "/maybe",
                web::post()
                    .to(|lock: Option<HeldLock>| async move { format!("{:?}", lock.map(|l| l.0)) }),
            ),
    )
    .await;
    let answer = send::<ActixKeyedLock>(&app, Request::post("/")).await;
    suite::assert_problem(&answer, 500, "urn:distributed-lock:internal");
    assert!(
        answer
            .text()
            .contains("HeldLock used in a handler that is not wrapped in KeyedLock"),
        "{}",
        answer.text()
    );
    // Optional, it is `None` instead.
    let answer = send::<ActixKeyedLock>(&app, Request::post("/maybe")).await;
    assert_eq!((answer.status, answer.text().as_str()), (200, "None"));
}

/// Item 1: middleware wrapped around the whole app leaves other routes and 404s alone when
/// its key's route template does not match.
#[actix_web::test]
async fn app_wide_middleware_passes_unmatched_requests_through() {
    let locks = LockClient::new(MemoryBackend::new());
    let handler = Handler::new();
    let app = send_fn(
        App::new()
            .app_data(web::Data::new(handler.clone()))
            .wrap(KeyedLock::new(
                locks,
                KeySource::path_param("/buy/{sku}", "sku"),
            ))
            .route("/buy/{sku}", web::post().to(handle))
            .route("/health", web::get().to(|| async { "ok" })),
    )
    .await;
    let get = |uri: &str| Request::new("GET", uri);
    assert_eq!(send::<ActixKeyedLock>(&app, get("/")).await.status, 404);
    let health = send::<ActixKeyedLock>(&app, get("/health")).await;
    assert_eq!((health.status, health.text().as_str()), (200, "ok"));
    let bought = send::<ActixKeyedLock>(&app, Request::post("/buy/a")).await;
    assert_eq!((bought.status, bought.text().as_str()), (200, "a 1"));
    let malformed = send::<ActixKeyedLock>(&app, Request::post("/buy/%zz")).await;
    assert_eq!(malformed.status, 400);
    assert_eq!(handler.runs(), 1);
}

/// Item 3: every setting of the builder reaches the middleware.
#[actix_web::test]
async fn the_builder_takes_every_setting() {
    let locks = LockClient::new(MemoryBackend::new());
    let lock = KeyedLock::builder(locks, KeySource::path_param("/buy/{sku}", "sku"))
        .wait(lock_actix::WaitPolicy::Within(Duration::from_secs(1)))
        .key_prefix("sku:")
        .methods(["POST"])
        .path_prefix("/buy")
        .busy_status(BusyStatus::TooManyRequests)
        .retry_after(Duration::from_secs(2))
        .lease(lock_actix::LeaseMode::watchdog(Duration::from_secs(10)))
        .on_lost(OnLost::Cancel)
        .expose_errors(false)
        .build()
        .unwrap();
    let app = ActixKeyedLock::app(lock, Handler::new()).await;
    let bought = send::<ActixKeyedLock>(&app, Request::post("/buy/a")).await;
    assert_eq!((bought.status, bought.text().as_str()), (200, "sku:a 1"));
}

/// The middleware answers a backend's error as `LockRejection` does for the same error.
#[actix_web::test]
async fn the_middleware_answers_a_backend_error_as_lock_rejection_does() {
    let locks = LockClient::new(Unreachable);
    let options = KeyedLockOptions::new();
    let source = KeySource::path_index(0);
    let app = suite::app::<ActixKeyedLock>(locks, source, options, Handler::new()).await;
    let answer = send::<ActixKeyedLock>(&app, Request::post("/a")).await;
    let same = LockRejection::from(LockError::unavailable("unreachable", "connection refused"));
    let same = actix_web::ResponseError::error_response(&same);
    assert_eq!(same.status().as_u16(), answer.status);
    for (name, value) in same.headers() {
        assert_eq!(answer.header(name.as_str()), value.to_str().ok(), "{name}");
    }
    let same_body = actix_web::body::to_bytes(same.into_body()).await.unwrap();
    assert_eq!(same_body, answer.body);
}

/// Items 5 and 6: the adapter exports what its snippets need, and a handler's own lock error
/// answers as the middleware would.
#[actix_web::test]
async fn a_handler_answers_its_lock_errors_like_the_middleware() {
    use lock_actix::{FencingToken, LockInfo};

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
    let app = send_fn(
        App::new()
            .app_data(web::Data::new(locks.clone()))
            .route("/restock", web::post().to(restock)),
    )
    .await;
    let restock_request = || Request::post("/restock");
    let answer = send::<ActixKeyedLock>(&app, restock_request()).await;
    assert_eq!(answer.status, 200);
    let held = locks.lock("stock").await.unwrap();
    let answer = send::<ActixKeyedLock>(&app, restock_request()).await;
    suite::assert_problem(&answer, 409, "urn:distributed-lock:busy");
    assert_eq!(answer.header("retry-after"), Some("1"));
    held.release().await.unwrap();
    let info: Option<LockInfo> = None;
    assert!(info.is_none());
}
