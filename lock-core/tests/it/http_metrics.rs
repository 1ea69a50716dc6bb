//! The HTTP layers' answers as metrics (feature `metrics`), read back from an in-memory
//! recorder: the keyed lock's run, busy and missing-key answers, and the idempotency layer's
//! executed, replayed, key-reused and in-flight answers, each counted once.

use lock_core::http::idempotency::{begin, finish, Finished, IdempotencyRules, Started};
use lock_core::http::keyed::{run_locked, KeyedLockOptions};
use lock_core::http::metrics::HTTP_RESPONSES_TOTAL;
use lock_core::http::Rejection;
use lock_core::idempotency::{Fingerprint, Idempotency};
use lock_core::{LockClient, MemoryBackend};

use crate::metrics_support::{counter, local_recorder};

fn pay(cents: u32) -> Fingerprint {
    Fingerprint::builder("POST", "/payments")
        .body(cents.to_string().as_bytes())
        .finish()
}

#[tokio::test]
async fn the_http_layers_count_their_answers() {
    let (snapshotter, _recording) = local_recorder();

    // Keyed lock: one run, one busy (409), one missing key (400).
    let locks = LockClient::new(MemoryBackend::new());
    let options = KeyedLockOptions::new();
    let ran = run_locked(&locks, "sku:1", &options, |_| async { "sold" }).await;
    assert_eq!(ran.unwrap(), "sold");
    let held = locks.lock("sku:1").await.unwrap();
    let busy = run_locked(&locks, "sku:1", &options, |_| async { "sold" }).await;
    assert_eq!(busy.unwrap_err().response.status, 409);
    held.release().await.unwrap();
    let _ = Rejection::missing_key("path parameter `sku`");

    // Idempotency: executed (201), replayed, key reused (422), in flight (409).
    let idempotency = Idempotency::memory("metrics").unwrap();
    let rules = IdempotencyRules::new();
    let Started::Run(claim) = begin(&idempotency, &rules, "u", "k1", pay(1)).await else {
        panic!("the first request runs");
    };
    let headers = vec![("content-type".to_owned(), b"text/plain".to_vec())];
    let finished = finish(claim, &rules, 201, &headers, Some(b"paid".to_vec())).await;
    assert!(matches!(finished, Finished::Send(outcome) if outcome.as_str() == "executed"));
    let Started::Answer(replay) = begin(&idempotency, &rules, "u", "k1", pay(1)).await else {
        panic!("a duplicate is replayed");
    };
    assert_eq!(replay.outcome.as_str(), "replayed");
    let Started::Answer(reused) = begin(&idempotency, &rules, "u", "k1", pay(2)).await else {
        panic!("another request with the key is refused");
    };
    assert_eq!(reused.response.status, 422);
    let Started::Run(running) = begin(&idempotency, &rules, "u", "k2", pay(1)).await else {
        panic!("a new key runs");
    };
    let Started::Answer(in_flight) = begin(&idempotency, &rules, "u", "k2", pay(1)).await else {
        panic!("a duplicate of a running request is refused");
    };
    assert_eq!(in_flight.response.status, 409);
    drop(running);

    let metrics = snapshotter.snapshot().into_vec();
    let count = |labels: &[(&str, &str)]| counter(&metrics, HTTP_RESPONSES_TOTAL, labels);
    let keyed = ("layer", "keyed_lock");
    assert_eq!(count(&[keyed, ("outcome", "ran")]), 1);
    assert_eq!(count(&[keyed, ("status", "409"), ("outcome", "busy")]), 1);
    assert_eq!(
        count(&[keyed, ("status", "400"), ("outcome", "bad_key")]),
        1
    );
    assert_eq!(count(&[keyed]), 3, "each keyed-lock answer counted once");
    let idem = ("layer", "idempotency");
    assert_eq!(
        count(&[idem, ("status", "201"), ("outcome", "executed")]),
        1
    );
    assert_eq!(
        count(&[idem, ("status", "201"), ("outcome", "replayed")]),
        1
    );
    assert_eq!(
        count(&[idem, ("status", "422"), ("outcome", "key_reused")]),
        1
    );
    assert_eq!(
        count(&[idem, ("status", "409"), ("outcome", "in_flight")]),
        1
    );
    assert_eq!(count(&[idem]), 4, "each idempotency answer counted once");
}
