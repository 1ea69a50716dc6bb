//! The response cache middleware on an actix-web app, on the memory cache: the adapters'
//! conformance suite (`lock_core::testing::response_cache`: `Cache-Control` semantics over
//! HTTP, collapsing of cold misses, large bodies passed through whole, `Set-Cookie`, `HEAD`,
//! bypasses, responses not shared with waiters), the same answers as lock-tower's layer; then
//! what is the middleware's own: stale-while-revalidate refreshed by the first stale request,
//! refused settings.

use std::time::Duration;

use crate::actix_driver::Actix;
use lock_actix::ResponseCache;
use lock_core::cache::{Cache, Freshness};
use lock_core::testing::response_cache::HIT;
use lock_core::testing::response_cache::{
    self as suite, http_cache, send, Adapter, Calls, Origin, Request,
};

#[actix_web::test]
async fn cache_control_semantics_over_http() {
    suite::cache_control_semantics_over_http::<Actix>().await;
}

#[actix_web::test]
async fn two_hundred_cold_gets_call_the_handler_once() {
    suite::two_hundred_cold_gets_call_the_handler_once::<Actix>().await;
}

#[actix_web::test]
async fn responses_not_to_share_are_not_handed_to_waiters() {
    suite::responses_not_to_share_are_not_handed_to_waiters::<Actix>().await;
}

#[actix_web::test]
async fn set_cookie_reaches_the_computing_request_only() {
    suite::set_cookie_reaches_the_computing_request_only::<Actix>().await;
}

#[actix_web::test]
async fn head_is_served_from_the_get_entry() {
    suite::head_is_served_from_the_get_entry::<Actix>().await;
}

#[actix_web::test]
async fn other_methods_pass_through() {
    suite::other_methods_pass_through::<Actix>().await;
}

#[actix_web::test]
async fn vary_names_the_keyed_headers_on_every_answer() {
    suite::vary_names_the_keyed_headers_on_every_answer::<Actix>().await;
}

#[actix_web::test]
async fn a_failing_origin_is_called_once_and_its_answer_shared() {
    suite::a_failing_origin_is_called_once_and_its_answer_shared::<Actix>().await;
}

#[actix_web::test]
async fn an_uncacheable_answer_marks_the_key_pass_through() {
    suite::an_uncacheable_answer_marks_the_key_pass_through::<Actix>().await;
}

#[actix_web::test]
async fn bodies_over_the_limit_reach_the_client_whole_and_are_not_stored() {
    suite::bodies_over_the_limit_reach_the_client_whole_and_are_not_stored::<Actix>().await;
}

#[actix_web::test]
async fn stale_responses_are_served_while_one_refresh_runs() {
    let calls = Calls::default();
    let origin = Origin::products(
        &calls,
        "max-age=1, stale-while-revalidate=30",
        Duration::from_millis(300),
        true,
    );
    let app = Actix::app(
        http_cache(Cache::memory("swr").unwrap(), Some(1024)),
        origin,
    )
    .await;
    let get = || Request::get("/products/6", &[]);
    send::<Actix>(&app, get()).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    // Stale: the first request starts the refresh, which takes its call: it is answered with
    // the refreshed response. The others meanwhile are served stale at once.
    let refreshing = {
        let app = app.clone();
        actix_web::rt::spawn(async move { send::<Actix>(&app, get()).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let answer = send::<Actix>(&app, get()).await;
    assert_eq!(
        answer.headers.cache_status(),
        "lock-core; hit; detail=stale-while-revalidate"
    );
    assert_eq!(answer.text(), "product 6");
    assert!(answer.headers.ttl().unwrap() < 0);
    let answer = refreshing.await.unwrap();
    assert_eq!(
        answer.headers.cache_status(),
        "lock-core; fwd=stale; fwd-status=200"
    );
    assert_eq!(answer.text(), "product 6");
    let headers = send::<Actix>(&app, get()).await.headers;
    assert_eq!(headers.cache_status(), HIT);
    assert!(headers.ttl().unwrap() >= 0);
    assert_eq!(calls.count(), 2);
}

#[test]
fn invalid_settings_are_refused_when_the_middleware_is_built() {
    let cache = || Cache::memory("settings").unwrap();
    let refused = [
        ResponseCache::builder(cache()).statuses([304]).build(),
        ResponseCache::builder(cache()).max_body(0).build(),
        ResponseCache::builder(cache()).max_body(u64::MAX).build(),
        ResponseCache::builder(cache()).vary("Cookie").build(),
        ResponseCache::builder(cache()).cache_name("").build(),
        ResponseCache::builder(cache())
            .default_freshness(Freshness::fresh_for(Duration::ZERO))
            .build(),
        ResponseCache::builder(cache()).wait(Duration::ZERO).build(),
    ];
    for result in refused {
        assert!(result.is_err());
    }
}
