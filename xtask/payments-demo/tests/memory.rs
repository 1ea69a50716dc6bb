//! The axum and actix-web apps in one process on one memory backend: a key first paid on one
//! framework is replayed by the other, and the demo's three phases pass on a small run.

use std::time::Duration;

use example_support::payments::{PaymentService, PaymentsBackend, PaymentsConfig};
use lock_harness::demo::payments::checks::idempotent_answers;
use lock_harness::demo::payments::demo::Demo;

async fn both_apps(handler: Duration) -> (Vec<String>, Vec<PaymentService>) {
    let mut config = PaymentsConfig::memory();
    config.handler_delay = handler;
    let backend = PaymentsBackend::memory(&config.namespace);
    let axum = PaymentService::on(&backend, &config).await.unwrap();
    let actix = PaymentService::on(&backend, &config).await.unwrap();
    let targets = vec![
        payments_axum::spawn(axum.clone()).await.unwrap(),
        payments_actix::spawn(actix.clone(), 1).unwrap(),
    ];
    (targets, vec![axum, actix])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payment_made_on_one_framework_is_replayed_by_the_other() {
    let (targets, services) = both_apps(Duration::ZERO).await;
    idempotent_answers(&targets, Some(services[0].ledger()))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_passes_on_memory() {
    let (targets, services) = both_apps(Duration::from_millis(20)).await;
    let demo = Demo {
        targets,
        ledger: services[0].ledger().clone(),
        services,
        keys: 40,
        duplicates: 4,
        retries: 2,
        clients: 32,
        progress: false,
    };
    let outcome = tokio::time::timeout(Duration::from_secs(120), demo.run())
        .await
        .expect("the demo finishes")
        .unwrap();
    outcome.print();
    assert!(outcome.passed());
}
