//! Keys from actix's routing (`KeySource::route_param` through `match_pattern`, in app-level
//! and resource-level `wrap`), and keys from the request body (`BodyKey`).

use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::test::{self, TestRequest};
use actix_web::{web, App, HttpRequest};
use lock_actix::{BodyKey, HeldLock, KeySource, KeyedLock};
use lock_core::{LockClient, MemoryBackend};
use lock_testing::adapter_tests::{self, gate, key_and_fence, sku_options};
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(10);

async fn send<B: MessageBody + 'static>(
    app: &impl Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    request: TestRequest,
) -> (StatusCode, String) {
    let response = timeout(LIMIT, app.call(request.to_request()))
        .await
        .expect("answered in time")
        .unwrap()
        .map_into_boxed_body();
    let status = response.status();
    let body = test::read_body(response).await;
    (status, String::from_utf8(body.to_vec()).unwrap())
}

fn sku_lock(locks: LockClient) -> KeyedLock {
    let builder = KeyedLock::builder(locks, KeySource::route_param("sku"));
    builder.options(sku_options()).build().unwrap()
}

async fn buy(lock: HeldLock) -> String {
    key_and_fence(&lock)
}

#[actix_web::test]
async fn app_level_wrap_locks_the_matched_resource_and_nothing_else() {
    let app = test::init_service(
        App::new()
            .wrap(sku_lock(LockClient::new(MemoryBackend::new())))
            .service(web::scope("/api").route("/buy/{sku}", web::post().to(buy)))
            .route("/", web::get().to(|| async { "home" })),
    )
    .await;
    let (status, body) = send(&app, TestRequest::post().uri("/api/buy/a%2Fb")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, "sku:a/b 1");
    let (status, body) = send(&app, TestRequest::get().uri("/")).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "home"));
    let (status, _) = send(&app, TestRequest::get().uri("/nowhere")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a 404 stays a 404");
    let (status, body) = send(&app, TestRequest::post().uri("/api/buy/%FF")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("route parameter `sku`"), "{body}");
}

#[actix_web::test]
async fn resource_level_wrap_refuses_the_same_sku_at_once_with_409() {
    let (gate, mut opener) = gate();
    let hold = move |lock: HeldLock| {
        let gate = gate.clone();
        async move { gate.hold(&lock).await }
    };
    let app = test::init_service(
        App::new().service(
            web::scope("/api").service(
                web::resource("/buy/{sku}")
                    .wrap(sku_lock(LockClient::new(MemoryBackend::new())))
                    .route(web::post().to(hold)),
            ),
        ),
    )
    .await;
    let first = send(&app, TestRequest::post().uri("/api/buy/a"));
    let second = async {
        timeout(LIMIT, opener.entered()).await.unwrap();
        let answer = send(&app, TestRequest::post().uri("/api/buy/a")).await;
        opener.open();
        answer
    };
    let ((status, body), (busy, problem)) = tokio::join!(first, second);
    assert_eq!((status, body.as_str()), (StatusCode::OK, "1"));
    assert_eq!(busy, StatusCode::CONFLICT, "{problem}");
    assert!(problem.contains(r#""key":"sku:a""#), "{problem}");
}

fn order_id(_: &HttpRequest, body: &[u8]) -> Option<String> {
    adapter_tests::order_id(body)
}

#[actix_web::test]
async fn a_body_key_locks_on_a_json_field_and_the_handler_reads_the_whole_body() {
    let lock = KeyedLock::builder(
        LockClient::new(MemoryBackend::new()),
        BodyKey::new(64, order_id),
    )
    .key_prefix("order:")
    .build()
    .unwrap();
    let app =
        test::init_service(App::new().service(
            web::resource("/pay").wrap(lock).route(
                web::post().to(|lock: HeldLock, body: String| async move {
                    format!("{} {body}", lock.key)
                }),
            ),
        ))
        .await;
    let pay = |body: String| TestRequest::post().uri("/pay").set_payload(body);
    let json = r#"{"order_id":"o-1","amount":100}"#;
    let (status, body) = send(&app, pay(json.to_owned())).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, format!("order:o-1 {json}"));

    let (status, body) = send(&app, pay(r#"{"amount":100}"#.to_owned())).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("lock key in the request body"), "{body}");

    let large = format!(r#"{{"order_id":"o-2","pad":"{}"}}"#, "x".repeat(64));
    let (status, body) = send(&app, pay(large.clone())).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert!(body.contains("at most 64 bytes"), "{body}");

    // Found too large by counting, whatever the head says.
    let understated = TestRequest::post()
        .uri("/pay")
        .set_payload(large)
        .insert_header(("content-length", "10"));
    let (status, body) = send(&app, understated).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
}
