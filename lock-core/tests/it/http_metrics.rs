//! The HTTP layers' answers as metrics (feature `metrics`), read back from an in-memory
//! recorder: the keyed lock's run, busy and missing-key answers, and the idempotency layer's
//! executed, replayed, key-reused and in-flight answers, each counted once; a handler that
//! failed counted under `status="none"`; every series with the same labels.

use lock_core::http::idempotency::{begin, finish, Finished, IdempotencyRules, Started};
use lock_core::http::keyed::{run_locked, KeyedLockOptions};
use lock_core::http::Rejection;
use lock_core::idempotency::{Fingerprint, Idempotency};
use lock_core::metrics::HTTP_RESPONSES_TOTAL;
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
    let sold = |_| async { "sold" };
    let ran = run_locked(&locks, "sku:1", &options, sold, |_| Some(201)).await;
    assert_eq!(ran.unwrap(), "sold");
    let held = locks.lock("sku:1").await.unwrap();
    let busy = run_locked(&locks, "sku:1", &options, sold, |_| Some(201)).await;
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
    assert_eq!(count(&[keyed, ("status", "201"), ("outcome", "ran")]), 1);
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
    every_series_has_layer_status_and_outcome(&metrics);
}

/// Every `lock_http_responses_total` series has the same label set.
fn every_series_has_layer_status_and_outcome(metrics: &crate::metrics_support::Metrics) {
    // It panics on a series without one of the three.
    let series = lock_testing::metrics::http_response_series(metrics);
    assert!(
        !series.is_empty(),
        "no lock_http_responses_total series to check"
    );
}

/// A handler that fails instead of answering: the keyed lock and idempotency count it under
/// `status="none"`, a response that broke off under its own status.
#[tokio::test]
async fn a_failed_handler_is_counted_without_a_status() {
    use lock_core::http::cache::{BodyFailed, HeaderPairs, RequestParts};
    use lock_core::http::idempotency::{
        Begun, HandlerResponse, IdempotencyCall, Plan, Ran, RequestBody,
    };
    use lock_core::metrics::NO_STATUS;

    /// A 200 whose body breaks off.
    struct Broken;
    impl HeaderPairs for Broken {
        fn for_each_header(&self, _: &mut dyn FnMut(&str, &[u8])) {}
    }
    impl HandlerResponse for Broken {
        fn status(&self) -> u16 {
            200
        }
        async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, BodyFailed> {
            Err(BodyFailed)
        }
    }

    let (snapshotter, _recording) = local_recorder();
    let locks = LockClient::new(MemoryBackend::new());
    let failed = run_locked(
        &locks,
        "sku:1",
        &KeyedLockOptions::new(),
        |_| async { Err::<(), _>("boom") },
        |output| output.as_ref().ok().map(|()| 200),
    )
    .await;
    assert_eq!(failed.unwrap(), Err("boom"));

    let idempotency = Idempotency::memory("metrics").unwrap();
    let rules = IdempotencyRules::new().validate().unwrap();
    let head = RequestParts::new("POST", "/payments").with_header("idempotency-key", "k1");
    for fails in [true, false] {
        let Plan::Handle(key) = rules.plan(&head) else {
            panic!("the request has a key");
        };
        let call = IdempotencyCall::new(&idempotency, &rules, key);
        let Begun::Run(running, _) = call.begin(&head, "u", RequestBody::Whole(vec![])).await
        else {
            panic!("the key was given back: the request runs");
        };
        let handler = async move {
            if fails {
                Err("boom")
            } else {
                Ok(Broken)
            }
        };
        match running.run(handler).await {
            Ran::Failed(_) => assert!(fails),
            Ran::Send { .. } => assert!(!fails, "a broken body is sent as it broke"),
            _ => panic!("not stored"),
        }
    }

    let metrics = snapshotter.snapshot().into_vec();
    let count = |labels: &[(&str, &str)]| counter(&metrics, HTTP_RESPONSES_TOTAL, labels);
    let none = ("status", NO_STATUS);
    assert_eq!(
        count(&[("layer", "keyed_lock"), none, ("outcome", "ran")]),
        1
    );
    let idem = ("layer", "idempotency");
    assert_eq!(count(&[idem, none, ("outcome", "not_stored")]), 1);
    assert_eq!(
        count(&[idem, ("status", "200"), ("outcome", "not_stored")]),
        1
    );
    every_series_has_layer_status_and_outcome(&metrics);
}
