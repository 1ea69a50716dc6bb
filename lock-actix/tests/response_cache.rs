//! The response cache middleware on an actix-web app, on the memory cache: `Cache-Control`
//! semantics over HTTP, collapsing of cold misses, large bodies passed through whole,
//! `Set-Cookie`, `HEAD`, bypasses, responses not shared with waiters, stale-while-revalidate.
//! The same answers as lock-tower's layer.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::body::{BodySize, MessageBody};
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::header::HeaderMap;
use actix_web::http::{Method, StatusCode};
use actix_web::test::{self, TestRequest};
use actix_web::web::{self, Bytes};
use actix_web::{App, HttpRequest, HttpResponse};
use lock_actix::ResponseCache;
use lock_core::cache::{Cache, Freshness};
use tokio::sync::mpsc;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(20);

async fn send<S, B>(app: &S, request: TestRequest) -> (StatusCode, HeaderMap, Bytes)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let response = timeout(LIMIT, app.call(request.to_request()))
        .await
        .expect("answered in time")
        .unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let body = timeout(LIMIT, actix_web::body::to_bytes(response.into_body()))
        .await
        .unwrap()
        .map_err(|_| "body error")
        .unwrap();
    (status, headers, body)
}

fn get_with(path: &str, headers: &[(&'static str, &'static str)]) -> TestRequest {
    let mut request = TestRequest::get().uri(path);
    for header in headers {
        request = request.insert_header(*header);
    }
    request
}

fn header(headers: &HeaderMap, name: &str) -> String {
    headers
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// `Cache-Status` without its `ttl` parameter, which depends on timing.
fn cache_status(headers: &HeaderMap) -> String {
    header(headers, "cache-status")
        .split("; ")
        .filter(|p| !p.starts_with("ttl="))
        .collect::<Vec<_>>()
        .join("; ")
}

fn ttl(headers: &HeaderMap) -> Option<i64> {
    header(headers, "cache-status")
        .split("; ")
        .find_map(|p| p.strip_prefix("ttl=")?.parse().ok())
}

fn cached(cache: Cache) -> ResponseCache {
    ResponseCache::builder(cache)
        .max_body(1024)
        .build()
        .unwrap()
}

/// One row of the semantics table: the same request sent twice to a handler answering
/// `status` with `response` headers.
struct Row {
    name: &'static str,
    request: &'static [(&'static str, &'static str)],
    status: u16,
    response: &'static [(&'static str, &'static str)],
    first: &'static str,
    second: &'static str,
    answered: Option<u16>,
    calls: usize,
    age: Option<&'static str>,
    ttl: Option<(i64, i64)>,
}

const MISS_STORED: &str = "lock-core; fwd=miss; fwd-status=200; stored";
const HIT: &str = "lock-core; hit";
const REFRESHED: &str = "lock-core; fwd=request; fwd-status=200; stored";

fn rows() -> Vec<Row> {
    let stored = |name, response, age, ttl| Row {
        name,
        request: &[],
        status: 200,
        response,
        first: MISS_STORED,
        second: HIT,
        answered: None,
        calls: 1,
        age: Some(age),
        ttl: Some(ttl),
    };
    let not_stored = |name, status, response, detail| Row {
        name,
        request: &[],
        status,
        response,
        first: detail,
        second: detail,
        answered: None,
        calls: 2,
        age: None,
        ttl: None,
    };
    let asks = |name, request, first, second, calls| Row {
        name,
        request,
        status: 200,
        response: &[("cache-control", "max-age=60")],
        first,
        second,
        answered: None,
        calls,
        age: None,
        ttl: None,
    };
    vec![
        stored("max-age", &[("cache-control", "max-age=60")], "0", (59, 60)),
        stored(
            "s-maxage wins over max-age",
            &[("cache-control", "max-age=0, s-maxage=30")],
            "0",
            (29, 30),
        ),
        stored(
            "the response's Age counts",
            &[("cache-control", "max-age=60"), ("age", "20")],
            "20",
            (39, 40),
        ),
        stored(
            "public",
            &[("cache-control", "public, max-age=60")],
            "0",
            (59, 60),
        ),
        Row {
            first: "lock-core; fwd=miss; fwd-status=404; stored",
            status: 404,
            ..stored(
                "404 is stored",
                &[("cache-control", "max-age=60")],
                "0",
                (59, 60),
            )
        },
        not_stored(
            "no-store",
            200,
            &[("cache-control", "no-store, max-age=60")],
            "lock-core; fwd=miss; fwd-status=200; detail=no-store",
        ),
        not_stored(
            "private",
            200,
            &[("cache-control", "private, max-age=60")],
            "lock-core; fwd=miss; fwd-status=200; detail=private",
        ),
        not_stored(
            "no-cache response",
            200,
            &[("cache-control", "no-cache, max-age=60")],
            "lock-core; fwd=miss; fwd-status=200; detail=no-cache",
        ),
        not_stored(
            "no freshness and no default",
            200,
            &[],
            "lock-core; fwd=miss; fwd-status=200; detail=no-freshness",
        ),
        not_stored(
            "max-age=0",
            200,
            &[("cache-control", "max-age=0")],
            "lock-core; fwd=miss; fwd-status=200; detail=already-stale",
        ),
        not_stored(
            "Vary on a header outside the key",
            200,
            &[("cache-control", "max-age=60"), ("vary", "accept-encoding")],
            "lock-core; fwd=miss; fwd-status=200; detail=vary",
        ),
        not_stored(
            "500 is not stored",
            500,
            &[("cache-control", "max-age=60")],
            "lock-core; fwd=miss; fwd-status=500; detail=status",
        ),
        not_stored(
            "206 is not stored",
            206,
            &[("cache-control", "max-age=60")],
            "lock-core; fwd=miss; fwd-status=206; detail=status",
        ),
        asks(
            "request no-cache recomputes",
            &[("cache-control", "no-cache")],
            REFRESHED,
            REFRESHED,
            2,
        ),
        asks(
            "request max-age=0 recomputes",
            &[("cache-control", "max-age=0")],
            REFRESHED,
            REFRESHED,
            2,
        ),
        asks(
            "request Pragma: no-cache recomputes",
            &[("pragma", "no-cache")],
            REFRESHED,
            REFRESHED,
            2,
        ),
        asks(
            "request max-age within the age is a hit",
            &[("cache-control", "max-age=30")],
            MISS_STORED,
            HIT,
            1,
        ),
        asks(
            "request no-store passes",
            &[("cache-control", "no-store")],
            "lock-core; fwd=bypass; detail=no-store",
            "lock-core; fwd=bypass; detail=no-store",
            2,
        ),
        asks(
            "Range passes",
            &[("range", "bytes=0-1")],
            "lock-core; fwd=bypass; detail=range",
            "lock-core; fwd=bypass; detail=range",
            2,
        ),
        asks(
            "preconditions pass",
            &[("if-none-match", "\"x\"")],
            "lock-core; fwd=bypass; detail=conditional",
            "lock-core; fwd=bypass; detail=conditional",
            2,
        ),
        asks(
            "Authorization is answered alone",
            &[("authorization", "Bearer t")],
            "lock-core; fwd=request; fwd-status=200; detail=authorization",
            "lock-core; fwd=request; fwd-status=200; detail=authorization",
            2,
        ),
        Row {
            answered: Some(504),
            ..asks(
                "only-if-cached on a miss is a 504",
                &[("cache-control", "only-if-cached")],
                "lock-core; fwd=miss; detail=only-if-cached",
                "lock-core; fwd=miss; detail=only-if-cached",
                0,
            )
        },
    ]
}

struct Table {
    rows: Vec<Row>,
    calls: Vec<AtomicUsize>,
}

async fn table_row(table: web::Data<Table>, n: web::Path<usize>) -> HttpResponse {
    let n = n.into_inner();
    table.calls[n].fetch_add(1, Ordering::SeqCst);
    let row = &table.rows[n];
    let mut response = HttpResponse::build(StatusCode::from_u16(row.status).unwrap());
    for header in row.response {
        response.insert_header(*header);
    }
    response.body(format!("row {n}"))
}

#[actix_web::test]
async fn cache_control_semantics_over_http() {
    let rows = rows();
    let table = web::Data::new(Table {
        calls: rows.iter().map(|_| AtomicUsize::new(0)).collect(),
        rows,
    });
    let app = test::init_service(
        App::new()
            .app_data(table.clone())
            .wrap(cached(Cache::memory("semantics").unwrap()))
            .route("/t/{n}", web::get().to(table_row)),
    )
    .await;
    for (n, row) in table.rows.iter().enumerate() {
        let path = format!("/t/{n}");
        let answered = StatusCode::from_u16(row.answered.unwrap_or(row.status)).unwrap();
        let mut seen = Vec::new();
        for expected in [row.first, row.second] {
            let (status, headers, body) = send(&app, get_with(&path, row.request)).await;
            assert_eq!(cache_status(&headers), expected, "{}", row.name);
            assert_eq!(status, answered, "{}", row.name);
            if row.answered.is_none() {
                assert_eq!(body, format!("row {n}"), "{}", row.name);
            }
            seen.push(headers);
        }
        assert_eq!(
            table.calls[n].load(Ordering::SeqCst),
            row.calls,
            "{}",
            row.name
        );
        let second = &seen[1];
        if let Some(age) = row.age {
            assert_eq!(header(second, "age"), age, "{}", row.name);
        }
        if let Some((low, high)) = row.ttl {
            let ttl = ttl(second).unwrap();
            assert!((low..=high).contains(&ttl), "{}: ttl {ttl}", row.name);
        }
        let own_age = row.response.iter().any(|(name, _)| *name == "age");
        if row.calls > 0 && row.answered.is_none() && !own_age {
            assert!(
                !seen[0].contains_key("age"),
                "{}: computed, no Age",
                row.name
            );
        }
    }
}

#[derive(Clone, Default)]
struct Calls {
    count: Arc<AtomicUsize>,
    methods: Arc<Mutex<Vec<Method>>>,
}

impl Calls {
    fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }
}

/// Settings of the counting handler.
#[derive(Clone)]
struct Handler {
    calls: Calls,
    cache_control: &'static str,
    delay: Duration,
}

async fn product(
    handler: web::Data<Handler>,
    request: HttpRequest,
    id: web::Path<u32>,
) -> HttpResponse {
    handler.calls.count.fetch_add(1, Ordering::SeqCst);
    handler
        .calls
        .methods
        .lock()
        .unwrap()
        .push(request.method().clone());
    tokio::time::sleep(handler.delay).await;
    HttpResponse::Ok()
        .insert_header(("cache-control", handler.cache_control))
        .insert_header(("set-cookie", "session=abc"))
        .body(format!("product {id}"))
}

/// An app whose handler counts its calls, waits `delay`, and answers with `cache_control`.
async fn counting(
    calls: &Calls,
    cache_control: &'static str,
    delay: Duration,
    cache: Cache,
) -> Rc<
    impl Service<
        actix_http::Request,
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
    >,
> {
    let handler = web::Data::new(Handler {
        calls: calls.clone(),
        cache_control,
        delay,
    });
    Rc::new(
        test::init_service(
            App::new().app_data(handler).wrap(cached(cache)).service(
                web::resource("/products/{id}")
                    .route(web::get().to(product))
                    .route(web::post().to(|| async { "posted" })),
            ),
        )
        .await,
    )
}

#[actix_web::test]
async fn two_hundred_cold_gets_call_the_handler_once() {
    let calls = Calls::default();
    let app = counting(
        &calls,
        "max-age=60",
        Duration::from_millis(200),
        Cache::memory("cold").unwrap(),
    )
    .await;
    let mut tasks = Vec::new();
    for _ in 0..200 {
        let app = app.clone();
        tasks.push(actix_web::rt::spawn(async move {
            send(&*app, get_with("/products/7", &[])).await
        }));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        let (status, headers, body) = task.await.unwrap();
        assert_eq!((status, body), (StatusCode::OK, Bytes::from("product 7")));
        statuses.push(cache_status(&headers));
    }
    assert_eq!(calls.count(), 1);
    let stored = statuses.iter().filter(|s| *s == MISS_STORED).count();
    let collapsed = statuses
        .iter()
        .filter(|s| *s == "lock-core; fwd=miss; collapsed")
        .count();
    assert_eq!((stored, collapsed), (1, 199), "{statuses:?}");
}

#[actix_web::test]
async fn responses_not_to_share_are_not_handed_to_waiters() {
    let calls = Calls::default();
    let app = counting(
        &calls,
        "private, max-age=60",
        Duration::from_millis(100),
        Cache::memory("private").unwrap(),
    )
    .await;
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let app = app.clone();
        tasks.push(actix_web::rt::spawn(async move {
            send(&*app, get_with("/products/1", &[])).await
        }));
    }
    for task in tasks {
        let (_, headers, body) = task.await.unwrap();
        assert_eq!(
            cache_status(&headers),
            "lock-core; fwd=miss; fwd-status=200; detail=private"
        );
        assert_eq!(
            header(&headers, "set-cookie"),
            "session=abc",
            "its own response"
        );
        assert_eq!(body, "product 1");
    }
    assert_eq!(calls.count(), 20, "each request ran the handler");
}

#[actix_web::test]
async fn set_cookie_reaches_the_computing_request_only() {
    let calls = Calls::default();
    let app = counting(
        &calls,
        "max-age=60",
        Duration::ZERO,
        Cache::memory("cookie").unwrap(),
    )
    .await;
    let (_, first, _) = send(&*app, get_with("/products/2", &[])).await;
    assert_eq!(header(&first, "set-cookie"), "session=abc");
    let (_, hit, body) = send(&*app, get_with("/products/2", &[])).await;
    assert_eq!(cache_status(&hit), HIT);
    assert!(!hit.contains_key("set-cookie"), "{hit:?}");
    assert_eq!(body, "product 2");
}

#[actix_web::test]
async fn head_is_served_from_the_get_entry() {
    let calls = Calls::default();
    let app = counting(
        &calls,
        "max-age=60",
        Duration::ZERO,
        Cache::memory("head").unwrap(),
    )
    .await;
    let head = || {
        TestRequest::default()
            .method(Method::HEAD)
            .uri("/products/3")
    };
    // A cold HEAD is forwarded as a GET, so the entry holds the body (actix-web sends its
    // length and drops it on the wire).
    let (status, headers, _) = send(&*app, head()).await;
    assert_eq!(
        (status, cache_status(&headers)),
        (StatusCode::OK, MISS_STORED.to_owned())
    );
    assert_eq!(*calls.methods.lock().unwrap(), [Method::GET]);
    let (_, headers, body) = send(&*app, get_with("/products/3", &[])).await;
    assert_eq!(
        (cache_status(&headers), body),
        (HIT.to_owned(), Bytes::from("product 3"))
    );
    let (_, headers, _) = send(&*app, head()).await;
    assert_eq!(cache_status(&headers), HIT);
    assert_eq!(header(&headers, "content-length"), "9");
    assert_eq!(calls.count(), 1);
}

#[actix_web::test]
async fn other_methods_pass_through() {
    let calls = Calls::default();
    let app = counting(
        &calls,
        "max-age=60",
        Duration::ZERO,
        Cache::memory("post").unwrap(),
    )
    .await;
    for _ in 0..2 {
        let (status, headers, body) = send(&*app, TestRequest::post().uri("/products/4")).await;
        assert_eq!((status, body), (StatusCode::OK, Bytes::from("posted")));
        assert_eq!(cache_status(&headers), "lock-core; fwd=method");
    }
    assert_eq!(calls.count(), 0);
}

/// A body of unknown length whose chunks the test sends one by one.
struct Chunks(mpsc::Receiver<Bytes>);

impl MessageBody for Chunks {
    type Error = Infallible;

    fn size(&self) -> BodySize {
        BodySize::Stream
    }

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Infallible>>> {
        self.0.poll_recv(cx).map(|chunk| chunk.map(Ok))
    }
}

#[derive(Default)]
struct Feeds(Mutex<VecDeque<mpsc::Receiver<Bytes>>>);

#[actix_web::test]
async fn bodies_over_the_limit_reach_the_client_whole_and_are_not_stored() {
    let feeds = web::Data::new(Feeds::default());
    let calls = web::Data::new(AtomicUsize::new(0));
    let app = test::init_service(
        App::new()
            .app_data(feeds.clone())
            .app_data(calls.clone())
            .wrap(cached(Cache::memory("large").unwrap()))
            .route(
                "/length",
                web::get().to(|calls: web::Data<AtomicUsize>| async move {
                    calls.fetch_add(1, Ordering::SeqCst);
                    HttpResponse::Ok()
                        .insert_header(("cache-control", "max-age=60"))
                        .body(vec![b'x'; 3000])
                }),
            )
            .route(
                "/chunked",
                web::get().to(|feeds: web::Data<Feeds>| async move {
                    let feed = feeds.0.lock().unwrap().pop_front().expect("a feed");
                    HttpResponse::Ok()
                        .insert_header(("cache-control", "max-age=60"))
                        .body(Chunks(feed))
                }),
            ),
    )
    .await;
    // A known length over the limit: passed at once, twice (nothing stored).
    for _ in 0..2 {
        let (status, headers, body) = send(&app, get_with("/length", &[])).await;
        assert_eq!((status, body.len()), (StatusCode::OK, 3000));
        assert_eq!(
            cache_status(&headers),
            "lock-core; fwd=miss; fwd-status=200; detail=too-large"
        );
    }
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // Unknown length: the answer starts once the limit is crossed, before the body ends, and
    // goes on with the rest.
    for _ in 0..2 {
        let (feed, chunks) = mpsc::channel(8);
        feeds.0.lock().unwrap().push_back(chunks);
        for _ in 0..3 {
            feed.send(Bytes::from(vec![b'y'; 500])).await.unwrap();
        }
        let response = timeout(LIMIT, app.call(get_with("/chunked", &[]).to_request()))
            .await
            .expect("answered before the body ended")
            .unwrap();
        assert_eq!(
            cache_status(response.headers()),
            "lock-core; fwd=miss; fwd-status=200; detail=too-large"
        );
        for _ in 0..4 {
            feed.send(Bytes::from(vec![b'z'; 500])).await.unwrap();
        }
        drop(feed);
        let body = timeout(LIMIT, actix_web::body::to_bytes(response.into_body()))
            .await
            .unwrap()
            .map_err(|_| "body error")
            .unwrap();
        assert_eq!(body.len(), 3500);
        assert_eq!(&body[..1500], &[b'y'; 1500][..]);
        assert_eq!(&body[1500..], &[b'z'; 2000][..]);
    }
}

#[actix_web::test]
async fn stale_responses_are_served_while_one_refresh_runs() {
    let calls = Calls::default();
    let app = counting(
        &calls,
        "max-age=1, stale-while-revalidate=30",
        Duration::from_millis(300),
        Cache::memory("swr").unwrap(),
    )
    .await;
    send(&*app, get_with("/products/6", &[])).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    // Stale: the first request starts the refresh, which takes its call: it is answered with
    // the refreshed response. The others meanwhile are served stale at once.
    let refreshing = {
        let app = app.clone();
        actix_web::rt::spawn(async move { send(&*app, get_with("/products/6", &[])).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (_, headers, body) = send(&*app, get_with("/products/6", &[])).await;
    assert_eq!(
        cache_status(&headers),
        "lock-core; hit; detail=stale-while-revalidate"
    );
    assert_eq!(body, "product 6");
    assert!(ttl(&headers).unwrap() < 0);
    let (_, headers, body) = refreshing.await.unwrap();
    assert_eq!(
        cache_status(&headers),
        "lock-core; fwd=stale; fwd-status=200"
    );
    assert_eq!(body, "product 6");
    let (_, headers, _) = send(&*app, get_with("/products/6", &[])).await;
    assert_eq!(cache_status(&headers), HIT);
    assert!(ttl(&headers).unwrap() >= 0);
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
