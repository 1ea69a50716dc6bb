//! The idempotency middleware on an actix-web app, on memory: the adapters' conformance suite
//! (`lock_testing::idempotency`: the statuses of the Idempotency-Key draft, replays,
//! scopes, kept and not kept responses, body limits, a lost claim), the same answers as
//! lock-tower's layer; then what is the middleware's own: the payload put back for the
//! handler, a resource-level `wrap`, the extractor outside the middleware, refused settings.

use crate::actix_driver::idempotency::{handle, read, to_request, ActixIdempotency};
use actix_web::dev::Service;
use actix_web::{web, App, HttpResponse};
use lock_actix::HeldClaim;
use lock_core::idempotency::{Idempotency, InFlight};
use lock_testing::idempotency::{self as suite, Handler, Request, Store, LIMIT};
use lock_testing::keyed_lock::assert_problem;
use tokio::time::timeout;

#[actix_web::test]
async fn keys_are_checked_before_anything_runs() {
    suite::keys_are_checked_before_anything_runs::<ActixIdempotency>().await;
}

#[actix_web::test]
async fn requests_the_layer_does_not_handle_pass_through() {
    suite::requests_the_layer_does_not_handle_pass_through::<ActixIdempotency>().await;
}

#[actix_web::test]
async fn the_handler_sees_its_claim() {
    suite::the_handler_sees_its_claim::<ActixIdempotency>().await;
}

#[actix_web::test]
async fn a_duplicate_gets_the_first_response_replayed() {
    suite::a_duplicate_gets_the_first_response_replayed::<ActixIdempotency>(Store::Memory).await;
}

#[actix_web::test]
async fn a_duplicate_in_flight_gets_409_with_retry_after() {
    suite::a_duplicate_in_flight_gets_409_with_retry_after::<ActixIdempotency>(Store::Memory).await;
}

#[actix_web::test]
async fn a_waiting_duplicate_gets_the_replay() {
    suite::a_waiting_duplicate_gets_the_replay::<ActixIdempotency>(Store::Memory).await;
}

#[actix_web::test]
async fn the_same_key_with_another_request_gets_422() {
    suite::the_same_key_with_another_request_gets_422::<ActixIdempotency>(Store::Memory).await;
}

#[actix_web::test]
async fn keys_are_scoped_per_user() {
    suite::keys_are_scoped_per_user::<ActixIdempotency>(Store::Memory).await;
}

#[actix_web::test]
async fn a_request_without_a_principal_is_refused_with_401() {
    suite::a_request_without_a_principal_is_refused_with_401::<ActixIdempotency>().await;
}

#[actix_web::test]
async fn only_final_answers_are_kept_and_replayed() {
    suite::only_final_answers_are_kept_and_replayed::<ActixIdempotency>(Store::Memory).await;
}

#[actix_web::test]
async fn a_request_body_over_the_limit_is_refused_with_413() {
    suite::a_request_body_over_the_limit_is_refused_with_413::<ActixIdempotency>().await;
}

#[actix_web::test]
async fn a_response_over_the_limit_is_kept_as_a_500() {
    suite::a_response_over_the_limit_is_kept_as_a_500::<ActixIdempotency>().await;
}

#[actix_web::test]
async fn a_lost_claim_cancels_the_handler_with_503() {
    suite::a_lost_claim_cancels_the_handler_with_503::<ActixIdempotency>().await;
}

/// The payload read by the middleware reaches extractors that read it as a stream too, and
/// the resource-level `wrap` leaves the other resources alone.
#[actix_web::test]
async fn the_payload_is_put_back_for_the_handler() {
    async fn echo(claim: HeldClaim, payload: web::Payload) -> HttpResponse {
        let body = payload.to_bytes().await.unwrap();
        let body = String::from_utf8(body.to_vec()).unwrap();
        HttpResponse::Created().body(format!("{} {body}", claim.key))
    }
    let idempotent = lock_actix::Idempotency::builder(Idempotency::memory("payload").unwrap())
        .shared_scope()
        .build()
        .unwrap();
    let handler = Handler::new();
    let app = actix_web::test::init_service(
        App::new()
            .app_data(web::Data::new(handler.clone()))
            .service(web::resource("/echo").wrap(idempotent).post(echo))
            .route("/open", web::post().to(handle)),
    )
    .await;
    let send = |request: Request| {
        let answer = async { read(app.call(to_request(request)).await).await };
        async { timeout(LIMIT, answer).await.expect("answered in time") }
    };
    let echo = || Request::post("/echo").key("e-1").body("a".repeat(3000));
    let first = send(echo()).await;
    assert_eq!(
        (first.status, first.text()),
        (201, format!("e-1 {}", "a".repeat(3000)))
    );
    assert!(send(echo()).await.replayed());
    // Not wrapped: no key needed, no claim given.
    let open = send(Request::post("/open").body("o")).await;
    assert_eq!(
        (open.status, open.text()),
        (201, "run 1: POST /open o".to_owned())
    );
    assert_eq!(handler.claims(), [None]);
}

#[actix_web::test]
async fn the_claim_extractor_outside_the_middleware_is_a_500_problem() {
    let app = actix_web::test::init_service(
        App::new()
            .route(
                "/pay",
                web::post().to(|claim: HeldClaim| async move { claim.key.clone() }),
            )
            .route(
                "/maybe",
                web::post().to(|claim: Option<HeldClaim>| async move {
                    format!("{:?}", claim.map(|c| c.0))
                }),
            ),
    )
    .await;
    let answer = read(app.call(to_request(Request::post("/pay").key("k"))).await);
    let answer = timeout(LIMIT, answer).await.expect("answered in time");
    assert_problem(&answer, 500, "urn:distributed-lock:internal");
    assert!(
        answer
            .text()
            .contains("HeldClaim used in a request the Idempotency middleware did not handle"),
        "{}",
        answer.text()
    );
    let answer = read(app.call(to_request(Request::post("/maybe").key("k"))).await);
    let answer = timeout(LIMIT, answer).await.expect("answered in time");
    assert_eq!((answer.status, answer.text().as_str()), (200, "None"));
}

/// Built once, cloned into every worker's `App` (`HttpServer::new` wants a `Send` factory).
#[test]
fn the_middleware_can_be_shared_by_workers() {
    fn shared<T: Clone + Send + Sync + 'static>() {}
    shared::<lock_actix::Idempotency>();
}

#[test]
fn invalid_settings_are_refused_when_the_middleware_is_built() {
    let middleware = || {
        lock_actix::Idempotency::builder(Idempotency::memory("settings").unwrap()).shared_scope()
    };
    let refused = [
        middleware().header("bad header").build(),
        middleware().methods(Vec::<String>::new()).build(),
        middleware().methods(["PO ST"]).build(),
        middleware().fingerprint_header("bad:header").build(),
        middleware().max_key_len(0).build(),
        middleware().max_key_len(401).build(),
        middleware().max_body_bytes(0).build(),
        middleware()
            .in_flight(InFlight::Wait(std::time::Duration::ZERO))
            .build(),
    ];
    for result in refused {
        assert!(result.is_err());
    }
    assert!(middleware().max_key_len(400).optional().build().is_ok());
}
