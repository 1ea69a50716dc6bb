//! `GET /metrics` after a cold product: the cache computed it under the key's lease, so the
//! lock's acquisition and the cache call are on the page, in the Prometheus text format (the
//! app calls lock-core's cache primitive itself: it has no HTTP layer of lock-core's).

use std::time::Duration;

use lock_harness::load::{client, send};
use lock_harness::product::{ProductConfig, ProductService};
use lock_harness::prometheus::{has_sample, scrape};
use tokio::time::timeout;

/// The whole exchange: a product and a scrape.
const BOUND: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_the_computed_product() {
    let service = ProductService::start(&ProductConfig::memory())
        .await
        .unwrap();
    let base = stampede_actix::spawn(service, 1).unwrap();
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
}
