//! `lock_http_responses_total` through the actix-web middleware (lock-core's feature
//! `metrics`), read back from an in-memory recorder set for this test's thread: the handler's
//! own status for the keyed lock's `ran` and the response cache's `bypass` (a failed handler's
//! too, as actix-web renders its error), and every series with the same labels (`layer`,
//! `status`, `outcome`).

use std::time::Duration;

use actix_web::{test, web, App, HttpResponse};
use lock_actix::{KeySource, KeyedLock, ResponseCache};
use lock_core::cache::{Cache, Freshness};
use lock_core::idempotency::Idempotency;
use lock_core::{LockClient, MemoryBackend};
use lock_testing::metrics::{http_response_series, local_recorder};

async fn created() -> HttpResponse {
    HttpResponse::Created().body("done")
}

async fn ok() -> HttpResponse {
    HttpResponse::Ok().body("page")
}

async fn failing() -> Result<HttpResponse, actix_web::Error> {
    Err(actix_web::error::ErrorServiceUnavailable("boom"))
}

#[actix_web::test]
async fn every_answer_is_counted_with_layer_status_and_outcome() {
    let (snapshotter, _recording) = local_recorder();

    let locks = KeyedLock::new(
        LockClient::new(MemoryBackend::new()),
        KeySource::path_index(1),
    );
    let pages = ResponseCache::builder(Cache::memory("pages").unwrap())
        .default_freshness(Freshness::fresh_for(Duration::from_secs(30)))
        .build()
        .unwrap();
    let payments = lock_actix::Idempotency::builder(Idempotency::memory("pay").unwrap())
        .shared_scope()
        .build()
        .unwrap();
    let app = test::init_service(
        App::new()
            .service(
                web::scope("/lock")
                    .wrap(locks)
                    .route("/{sku}", web::post().to(created))
                    .route("/{sku}/fail", web::post().to(failing)),
            )
            .service(
                web::scope("/pages")
                    .wrap(pages)
                    .route("", web::get().to(ok))
                    .route("", web::post().to(created)),
            )
            .service(
                web::scope("/pay")
                    .wrap(payments)
                    .route("", web::post().to(created)),
            ),
    )
    .await;
    let send = |request: test::TestRequest| {
        let app = &app;
        async move {
            test::call_service(app, request.to_request())
                .await
                .status()
                .as_u16()
        }
    };
    assert_eq!(
        send(test::TestRequest::post().uri("/lock/sku-1")).await,
        201
    );
    assert_eq!(
        send(test::TestRequest::post().uri("/lock/sku-1/fail")).await,
        503
    );
    assert_eq!(send(test::TestRequest::get().uri("/pages")).await, 200);
    assert_eq!(send(test::TestRequest::post().uri("/pages")).await, 201);
    let pay = test::TestRequest::post()
        .uri("/pay")
        .insert_header(("idempotency-key", "k1"));
    assert_eq!(send(pay).await, 201);

    let series = http_response_series(&snapshotter.snapshot().into_vec());
    let expected = [
        "idempotency executed 201",
        "keyed_lock ran 201",
        "keyed_lock ran 503",
        "response_cache bypass 201",
        "response_cache miss 200",
    ];
    let expected: Vec<(String, u64)> = expected.iter().map(|line| (line.to_string(), 1)).collect();
    assert_eq!(series, expected);
}
