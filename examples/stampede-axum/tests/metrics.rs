//! `GET /metrics` after a cold product: the response cache computed it under the key's lease,
//! so the lock's acquisition, the cache call and the layer's answer are on the page, in the
//! Prometheus text format.

use std::time::Duration;

use example_support::product::{ProductConfig, ProductService};
use lock_harness::load::{client, send};
use lock_harness::scrape::{has_sample, scrape};
use tokio::time::timeout;

/// The whole exchange: a product and a scrape.
const BOUND: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_the_computed_product() {
    let service = ProductService::start(&ProductConfig::memory())
        .await
        .unwrap();
    let base = stampede_axum::spawn(service).await.unwrap();
    let (product, page) = timeout(BOUND, async {
        let product = send(&client(1), "GET", &base, "/products/m-1", None).await;
        (product, scrape(&base).await)
    })
    .await
    .expect("answered in time");
    assert_eq!(product.status, 200, "{}", product.body);
    let page = page.unwrap();
    let acquired = [("backend", "memory"), ("outcome", "acquired")];
    assert!(has_sample(&page, "lock_acquire_total", &acquired), "{page}");
    let computed = [("result", "computed")];
    assert!(
        has_sample(&page, "lock_cache_requests_total", &computed),
        "{page}"
    );
    let answered = [("layer", "response_cache"), ("outcome", "miss")];
    assert!(
        has_sample(&page, "lock_http_responses_total", &answered),
        "{page}"
    );
}
