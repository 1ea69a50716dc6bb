//! The request flow with a canned application: what is stored, replayed, shared, and said.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::cache::Cache;
use crate::http::cache::origin::tests::Canned;
use crate::http::cache::{HttpCacheBuilder, Plan, RequestParts};

type Outcome = Served<Canned, &'static str>;

/// The application's answer.
type Respond = fn() -> Result<Canned, &'static str>;

fn http(configure: impl FnOnce(HttpCacheBuilder) -> HttpCacheBuilder) -> HttpCache {
    configure(HttpCache::builder(Cache::memory("serve").unwrap()).max_body(16))
        .build()
        .unwrap()
}

/// Serves `request` with an application answering `respond()`, counting its calls.
async fn serve(
    http: &HttpCache,
    request: RequestParts,
    respond: Respond,
    calls: &Arc<AtomicUsize>,
) -> Outcome {
    let Plan::Cache(call) = http.plan(&request) else {
        panic!("{request:?} is served through the cache");
    };
    let calls = calls.clone();
    call.serve(move |forward_as| async move {
        calls.fetch_add(1, Ordering::SeqCst);
        let mut response = respond();
        if let (Ok(response), ForwardAs::Get) = (&mut response, forward_as) {
            response
                .headers
                .push(("x-forwarded-as".into(), b"GET".to_vec()));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        response
    })
    .await
}

/// `origin|answer <status> <cache-status> [age=..] body=..`, without `ttl` (see `ttl`).
async fn summary(served: Outcome) -> String {
    let full = full_summary(served).await;
    match full.find("; ttl=") {
        Some(at) => {
            let end = full[at + 2..]
                .find([';', ' '])
                .map_or(full.len(), |e| at + 2 + e);
            format!("{}{}", &full[..at], &full[end..])
        }
        None => full,
    }
}

/// The `ttl` of a `Cache-Status`.
fn ttl(answer: &Answer) -> i64 {
    let value =
        String::from_utf8_lossy(answer.response.header("cache-status").unwrap()).into_owned();
    let at = value.find("ttl=").expect("a ttl") + 4;
    let digits: String = value[at..]
        .chars()
        .take_while(|c| *c == '-' || c.is_ascii_digit())
        .collect();
    digits.parse().unwrap()
}

async fn full_summary(served: Outcome) -> String {
    match served {
        Served::Answer(answer) => {
            let header =
                |n| String::from_utf8_lossy(answer.response.header(n).unwrap_or(b"-")).into_owned();
            format!(
                "answer {} {} age={} body={}",
                answer.response.status,
                header("cache-status"),
                header("age"),
                String::from_utf8_lossy(if answer.head_only {
                    b""
                } else {
                    &answer.response.body
                })
            )
        }
        Served::Origin(mut from) => {
            let mut body = std::mem::take(&mut from.prefix);
            if !from.complete {
                while let Ok(Some(chunk)) = from.response.next_chunk().await {
                    body.extend(chunk);
                }
            }
            if from.head_only {
                body.clear();
            }
            format!(
                "origin {} {} body={}",
                from.response.status,
                from.cache_status_value(None),
                String::from_utf8_lossy(&body)
            )
        }
        Served::Error(error) => format!("error {error}"),
    }
}

fn ok(cc: &'static str, chunks: &'static [&'static str]) -> Canned {
    Canned::new(200, &[("cache-control", cc)], chunks)
}

#[tokio::test]
async fn a_miss_is_stored_and_replayed_with_age_and_ttl() {
    let http = http(|b| b);
    let calls = Arc::new(AtomicUsize::new(0));
    let respond = || {
        let mut canned = ok("max-age=60", &["hel", "lo"]);
        canned.headers.push(("Age".into(), b"5".to_vec()));
        canned.headers.push(("Set-Cookie".into(), b"s=1".to_vec()));
        Ok(canned)
    };
    let first = serve(&http, RequestParts::get("/a"), respond, &calls).await;
    assert_eq!(
        summary(first).await,
        "origin 200 lock-core; fwd=miss; fwd-status=200; stored body=hello"
    );
    let Served::Answer(hit) = serve(&http, RequestParts::get("/a"), respond, &calls).await else {
        panic!("a hit");
    };
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(
        (54..=55).contains(&ttl(&hit)),
        "60 s fresh, 5 s old: {}",
        ttl(&hit)
    );
    assert_eq!(
        summary(Served::Answer(hit.clone())).await,
        "answer 200 lock-core; hit age=5 body=hello"
    );
    assert_eq!(
        hit.response.header("age"),
        Some(&b"5"[..]),
        "its own Age when stored"
    );
    assert_eq!(hit.response.header("set-cookie"), None, "never replayed");
    assert_eq!(hit.response.body, b"hello");
    // HEAD reads the GET entry: headers only, with the GET's length.
    let head = serve(&http, RequestParts::new("HEAD", "/a"), respond, &calls).await;
    let Served::Answer(head) = head else {
        panic!("a hit")
    };
    assert!(head.head_only);
    assert_eq!(head.response.header("content-length"), Some(&b"5"[..]));
}

#[tokio::test]
async fn a_head_miss_is_forwarded_as_a_get_and_stored_for_gets() {
    let http = http(|b| b);
    let calls = Arc::new(AtomicUsize::new(0));
    let respond = || Ok(ok("max-age=60", &["body"]));
    let head = serve(&http, RequestParts::new("HEAD", "/h"), respond, &calls).await;
    let Served::Origin(from) = head else {
        panic!("the leader")
    };
    assert!(from.head_only && from.complete);
    assert_eq!(from.prefix, b"body");
    let forwarded = from
        .response
        .headers
        .iter()
        .any(|(n, _)| n == "x-forwarded-as");
    assert!(forwarded, "forwarded as a GET");
    let get = serve(&http, RequestParts::get("/h"), respond, &calls).await;
    assert!(summary(get).await.ends_with("body=body"));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn what_is_not_stored_reaches_its_own_request_only() {
    let http = http(|b| b);
    let pass = "origin 200 lock-core; fwd=miss; fwd-status=200; detail=hit-for-pass";
    // The first answer, the second (within the pass-through or negative TTL), the calls.
    let cases: Vec<(Respond, &str, String, usize)> = vec![
        (
            || Ok(ok("private, max-age=60", &["mine"])),
            "origin 200 lock-core; fwd=miss; fwd-status=200; detail=private body=mine",
            format!("{pass} body=mine"),
            2,
        ),
        (
            || Ok(ok("max-age=60", &["0123456789", "0123456789", "tail"])),
            "origin 200 lock-core; fwd=miss; fwd-status=200; detail=too-large body=01234567890123456789tail",
            format!("{pass} body=01234567890123456789tail"),
            2,
        ),
        (
            || {
                let mut canned = ok("max-age=60", &["x"]);
                canned.headers.push(("content-length".into(), b"17".to_vec()));
                Ok(canned)
            },
            "origin 200 lock-core; fwd=miss; fwd-status=200; detail=too-large body=x",
            format!("{pass} body=x"),
            2,
        ),
        // A failure: remembered for the negative TTL (1 s), replayed without a call.
        (
            || Ok(Canned::new(503, &[], &["down"])),
            "origin 503 lock-core; fwd=miss; fwd-status=503; detail=status body=down",
            "answer 503 lock-core; hit; detail=negative age=0 body=down".to_owned(),
            1,
        ),
    ];
    for (n, (respond, first, second, calls_made)) in cases.into_iter().enumerate() {
        let calls = Arc::new(AtomicUsize::new(0));
        let path = format!("/n{n}");
        for expected in [first, second.as_str()] {
            let served = serve(&http, RequestParts::get(path.clone()), respond, &calls).await;
            assert_eq!(summary(served).await, expected);
        }
        assert_eq!(calls.load(Ordering::SeqCst), calls_made, "{first}");
    }
    // An error of the application is the request's own; it cannot be replayed to the next:
    // a 502 problem while it is remembered.
    let calls = Arc::new(AtomicUsize::new(0));
    let failed = serve(&http, RequestParts::get("/err"), || Err("refused"), &calls).await;
    assert_eq!(summary(failed).await, "error refused");
    let Served::Answer(problem) =
        serve(&http, RequestParts::get("/err"), || Err("refused"), &calls).await
    else {
        panic!("answered by the cache");
    };
    assert_eq!(problem.response.status, 502);
    assert_eq!(
        String::from_utf8_lossy(problem.response.header("cache-status").unwrap()),
        "lock-core; hit; ttl=0; detail=negative"
    );
    assert_eq!(problem.response.header("retry-after"), Some(&b"1"[..]));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn concurrent_misses_collapse_unless_the_response_is_not_to_be_shared() {
    let http = http(|b| b);
    for (respond, expected_calls, shared) in [
        (
            (|| Ok(ok("max-age=60", &["v"]))) as fn() -> _,
            1,
            "lock-core; fwd=miss; collapsed",
        ),
        (|| Ok(ok("private", &["v"])), 20, "-"),
    ] {
        let calls = Arc::new(AtomicUsize::new(0));
        let path = format!("/c{expected_calls}");
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let (http, calls, path) = (http.clone(), calls.clone(), path.clone());
            tasks.push(tokio::spawn(async move {
                summary(serve(&http, RequestParts::get(path), respond, &calls).await).await
            }));
        }
        let mut collapsed = 0;
        for task in tasks {
            collapsed += usize::from(task.await.unwrap().contains(shared));
        }
        assert_eq!(calls.load(Ordering::SeqCst), expected_calls);
        if expected_calls == 1 {
            assert_eq!(collapsed, 19, "every request but the leader");
        }
    }
}

#[tokio::test]
async fn requests_that_refuse_stored_responses() {
    let http = http(|b| b);
    let calls = Arc::new(AtomicUsize::new(0));
    let respond = || {
        let mut canned = ok("max-age=100", &["v"]);
        canned.headers.push(("age".into(), b"50".to_vec()));
        Ok(canned)
    };
    let get = || RequestParts::get("/r");
    summary(serve(&http, get(), respond, &calls).await).await;
    let rows = [
        (
            get().with_header("cache-control", "no-cache"),
            "origin 200 lock-core; fwd=request; fwd-status=200; stored body=v",
        ),
        (
            get().with_header("cache-control", "max-age=10"),
            "origin 200 lock-core; fwd=request; fwd-status=200; stored body=v",
        ),
        (
            get().with_header("cache-control", "max-age=100"),
            "answer 200 lock-core; hit age=50 body=v",
        ),
        (
            get().with_header("authorization", "Bearer x"),
            "origin 200 lock-core; fwd=request; fwd-status=200; detail=authorization body=v",
        ),
    ];
    for ((request, expected), total_calls) in rows.into_iter().zip([2, 3, 3, 4]) {
        assert_eq!(
            summary(serve(&http, request, respond, &calls).await).await,
            expected
        );
        assert_eq!(calls.load(Ordering::SeqCst), total_calls, "{expected}");
    }
    let Plan::Cache(only) = http.plan(
        &get()
            .with_query("x")
            .with_header("cache-control", "only-if-cached"),
    ) else {
        panic!("looked up");
    };
    let served: Outcome = only
        .serve(|_| async { Err::<Canned, _>("never called") })
        .await;
    let summary = summary(served).await;
    assert!(
        summary.starts_with("answer 504 lock-core; fwd=miss; detail=only-if-cached"),
        "{summary}"
    );
}

#[tokio::test]
async fn a_failing_application_is_answered_from_stale_if_error() {
    let http = http(|b| b);
    let calls = Arc::new(AtomicUsize::new(0));
    let fresh = || Ok(ok("max-age=1, stale-if-error=60", &["old"]));
    summary(serve(&http, RequestParts::get("/e"), fresh, &calls).await).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let failing = || Ok(Canned::new(503, &[], &["down"]));
    let served = summary(serve(&http, RequestParts::get("/e"), failing, &calls).await).await;
    assert_eq!(
        served,
        "answer 200 lock-core; fwd=stale; fwd-status=503; detail=stale-if-error age=1 body=old"
    );
}

mod failures;
