//! The actix-web app in-process on the memory backend: a cold product under 200 concurrent
//! requests reaches the origin once, bad ids are 400 problems that never reach it, and a
//! second request is a hit.

use std::time::Duration;

use lock_harness::product::{ProductConfig, ProductService};
use lock_harness::stampede::{bad_ids_are_refused, cold_key_collapses, second_request_hits};
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(60);

async fn serve() -> String {
    // Fresh for a minute: nothing expires while a test runs.
    let config = ProductConfig::from_args(["--fresh-ms", "60000"].map(str::to_owned)).unwrap();
    let service = ProductService::start(&config).await.unwrap();
    stampede_actix::spawn(service, 2).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_product_under_200_concurrent_requests_reaches_the_origin_once() {
    let base = serve().await;
    timeout(LIMIT, cold_key_collapses(&[base], 200))
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_ids_are_400_problems_that_never_reach_the_origin() {
    let base = serve().await;
    timeout(LIMIT, bad_ids_are_refused(&base))
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_request_is_a_hit() {
    let base = serve().await;
    timeout(LIMIT, second_request_hits(&base))
        .await
        .unwrap()
        .unwrap();
}
