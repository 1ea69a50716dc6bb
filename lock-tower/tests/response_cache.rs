//! The response cache layer on an axum router, on the memory cache: `Cache-Control`
//! semantics over HTTP, collapsing of cold misses, large bodies passed through whole,
//! `Set-Cookie`, `HEAD`, bypasses, responses not shared with waiters, stale-while-revalidate.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body::Frame;
use http_body_util::BodyExt;
use lock_core::cache::{Cache, Freshness};
use lock_tower::ResponseCacheLayer;
use tokio::sync::mpsc;
use tokio::time::timeout;
use tower::ServiceExt;

const LIMIT: Duration = Duration::from_secs(20);

async fn send(app: &Router, request: Request<Body>) -> (StatusCode, HeaderMap, Bytes) {
    let response = timeout(LIMIT, app.clone().oneshot(request))
        .await
        .expect("answered in time")
        .unwrap();
    let (parts, body) = response.into_parts();
    let body = timeout(LIMIT, body.collect()).await.unwrap().unwrap();
    (parts.status, parts.headers, body.to_bytes())
}

fn get_with(path: &str, headers: &[(&str, &str)]) -> Request<Body> {
    let mut request = Request::get(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.body(Body::empty()).unwrap()
}

/// `Cache-Status` without its `ttl` parameter, which depends on timing.
fn cache_status(headers: &HeaderMap) -> String {
    let value = headers
        .get("cache-status")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    value
        .split("; ")
        .filter(|p| !p.starts_with("ttl="))
        .collect::<Vec<_>>()
        .join("; ")
}

fn ttl(headers: &HeaderMap) -> Option<i64> {
    let value = headers.get("cache-status")?.to_str().ok()?;
    value
        .split("; ")
        .find_map(|p| p.strip_prefix("ttl=")?.parse().ok())
}

fn layer(cache: Cache) -> ResponseCacheLayer {
    ResponseCacheLayer::builder(cache)
        .max_body(1024)
        .build()
        .unwrap()
}

/// One row of the semantics table: the same request sent twice to an application answering
/// `status` with `response` headers.
struct Row {
    name: &'static str,
    request: &'static [(&'static str, &'static str)],
    status: u16,
    response: &'static [(&'static str, &'static str)],
    /// `Cache-Status` (without `ttl`) of the first and the second answer.
    first: &'static str,
    second: &'static str,
    /// The status both answers have, when it is not `status`.
    answered: Option<u16>,
    /// How many times the application ran for the two requests.
    calls: usize,
    /// The second answer's `Age`, and the `ttl` range of its `Cache-Status`.
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

#[derive(Default)]
struct Table {
    rows: Vec<Row>,
    calls: Vec<AtomicUsize>,
}

async fn table_row(State(table): State<Arc<Table>>, Path(n): Path<usize>) -> Response {
    table.calls[n].fetch_add(1, Ordering::SeqCst);
    let row = &table.rows[n];
    let mut response = Response::builder().status(row.status);
    for (name, value) in row.response {
        response = response.header(*name, *value);
    }
    response.body(Body::from(format!("row {n}"))).unwrap()
}

#[tokio::test]
async fn cache_control_semantics_over_http() {
    let rows = rows();
    let table = Arc::new(Table {
        calls: rows.iter().map(|_| AtomicUsize::new(0)).collect(),
        rows,
    });
    let app = Router::new()
        .route("/t/{n}", get(table_row))
        .with_state(table.clone())
        .layer(layer(Cache::memory("semantics").unwrap()));
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
            assert_eq!(second["age"], age, "{}", row.name);
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

/// An application that counts its calls, waits `delay`, and answers with `cache_control`.
fn counting(calls: &Calls, cache_control: &'static str, delay: Duration) -> Router {
    let calls = calls.clone();
    Router::new().route(
        "/products/{id}",
        get(move |method: Method, Path(id): Path<u32>| async move {
            calls.count.fetch_add(1, Ordering::SeqCst);
            calls.methods.lock().unwrap().push(method);
            tokio::time::sleep(delay).await;
            Response::builder()
                .header("cache-control", cache_control)
                .header("set-cookie", "session=abc")
                .body(Body::from(format!("product {id}")))
                .unwrap()
        })
        .post(|| async { "posted" }),
    )
}

async fn concurrent(app: &Router, n: usize, path: &str) -> Vec<(StatusCode, HeaderMap, Bytes)> {
    let mut tasks = Vec::new();
    for _ in 0..n {
        let (app, path) = (app.clone(), path.to_owned());
        tasks.push(tokio::spawn(async move {
            send(&app, get_with(&path, &[])).await
        }));
    }
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_cold_gets_call_the_handler_once() {
    let calls = Calls::default();
    let app = counting(&calls, "max-age=60", Duration::from_millis(200))
        .layer(layer(Cache::memory("cold").unwrap()));
    let answers = concurrent(&app, 200, "/products/7").await;
    assert_eq!(calls.count(), 1);
    let statuses: Vec<String> = answers.iter().map(|(_, h, _)| cache_status(h)).collect();
    let stored = statuses.iter().filter(|s| *s == MISS_STORED).count();
    let collapsed = statuses
        .iter()
        .filter(|s| *s == "lock-core; fwd=miss; collapsed")
        .count();
    assert_eq!((stored, collapsed), (1, 199), "{statuses:?}");
    assert!(answers
        .iter()
        .all(|(s, _, b)| *s == StatusCode::OK && b == "product 7"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_not_to_share_are_not_handed_to_waiters() {
    let calls = Calls::default();
    let app = counting(&calls, "private, max-age=60", Duration::from_millis(100))
        .layer(layer(Cache::memory("private").unwrap()));
    let answers = concurrent(&app, 20, "/products/1").await;
    assert_eq!(calls.count(), 20, "each request ran the handler");
    for (_, headers, body) in &answers {
        assert_eq!(
            cache_status(headers),
            "lock-core; fwd=miss; fwd-status=200; detail=private"
        );
        assert_eq!(headers["set-cookie"], "session=abc", "its own response");
        assert_eq!(body, "product 1");
    }
}

#[tokio::test]
async fn set_cookie_reaches_the_computing_request_only() {
    let calls = Calls::default();
    let app = counting(&calls, "max-age=60", Duration::ZERO)
        .layer(layer(Cache::memory("cookie").unwrap()));
    let (_, first, _) = send(&app, get_with("/products/2", &[])).await;
    assert_eq!(first["set-cookie"], "session=abc");
    let (_, hit, body) = send(&app, get_with("/products/2", &[])).await;
    assert_eq!(cache_status(&hit), HIT);
    assert!(!hit.contains_key("set-cookie"), "{hit:?}");
    assert_eq!(body, "product 2");
}

#[tokio::test]
async fn head_is_served_from_the_get_entry() {
    let calls = Calls::default();
    let app =
        counting(&calls, "max-age=60", Duration::ZERO).layer(layer(Cache::memory("head").unwrap()));
    let head = || Request::head("/products/3").body(Body::empty()).unwrap();
    // A cold HEAD is forwarded as a GET, so the entry holds the body.
    let (status, headers, body) = send(&app, head()).await;
    assert_eq!((status, body.len()), (StatusCode::OK, 0));
    assert_eq!(cache_status(&headers), MISS_STORED);
    assert_eq!(headers["content-length"], "9");
    assert_eq!(*calls.methods.lock().unwrap(), [Method::GET]);
    let (_, headers, body) = send(&app, get_with("/products/3", &[])).await;
    assert_eq!(
        (cache_status(&headers), body),
        (HIT.to_owned(), Bytes::from("product 3"))
    );
    let (_, headers, body) = send(&app, head()).await;
    assert_eq!((cache_status(&headers), body.len()), (HIT.to_owned(), 0));
    assert_eq!(headers["content-length"], "9");
    assert_eq!(calls.count(), 1);
}

#[tokio::test]
async fn other_methods_pass_through() {
    let calls = Calls::default();
    let app =
        counting(&calls, "max-age=60", Duration::ZERO).layer(layer(Cache::memory("post").unwrap()));
    for _ in 0..2 {
        let post = Request::post("/products/4").body(Body::empty()).unwrap();
        let (status, headers, body) = send(&app, post).await;
        assert_eq!((status, body), (StatusCode::OK, Bytes::from("posted")));
        assert_eq!(cache_status(&headers), "lock-core; fwd=method");
    }
}

#[tokio::test]
async fn route_layer_caches_matched_routes_only() {
    let calls = Calls::default();
    let app = counting(&calls, "max-age=60", Duration::ZERO)
        .route_layer(layer(Cache::memory("route").unwrap()));
    for expected in [MISS_STORED, HIT] {
        let (_, headers, _) = send(&app, get_with("/products/5", &[])).await;
        assert_eq!(cache_status(&headers), expected);
    }
    let (status, headers, _) = send(&app, get_with("/nowhere", &[])).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        !headers.contains_key("cache-status"),
        "the fallback is not wrapped"
    );
}

/// A body of unknown length whose chunks the test sends one by one.
struct Chunks(mpsc::Receiver<Bytes>);

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| Ok(Frame::data(c))))
    }
}

#[tokio::test]
async fn bodies_over_the_limit_reach_the_client_whole_and_are_not_stored() {
    let big = Bytes::from(vec![b'x'; 3000]);
    let feeds: Arc<Mutex<VecDeque<mpsc::Receiver<Bytes>>>> = Arc::default();
    let calls = Calls::default();
    let (app_feeds, app_calls, app_big) = (feeds.clone(), calls.clone(), big.clone());
    let app = Router::new()
        .route(
            "/length",
            get(move || {
                app_calls.count.fetch_add(1, Ordering::SeqCst);
                let big = app_big.clone();
                async move {
                    Response::builder()
                        .header("cache-control", "max-age=60")
                        .header("content-length", big.len())
                        .body(Body::from(big))
                        .unwrap()
                }
            }),
        )
        .route(
            "/chunked",
            get(move || {
                let feed = app_feeds.lock().unwrap().pop_front().expect("a feed");
                async move {
                    Response::builder()
                        .header("cache-control", "max-age=60")
                        .body(Body::new(Chunks(feed)))
                        .unwrap()
                }
            }),
        )
        .layer(layer(Cache::memory("large").unwrap()));
    // Content-Length over the limit: passed at once, twice (nothing stored).
    for _ in 0..2 {
        let (status, headers, body) = send(&app, get_with("/length", &[])).await;
        assert_eq!((status, body.len()), (StatusCode::OK, 3000));
        assert_eq!(
            cache_status(&headers),
            "lock-core; fwd=miss; fwd-status=200; detail=too-large"
        );
    }
    assert_eq!(calls.count(), 2);
    // Unknown length: the answer starts once the limit is crossed, before the body ends, and
    // goes on with the rest.
    for _ in 0..2 {
        let (feed, chunks) = mpsc::channel(8);
        feeds.lock().unwrap().push_back(chunks);
        for _ in 0..3 {
            feed.send(Bytes::from(vec![b'y'; 500])).await.unwrap();
        }
        let response = timeout(LIMIT, app.clone().oneshot(get_with("/chunked", &[])))
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
        let body = timeout(LIMIT, response.into_body().collect())
            .await
            .unwrap()
            .unwrap()
            .to_bytes();
        assert_eq!(body.len(), 3500);
        assert_eq!(&body[..1500], &[b'y'; 1500][..]);
        assert_eq!(&body[1500..], &[b'z'; 2000][..]);
    }
}

#[tokio::test]
async fn stale_responses_are_served_while_one_refresh_runs() {
    let calls = Calls::default();
    let app = counting(
        &calls,
        "max-age=1, stale-while-revalidate=30",
        Duration::from_millis(50),
    )
    .layer(layer(Cache::memory("swr").unwrap()));
    send(&app, get_with("/products/6", &[])).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (_, headers, body) = send(&app, get_with("/products/6", &[])).await;
    assert_eq!(
        cache_status(&headers),
        "lock-core; hit; detail=stale-while-revalidate"
    );
    assert_eq!(body, "product 6");
    assert!(ttl(&headers).unwrap() < 0);
    // The refresh runs in the background; then the response is fresh again.
    timeout(LIMIT, async {
        loop {
            let (_, headers, _) = send(&app, get_with("/products/6", &[])).await;
            if cache_status(&headers) == HIT && ttl(&headers).unwrap() >= 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("refreshed");
    assert_eq!(calls.count(), 2);
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
