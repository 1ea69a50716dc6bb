//! `GET /metrics` after a payment: the claim's lock acquisition and the idempotency layer's
//! answer are on the page, in the Prometheus text format.

use std::time::Duration;

use example_support::payments::{PaymentService, PaymentsConfig};
use lock_harness::payments::checks::body;
use lock_harness::payments::{client, post_payment};
use lock_harness::scrape::{has_sample, scrape};
use tokio::time::timeout;

/// The whole exchange: a payment and a scrape.
const BOUND: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_the_payment() {
    let mut config = PaymentsConfig::memory();
    config.handler_delay = Duration::ZERO;
    let service = PaymentService::start(&config).await.unwrap();
    let base = payments_axum::spawn(service).await.unwrap();
    let paid = body("acct-a", "acct-b", 100);
    let (posted, page) = timeout(BOUND, async {
        let posted = post_payment(&client(1), &base, Some("alice"), Some("m-1"), &paid).await;
        (posted, scrape(&base).await)
    })
    .await
    .expect("answered in time");
    assert_eq!(posted.status, 201, "{}", posted.body);
    let page = page.unwrap();
    let acquired = [("backend", "memory"), ("outcome", "acquired")];
    assert!(has_sample(&page, "lock_acquire_total", &acquired), "{page}");
    let executed = [
        ("layer", "idempotency"),
        ("status", "201"),
        ("outcome", "executed"),
    ];
    assert!(
        has_sample(&page, "lock_http_responses_total", &executed),
        "{page}"
    );
}
