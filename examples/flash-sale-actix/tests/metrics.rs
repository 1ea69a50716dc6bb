//! `GET /metrics` of the app process after a purchase under the keyed lock: the lock's
//! acquisition and the keyed-lock middleware's answer are on the page, in the Prometheus text
//! format.

use std::path::Path;
use std::time::Duration;

use lock_harness::inventory::Instance;
use lock_harness::load::{client, send};
use lock_harness::scrape::{has_sample, scrape};
use tokio::time::timeout;

/// The whole exchange: start, a purchase and a scrape.
const BOUND: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_the_locked_purchase() {
    let args = [
        "--strategy",
        "lock",
        "--backend",
        "memory",
        "--sku",
        "sku-m",
        "--stock",
        "1",
    ]
    .map(str::to_owned);
    let binary = Path::new(env!("CARGO_BIN_EXE_flash-sale-actix"));
    let (bought, page) = timeout(BOUND, async {
        let app = Instance::launch(binary, &args).await.unwrap();
        let bought = send(&client(1), "POST", &app.base, "/buy/sku-m", Some("order-m")).await;
        (bought, scrape(&app.base).await)
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
