//! The actix-web app in process on memory: a duplicate is replayed, a key reused with another body
//! is 422, no user is 401, and user B cannot replay user A's key.

use example_support::payments::{PaymentService, PaymentsConfig};
use lock_harness::payments::checks::idempotent_answers;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_replay_reused_keys_422_and_keys_belong_to_their_user() {
    let mut config = PaymentsConfig::memory();
    config.handler_delay = std::time::Duration::ZERO;
    let service = PaymentService::start(&config).await.unwrap();
    let base = payments_actix::spawn(service.clone(), 1).unwrap();
    idempotent_answers(&[base], Some(service.ledger()))
        .await
        .unwrap();
}
