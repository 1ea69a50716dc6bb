//! The response cache layer on a real Redis, through the adapters' conformance suite
//! (`lock_testing::response_cache`): two instances (two caches on two connections)
//! call the handler once for a crowd of cold requests, and once for a failing one; with Redis stopped, requests are
//! answered fail-open (or a generic 503 when the cache fails closed).
//!
//! Needs `LOCK_TEST_REDIS_URL` (set by `cargo xtask test`); the outage test also starts a
//! `redis-server` of its own.

use crate::axum_driver::Axum;
use lock_testing::response_cache as suite;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_call_the_handler_once() {
    suite::two_instances_call_the_handler_once::<Axum>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_a_failure() {
    suite::two_instances_share_a_failure::<Axum>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_fails_open_or_answers_a_generic_503() {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    suite::redis_down_fails_open_or_answers_a_generic_503::<Axum>(tmp).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_answers_in_the_origins_time_and_collapses_again() {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    suite::redis_down_answers_in_the_origins_time_and_collapses_again::<Axum>(tmp).await;
}
