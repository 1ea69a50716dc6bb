//! `lock_http_responses_total` through the tower layers (lock-core's feature `metrics`), read
//! back from an in-memory recorder set for this test's thread: the handler's own status for
//! the keyed lock's `ran` and the response cache's `bypass`, `status="none"` for an inner
//! service that failed, and every series with the same labels (`layer`, `status`, `outcome`).

use std::time::Duration;

use http::{Request, Response};
use lock_core::cache::{Cache, Freshness};
use lock_core::idempotency::Idempotency;
use lock_core::metrics::NO_STATUS;
use lock_core::{LockClient, MemoryBackend};
use lock_testing::metrics::{http_response_series, local_recorder};
use lock_tower::idempotency::IdempotencyBody;
use lock_tower::{IdempotencyLayer, KeySource, KeyedLockLayer, ResponseCacheLayer};
use tower::{service_fn, Layer, ServiceExt};

fn post(path: &str) -> Request<String> {
    Request::post(path).body(String::new()).unwrap()
}

fn answer(status: u16) -> Result<Response<String>, &'static str> {
    Ok(Response::builder()
        .status(status)
        .body(String::from("done"))
        .unwrap())
}

#[tokio::test]
async fn every_answer_is_counted_with_layer_status_and_outcome() {
    let (snapshotter, _recording) = local_recorder();

    // Keyed lock: the handler's 201, a failed inner service, a request without a key (400).
    let keyed = KeyedLockLayer::new(
        LockClient::new(MemoryBackend::new()),
        KeySource::path_index(0),
    );
    let created = service_fn(|_: Request<String>| async { answer(201) });
    let failing = service_fn(|_: Request<String>| async { Err::<Response<String>, _>("boom") });
    let sent = keyed.layer(created).oneshot(post("/sku-1")).await.unwrap();
    assert_eq!(sent.status(), 201);
    assert!(keyed.layer(failing).oneshot(post("/sku-1")).await.is_err());
    let sent = keyed.layer(created).oneshot(post("/")).await.unwrap();
    assert_eq!(sent.status(), 400);

    // Response cache: a miss (200), a bypass with the application's 201, a failed bypass.
    let pages = ResponseCacheLayer::builder(Cache::memory("pages").unwrap())
        .default_freshness(Freshness::fresh_for(Duration::from_secs(30)))
        .build()
        .unwrap();
    let ok = service_fn(|_: Request<String>| async { answer(200) });
    let get = Request::get("/p").body(String::new()).unwrap();
    assert_eq!(pages.layer(ok).oneshot(get).await.unwrap().status(), 200);
    let sent = pages.layer(created).oneshot(post("/p")).await.unwrap();
    assert_eq!(sent.status(), 201);
    assert!(pages.layer(failing).oneshot(post("/p")).await.is_err());

    // Idempotency: executed (201), and a failed handler (the key given back).
    let payments = IdempotencyLayer::builder(Idempotency::memory("pay").unwrap())
        .shared_scope()
        .build()
        .unwrap();
    let keyed_post = |key: &str| {
        Request::post("/pay")
            .header("idempotency-key", key)
            .body(String::new())
            .unwrap()
    };
    let paid = service_fn(|_: Request<IdempotencyBody<String>>| async { answer(201) });
    let sent = payments
        .layer(paid)
        .oneshot(keyed_post("k1"))
        .await
        .unwrap();
    assert_eq!(sent.status(), 201);
    let failing_pay = service_fn(|_: Request<IdempotencyBody<String>>| async {
        Err::<Response<String>, _>("boom")
    });
    assert!(payments
        .layer(failing_pay)
        .oneshot(keyed_post("k2"))
        .await
        .is_err());

    let series = http_response_series(&snapshotter.snapshot().into_vec());
    let none = |line: &str| line.replace("NONE", NO_STATUS);
    let expected = [
        "idempotency executed 201",
        "idempotency not_stored NONE",
        "keyed_lock bad_key 400",
        "keyed_lock ran 201",
        "keyed_lock ran NONE",
        "response_cache bypass 201",
        "response_cache bypass NONE",
        "response_cache miss 200",
    ];
    let expected: Vec<(String, u64)> = expected.iter().map(|line| (none(line), 1)).collect();
    assert_eq!(series, expected);
}
