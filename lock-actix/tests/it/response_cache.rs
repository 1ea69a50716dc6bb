//! The response cache middleware on an actix-web app, on the memory cache: the adapters'
//! conformance suite (`lock_testing::response_cache`: `Cache-Control` semantics over
//! HTTP, collapsing of cold misses, large bodies passed through whole, `Set-Cookie`, `HEAD`,
//! bypasses, responses not shared with waiters, the request that starts a refresh served
//! stale), the same answers as lock-tower's layer; then what is the middleware's own: the
//! refresh's handler call held back while a stale answer sharing its request is held, a server
//! started from a plain tokio runtime serving the refreshing request stale too, the refreshing
//! request answered with the refresh when driven outside any task, refused settings.

use std::net::SocketAddr;
use std::time::Duration;

use crate::actix_driver::{self, Actix};
use actix_web::dev::ServiceResponse;
use actix_web::test::{self, TestRequest};
use actix_web::{web, App, HttpServer};
use lock_actix::ResponseCache;
use lock_core::cache::{Cache, Freshness};
use lock_testing::response_cache::{
    self as suite, http_cache, send, Adapter, Calls, Gate, Origin, Request,
};
use lock_testing::response_cache::{HIT, LIMIT, MISS_STORED};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

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
async fn the_request_that_starts_a_refresh_is_served_stale() {
    suite::the_request_that_starts_a_refresh_is_served_stale::<Actix>().await;
}

/// Driven by a plain tokio runtime's `block_on` (`actix_web::test` under `#[tokio::test]`: no
/// actix `System`, and the request is not a task, so no `!Send` task can be spawned beside
/// it), the request whose call the refresh took waits for it and is answered with the
/// refreshed response; the others are served stale at once.
#[tokio::test]
async fn driven_outside_a_task_the_refreshing_request_gets_the_refresh() {
    let calls = Calls::default();
    let gate = Gate::closed();
    let app = Actix::app(
        http_cache(Cache::memory("swr-tokio").unwrap(), Some(1024)),
        Origin::gated(&calls, &gate),
    )
    .await;
    let get = || Request::get("/products/6", &[]);
    gate.open(1);
    send::<Actix>(&app, get()).await;
    // Stale once `max-age=1` has passed by the store's clock.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (refreshing, stale) = tokio::join!(send::<Actix>(&app, get()), async {
        // The refresh took the first request's call, held at the gate.
        timeout(LIMIT, calls.reached(2))
            .await
            .expect("the refresh calls the handler");
        let stale = send::<Actix>(&app, get()).await;
        gate.open(1);
        stale
    });
    assert_eq!(
        stale.headers.cache_status(),
        "lock-core; hit; detail=stale-while-revalidate"
    );
    assert_eq!(stale.text(), "product 6 v1");
    assert_eq!(
        refreshing.headers.cache_status(),
        "lock-core; fwd=stale; fwd-status=200"
    );
    assert_eq!(refreshing.text(), "product 6 v2");
    let answer = send::<Actix>(&app, get()).await;
    assert_eq!(answer.headers.cache_status(), HIT);
    assert_eq!(answer.text(), "product 6 v2");
    assert_eq!(calls.count(), 2);
}

/// A stale answer shares its request with the task that calls the handler for the refresh,
/// and actix-web's router needs the request alone: while the answer is held (here by the
/// test, in a server by a middleware around the cache), the refresh's call waits; once it is
/// dropped, the handler runs and the refreshed response lands.
#[actix_web::test]
async fn a_stale_answer_still_held_holds_back_the_refresh_call() {
    let calls = Calls::default();
    let gate = Gate::closed();
    let http = http_cache(Cache::memory("swr-held").unwrap(), Some(1024));
    let app = test::init_service(
        App::new()
            .app_data(web::Data::new(Origin::gated(&calls, &gate)))
            .wrap(ResponseCache::new(http))
            .route("/{path:.*}", web::route().to(actix_driver::serve)),
    )
    .await;
    let get = || TestRequest::get().uri("/products/6").to_request();
    let cache_status = |response: &ServiceResponse<_>| {
        let value = response.headers().get("cache-status").unwrap();
        value.to_str().unwrap().to_owned()
    };
    gate.open(1);
    let filled = test::call_service(&app, get()).await;
    assert_eq!(test::read_body(filled).await, "product 6 v1");
    // Stale once `max-age=1` has passed by the store's clock.
    tokio::time::sleep(Duration::from_millis(1100)).await;

    let held = timeout(LIMIT, test::call_service(&app, get()))
        .await
        .expect("the request that starts the refresh is answered at once");
    assert!(
        cache_status(&held).ends_with("detail=stale-while-revalidate"),
        "{}",
        cache_status(&held)
    );
    // The refresh asks for the call meanwhile (nothing signals a call held back: give it time).
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(calls.count(), 1, "no handler call while the answer is held");
    drop(held);
    timeout(LIMIT, calls.reached(2))
        .await
        .expect("the refresh calls the handler once the answer is dropped");
    gate.open(1);
    let refreshed = timeout(LIMIT, async {
        loop {
            let response = test::call_service(&app, get()).await;
            let status = cache_status(&response);
            let body = test::read_body(response).await;
            if body != "product 6 v1" {
                return (status, body);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the refreshed response lands");
    assert_eq!(refreshed.1, "product 6 v2");
    assert!(refreshed.0.starts_with("lock-core; hit"), "{}", refreshed.0);
    assert_eq!(calls.count(), 2);
}

/// An actix-web server started from a plain tokio runtime (no actix `System`: each worker runs
/// a tokio `LocalRuntime`, as in `cargo xtask demo stampede`) answers the request that starts
/// a refresh stale too, over TCP, and the refresh lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_an_actix_system_serves_the_refreshing_request_stale() {
    let calls = Calls::default();
    let gate = Gate::closed();
    let origin = Origin::gated(&calls, &gate);
    let http = http_cache(Cache::memory("swr-server").unwrap(), Some(1024));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(web::Data::new(origin.clone()))
            .wrap(ResponseCache::new(http.clone()))
            .route("/{path:.*}", web::route().to(actix_driver::serve))
    })
    .workers(1)
    .disable_signals()
    .listen(listener)
    .unwrap()
    .run();
    let server_handle = server.handle();
    tokio::spawn(server);
    let get = || get_over_tcp(address, "/products/6");

    gate.open(1);
    let (cache_status, body) = timeout(LIMIT, get()).await.expect("filled");
    assert_eq!(
        (cache_status.as_str(), body.as_str()),
        (MISS_STORED, "product 6 v1")
    );
    // Stale once `max-age=1` has passed by the store's clock.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    // The gate is shut: the refresh's call cannot answer before this request is.
    let (cache_status, body) = timeout(Duration::from_secs(5), get())
        .await
        .expect("the request that starts the refresh is answered stale, not after the origin");
    assert!(
        cache_status.ends_with("detail=stale-while-revalidate"),
        "{cache_status}"
    );
    assert_eq!(body, "product 6 v1");
    gate.open(1);
    let (cache_status, body) = timeout(LIMIT, async {
        loop {
            let answer = get().await;
            if answer.1 != "product 6 v1" {
                return answer;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the refreshed response lands");
    assert_eq!(body, "product 6 v2");
    assert!(cache_status.starts_with(HIT), "{cache_status}");
    assert_eq!(calls.count(), 2);
    server_handle.stop(false).await;
}

/// `GET path` on a connection of its own: the `Cache-Status` and the body (sized).
async fn get_over_tcp(address: SocketAddr, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(address).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let cache_status = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("cache-status")
            .then(|| value.trim().to_owned())
    });
    (cache_status.unwrap_or_default(), body.to_owned())
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
