//! Keys from axum's routing (`KeySource::route_param`, nested routers, 404s), the `HeldLock`
//! extractor, and keys from the request body (`BodyKey`). Needs the `axum` feature.

use std::time::Duration;

use axum::body::Body;
use axum::routing::{get, post};
use axum::Router;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use lock_core::{LockClient, MemoryBackend};
use lock_testing::adapter_tests::{self, gate, key_and_fence, sku_options};
use lock_tower::{BodyKey, HeldLock, KeySource, KeyedLockLayer};
use tokio::time::timeout;
use tower::ServiceExt;

const LIMIT: Duration = Duration::from_secs(10);

async fn send(app: &Router, request: Request<Body>) -> (StatusCode, String) {
    let response = timeout(LIMIT, app.clone().oneshot(request))
        .await
        .expect("answered in time")
        .unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

fn post_to(path: &str, body: &str) -> Request<Body> {
    Request::post(path)
        .body(Body::from(body.to_owned()))
        .unwrap()
}

fn get_of(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).unwrap()
}

fn sku_lock(locks: LockClient) -> KeyedLockLayer<KeySource> {
    let builder = KeyedLockLayer::builder(locks, KeySource::route_param("sku"));
    builder.options(sku_options()).build().unwrap()
}

async fn buy(lock: HeldLock) -> String {
    key_and_fence(&lock)
}

/// The same routes with the layer on the nested router (`layer`, `route_layer`) and on the
/// router it is nested in: each must lock `/api/buy/{sku}` on the decoded sku and leave the
/// rest alone.
fn shops(locks: &LockClient) -> Vec<(&'static str, Router)> {
    let routes = || {
        Router::new()
            .route("/buy/{sku}", post(buy))
            .route("/", get(|| async { "home" }))
    };
    vec![
        (
            "nested layer",
            Router::new().nest("/api", routes().layer(sku_lock(locks.clone()))),
        ),
        (
            "nested route_layer",
            Router::new().nest("/api", routes().route_layer(sku_lock(locks.clone()))),
        ),
        (
            "outer layer",
            Router::new()
                .route("/", get(|| async { "home" }))
                .nest("/api", routes())
                .layer(sku_lock(locks.clone())),
        ),
    ]
}

#[tokio::test]
async fn a_route_param_locks_the_matched_route_and_nothing_else() {
    let locks = LockClient::new(MemoryBackend::new());
    for (name, app) in shops(&locks) {
        let (status, body) = send(&app, post_to("/api/buy/a%2Fb", "")).await;
        assert_eq!(status, StatusCode::OK, "{name}: {body}");
        assert!(body.starts_with("sku:a/b "), "{name}: {body}");
        let (status, body) = send(&app, get_of("/api")).await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "home"), "{name}");
        let (status, _) = send(&app, get_of("/nowhere")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}: a 404 stays a 404");
        let (status, body) = send(&app, post_to("/api/buy/%FF", "")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {body}");
        assert!(body.contains("route parameter `sku`"), "{name}: {body}");
    }
}

#[tokio::test]
async fn a_layer_around_the_router_cannot_see_the_route_and_fails_closed() {
    let routes = Router::new().route("/buy/{sku}", post(|| async { "unlocked" }));
    let wrapped = tower::Layer::layer(&sku_lock(LockClient::new(MemoryBackend::new())), routes);
    let response = timeout(LIMIT, wrapped.oneshot(post_to("/buy/a", "")))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let body = String::from_utf8(body.to_vec()).unwrap();
    assert!(body.contains("put the layer inside the Router"), "{body}");
}

#[tokio::test]
async fn the_same_sku_at_once_is_refused_with_409() {
    let locks = LockClient::new(MemoryBackend::new());
    let (gate, mut opener) = gate();
    let hold = move |lock: HeldLock| {
        let gate = gate.clone();
        async move { gate.hold(&lock).await }
    };
    let app = Router::new().nest(
        "/api",
        Router::new()
            .route("/buy/{sku}", post(hold))
            .route_layer(sku_lock(locks)),
    );
    let first = tokio::spawn({
        let app = app.clone();
        async move { send(&app, post_to("/api/buy/a", "")).await }
    });
    timeout(LIMIT, opener.entered()).await.unwrap();
    let (status, body) = send(&app, post_to("/api/buy/a", "")).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body.contains(r#""key":"sku:a""#), "{body}");
    let (status, _) = send(
        &Router::new().route("/x/{sku}", post(|| async { "other" })),
        post_to("/x/a", ""),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    opener.open();
    let (status, body) = timeout(LIMIT, first).await.unwrap().unwrap();
    assert_eq!((status, body.as_str()), (StatusCode::OK, "1"));
}

#[tokio::test]
async fn held_lock_without_the_layer_is_a_500_problem() {
    let app = Router::new().route("/buy/{sku}", post(buy)).route(
        "/maybe",
        post(|lock: Option<HeldLock>| async move { format!("{:?}", lock.map(|l| l.0)) }),
    );
    // Optional, it is `None` instead.
    let (status, body) = send(&app, post_to("/maybe", "")).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "None"));
    let response = timeout(LIMIT, app.oneshot(post_to("/buy/a", "")))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let body = String::from_utf8(body.to_vec()).unwrap();
    assert!(
        body.contains("HeldLock used in a handler that is not behind KeyedLockLayer"),
        "{body}"
    );
}

fn order_id(_: &http::request::Parts, body: &[u8]) -> Option<String> {
    adapter_tests::order_id(body)
}

#[tokio::test]
async fn a_body_key_locks_on_a_json_field_and_the_handler_reads_the_whole_body() {
    let locks = LockClient::new(MemoryBackend::new());
    let layer = KeyedLockLayer::builder(locks, BodyKey::new(64, order_id))
        .key_prefix("order:")
        .build()
        .unwrap();
    let app = Router::new()
        .route(
            "/pay",
            post(|lock: HeldLock, body: String| async move { format!("{} {body}", lock.key) }),
        )
        .route_layer(layer);
    let json = r#"{"order_id":"o-1","amount":100}"#;
    let (status, body) = send(&app, post_to("/pay", json)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, format!("order:o-1 {json}"));

    let (status, body) = send(&app, post_to("/pay", r#"{"amount":100}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("lock key in the request body"), "{body}");

    let large = format!(r#"{{"order_id":"o-2","pad":"{}"}}"#, "x".repeat(64));
    let (status, body) = send(&app, post_to("/pay", &large)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert!(body.contains("urn:distributed-lock:too-large"), "{body}");
    assert!(body.contains("at most 64 bytes"), "{body}");

    // Said too large by its head, before a byte is read.
    let declared = Request::post("/pay")
        .header("content-length", "65")
        .body(Body::from(json))
        .unwrap();
    let (status, _) = send(&app, declared).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
}
