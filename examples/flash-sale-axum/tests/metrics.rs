//! `GET /metrics` after a purchase under the keyed lock: the lock's acquisition and the
//! keyed-lock layer's answer are on the page, in the Prometheus text format.

use std::time::Duration;

use example_support::shop::{Shop, ShopConfig, Strategy};
use lock_harness::load::{client, send};
use lock_harness::scrape::{has_sample, scrape};
use tokio::time::timeout;

/// The whole exchange: a purchase and a scrape.
const BOUND: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_the_locked_purchase() {
    let shop = Shop::start(ShopConfig::memory(Strategy::Lock))
        .await
        .unwrap();
    shop.restock("sku-m", 1).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = flash_sale_axum::router(shop);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let (bought, page) = timeout(BOUND, async {
        let bought = send(&client(1), "POST", &base, "/buy/sku-m", Some("order-m")).await;
        (bought, scrape(&base).await)
    })
    .await
    .expect("answered in time");
    assert_eq!(bought.status, 200, "{}", bought.body);
    let page = page.unwrap();
    let acquired = [("backend", "memory"), ("outcome", "acquired")];
    assert!(has_sample(&page, "lock_acquire_total", &acquired), "{page}");
    let ran = [("layer", "keyed_lock"), ("outcome", "ran")];
    assert!(
        has_sample(&page, "lock_http_responses_total", &ran),
        "{page}"
    );
}
