//! The idempotency middleware on a real Redis, through the adapters' conformance suite
//! (`lock_testing::idempotency`): two instances (two clients on their own connections)
//! share records and claims; with Redis stopped, requests are answered a generic 503 and
//! nothing runs.
//!
//! Needs `LOCK_TEST_REDIS_URL` (set by `cargo xtask test`); the outage test also starts a
//! `redis-server` of its own.

use crate::actix_driver::idempotency::ActixIdempotency;
use lock_testing::idempotency::{self as suite, Store};

#[actix_web::test]
async fn a_duplicate_gets_the_first_response_replayed() {
    suite::a_duplicate_gets_the_first_response_replayed::<ActixIdempotency>(Store::Redis).await;
}

#[actix_web::test]
async fn a_duplicate_in_flight_gets_409_with_retry_after() {
    suite::a_duplicate_in_flight_gets_409_with_retry_after::<ActixIdempotency>(Store::Redis).await;
}

#[actix_web::test]
async fn a_waiting_duplicate_gets_the_replay() {
    suite::a_waiting_duplicate_gets_the_replay::<ActixIdempotency>(Store::Redis).await;
}

#[actix_web::test]
async fn the_same_key_with_another_request_gets_422() {
    suite::the_same_key_with_another_request_gets_422::<ActixIdempotency>(Store::Redis).await;
}

#[actix_web::test]
async fn keys_are_scoped_per_user() {
    suite::keys_are_scoped_per_user::<ActixIdempotency>(Store::Redis).await;
}

#[actix_web::test]
async fn only_final_answers_are_kept_and_replayed() {
    suite::only_final_answers_are_kept_and_replayed::<ActixIdempotency>(Store::Redis).await;
}

#[actix_web::test]
async fn the_store_down_answers_503_and_runs_nothing() {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    suite::the_store_down_answers_503_and_runs_nothing::<ActixIdempotency>(tmp).await;
}

#[actix_web::test]
async fn the_store_down_answers_503_at_once_and_runs_again_when_back() {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    suite::the_store_down_answers_503_at_once_and_runs_again_when_back::<ActixIdempotency>(tmp)
        .await;
}
