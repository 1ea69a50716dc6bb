//! The response cache layer on an axum router, on the memory cache: the adapters' conformance
//! suite (`lock_testing::response_cache`: `Cache-Control` semantics over HTTP,
//! collapsing of cold misses, large bodies passed through whole, `Set-Cookie`, `HEAD`,
//! bypasses, responses not shared with waiters, the request that starts a refresh served
//! stale), then what is the layer's own: `route_layer`, refused settings.

use std::time::Duration;

use crate::axum_driver::{serve, Axum};
use axum::routing::any;
use axum::Router;
use lock_core::cache::{Cache, Freshness};
use lock_testing::response_cache::{self as suite, send, Calls, Origin, Request};
use lock_testing::response_cache::{HIT, MISS_STORED};
use lock_tower::ResponseCacheLayer;

#[tokio::test]
async fn cache_control_semantics_over_http() {
    suite::cache_control_semantics_over_http::<Axum>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_cold_gets_call_the_handler_once() {
    suite::two_hundred_cold_gets_call_the_handler_once::<Axum>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_not_to_share_are_not_handed_to_waiters() {
    suite::responses_not_to_share_are_not_handed_to_waiters::<Axum>().await;
}

#[tokio::test]
async fn set_cookie_reaches_the_computing_request_only() {
    suite::set_cookie_reaches_the_computing_request_only::<Axum>().await;
}

#[tokio::test]
async fn head_is_served_from_the_get_entry() {
    suite::head_is_served_from_the_get_entry::<Axum>().await;
}

#[tokio::test]
async fn other_methods_pass_through() {
    suite::other_methods_pass_through::<Axum>().await;
}

#[tokio::test]
async fn vary_names_the_keyed_headers_on_every_answer() {
    suite::vary_names_the_keyed_headers_on_every_answer::<Axum>().await;
}

#[tokio::test]
async fn a_failing_origin_is_called_once_and_its_answer_shared() {
    suite::a_failing_origin_is_called_once_and_its_answer_shared::<Axum>().await;
}

#[tokio::test]
async fn an_uncacheable_answer_marks_the_key_pass_through() {
    suite::an_uncacheable_answer_marks_the_key_pass_through::<Axum>().await;
}

#[tokio::test]
async fn bodies_over_the_limit_reach_the_client_whole_and_are_not_stored() {
    suite::bodies_over_the_limit_reach_the_client_whole_and_are_not_stored::<Axum>().await;
}

fn layer(cache: Cache) -> ResponseCacheLayer {
    ResponseCacheLayer::builder(cache)
        .max_body(1024)
        .build()
        .unwrap()
}

#[tokio::test]
async fn route_layer_caches_matched_routes_only() {
    let calls = Calls::default();
    let origin = Origin::products(&calls, "max-age=60", Duration::ZERO, true);
    let app = Router::new()
        .route("/products/{id}", any(serve))
        .with_state(origin)
        .route_layer(layer(Cache::memory("route").unwrap()));
    for expected in [MISS_STORED, HIT] {
        let answer = send::<Axum>(&app, Request::get("/products/5", &[])).await;
        assert_eq!(answer.headers.cache_status(), expected);
    }
    let answer = send::<Axum>(&app, Request::get("/nowhere", &[])).await;
    assert_eq!(answer.status, 404);
    assert!(
        !answer.headers.contains("cache-status"),
        "the fallback is not wrapped"
    );
}

#[tokio::test]
async fn the_request_that_starts_a_refresh_is_served_stale() {
    suite::the_request_that_starts_a_refresh_is_served_stale::<Axum>().await;
}

#[test]
fn invalid_settings_are_refused_when_the_layer_is_built() {
    let cache = || Cache::memory("settings").unwrap();
    let refused = [
        ResponseCacheLayer::builder(cache()).statuses([304]).build(),
        ResponseCacheLayer::builder(cache()).max_body(0).build(),
        ResponseCacheLayer::builder(cache())
            .max_body(u64::MAX)
            .build(),
        ResponseCacheLayer::builder(cache()).vary("Cookie").build(),
        ResponseCacheLayer::builder(cache()).cache_name("").build(),
        ResponseCacheLayer::builder(cache())
            .default_freshness(Freshness::fresh_for(Duration::ZERO))
            .build(),
        ResponseCacheLayer::builder(cache())
            .wait(Duration::ZERO)
            .build(),
    ];
    for result in refused {
        assert!(result.is_err());
    }
}
