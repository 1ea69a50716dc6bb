//! The idempotency layer on an axum router, on memory: the adapters' conformance suite
//! (`lock_testing::idempotency`: the statuses of the Idempotency-Key draft, replays,
//! scopes, kept and not kept responses, body limits, a lost claim), then what is the layer's
//! own: `route_layer`, the `HeldClaim` extractor outside the layer, refused settings (and, in
//! `idempotency_span.rs`, the tracing span's outcome).

use crate::axum_driver::idempotency::{handle, AxumIdempotency};
use axum::routing::post;
use axum::Router;
use lock_core::idempotency::{Idempotency, InFlight};
use lock_testing::idempotency::{self as suite, send, Handler, Request, Store};
use lock_tower::IdempotencyLayer;

#[tokio::test]
async fn keys_are_checked_before_anything_runs() {
    suite::keys_are_checked_before_anything_runs::<AxumIdempotency>().await;
}

#[tokio::test]
async fn requests_the_layer_does_not_handle_pass_through() {
    suite::requests_the_layer_does_not_handle_pass_through::<AxumIdempotency>().await;
}

#[tokio::test]
async fn the_handler_sees_its_claim() {
    suite::the_handler_sees_its_claim::<AxumIdempotency>().await;
}

#[tokio::test]
async fn a_duplicate_gets_the_first_response_replayed() {
    suite::a_duplicate_gets_the_first_response_replayed::<AxumIdempotency>(Store::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_in_flight_gets_409_with_retry_after() {
    suite::a_duplicate_in_flight_gets_409_with_retry_after::<AxumIdempotency>(Store::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_duplicate_gets_the_replay() {
    suite::a_waiting_duplicate_gets_the_replay::<AxumIdempotency>(Store::Memory).await;
}

#[tokio::test]
async fn the_same_key_with_another_request_gets_422() {
    suite::the_same_key_with_another_request_gets_422::<AxumIdempotency>(Store::Memory).await;
}

#[tokio::test]
async fn keys_are_scoped_per_user() {
    suite::keys_are_scoped_per_user::<AxumIdempotency>(Store::Memory).await;
}

#[tokio::test]
async fn a_request_without_a_principal_is_refused_with_401() {
    suite::a_request_without_a_principal_is_refused_with_401::<AxumIdempotency>().await;
}

#[tokio::test]
async fn only_final_answers_are_kept_and_replayed() {
    suite::only_final_answers_are_kept_and_replayed::<AxumIdempotency>(Store::Memory).await;
}

#[tokio::test]
async fn a_request_body_over_the_limit_is_refused_with_413() {
    suite::a_request_body_over_the_limit_is_refused_with_413::<AxumIdempotency>().await;
}

#[tokio::test]
async fn a_response_over_the_limit_is_kept_as_a_500() {
    suite::a_response_over_the_limit_is_kept_as_a_500::<AxumIdempotency>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_claim_cancels_the_handler_with_503() {
    suite::a_lost_claim_cancels_the_handler_with_503::<AxumIdempotency>().await;
}

#[tokio::test]
async fn route_layer_handles_matched_routes_only() {
    let handler = Handler::new();
    let layer = IdempotencyLayer::builder(Idempotency::memory("route").unwrap())
        .shared_scope()
        .build()
        .unwrap();
    let app = Router::new()
        .route("/pay", post(handle))
        .with_state(handler.clone())
        .route_layer(layer);
    let first = send::<AxumIdempotency>(&app, Request::post("/pay").key("k")).await;
    assert_eq!(first.status, 201);
    let again = send::<AxumIdempotency>(&app, Request::post("/pay").key("k")).await;
    assert!(again.replayed());
    let missing = send::<AxumIdempotency>(&app, Request::post("/pay")).await;
    assert_eq!(missing.status, 400);
    // The fallback is not wrapped: no key needed for a 404.
    let nowhere = send::<AxumIdempotency>(&app, Request::post("/nowhere")).await;
    assert_eq!(nowhere.status, 404);
    assert_eq!(handler.runs(), 1);
}

/// Inside the layer the extractor gives the claim (the suite's handler takes it, see
/// `the_handler_sees_its_claim`); outside, `HeldClaim` is a 500 problem naming the layer and
/// `Option<HeldClaim>` is `None`.
#[cfg(feature = "axum")]
#[tokio::test]
async fn the_claim_extractor_outside_the_layer_is_a_500_problem() {
    use lock_testing::keyed_lock::assert_problem;
    use lock_tower::HeldClaim;

    let app = Router::new()
        .route(
            "/pay",
            post(|claim: HeldClaim| async move { claim.key.clone() }),
        )
        .route(
            "/maybe",
            post(|claim: Option<HeldClaim>| async move { format!("{:?}", claim.map(|c| c.0)) }),
        );
    let answer = send::<AxumIdempotency>(&app, Request::post("/pay").key("k")).await;
    assert_problem(&answer, 500, "urn:distributed-lock:internal");
    assert!(
        answer
            .text()
            .contains("HeldClaim used in a request the IdempotencyLayer did not handle"),
        "{}",
        answer.text()
    );
    let answer = send::<AxumIdempotency>(&app, Request::post("/maybe").key("k")).await;
    assert_eq!((answer.status, answer.text().as_str()), (200, "None"));
}

#[test]
fn invalid_settings_are_refused_when_the_layer_is_built() {
    let layer =
        || IdempotencyLayer::builder(Idempotency::memory("settings").unwrap()).shared_scope();
    let refused = [
        layer().header("bad header").build(),
        layer().methods(Vec::<String>::new()).build(),
        layer().methods(["PO ST"]).build(),
        layer().fingerprint_header("bad:header").build(),
        layer().max_key_len(0).build(),
        layer().max_key_len(401).build(),
        layer().max_body_bytes(0).build(),
        layer()
            .in_flight(InFlight::Wait(std::time::Duration::ZERO))
            .build(),
    ];
    for result in refused {
        assert!(result.is_err());
    }
    assert!(layer().max_key_len(400).optional().build().is_ok());
}
