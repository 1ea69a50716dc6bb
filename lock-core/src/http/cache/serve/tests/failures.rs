//! Failures and uncacheable answers: shared with the requests waiting for them, remembered for
//! the negative TTL, a stale response served in their stead; a pass-through key waits for
//! nobody.

use super::*;
use crate::memory::MemoryResultStore;
use crate::{LockClient, MemoryBackend};

/// `n` concurrent `GET path`s; their summaries.
async fn crowd(
    http: &HttpCache,
    n: usize,
    path: &str,
    respond: Respond,
    calls: &Arc<AtomicUsize>,
) -> Vec<String> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (http, calls, path) = (http.clone(), calls.clone(), path.to_owned());
            tokio::spawn(async move {
                summary(serve(&http, RequestParts::get(path), respond, &calls).await).await
            })
        })
        .collect();
    let mut summaries = Vec::new();
    for task in tasks {
        summaries.push(task.await.unwrap());
    }
    summaries.sort();
    summaries
}

fn failing() -> Result<Canned, &'static str> {
    Ok(Canned::new(503, &[("retry-after", "7")], &["down"]))
}

#[tokio::test]
async fn a_failure_is_shared_with_the_waiting_requests_and_remembered() {
    let http = http(|b| b.negative_ttl(Duration::from_millis(300)));
    let calls = Arc::new(AtomicUsize::new(0));
    let answers = crowd(&http, 20, "/f", failing, &calls).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "{answers:?}");
    let collapsed = "answer 503 lock-core; fwd=miss; fwd-status=503; collapsed age=0 body=down";
    assert_eq!(
        answers.iter().filter(|a| *a == collapsed).count(),
        19,
        "{answers:?}"
    );
    assert!(answers.contains(
        &"origin 503 lock-core; fwd=miss; fwd-status=503; detail=status body=down".to_owned()
    ));
    // Within the negative TTL: replayed with its Retry-After, no call.
    let Served::Answer(again) = serve(&http, RequestParts::get("/f"), failing, &calls).await else {
        panic!("a remembered failure");
    };
    assert_eq!(again.response.header("retry-after"), Some(&b"7"[..]));
    assert_eq!(
        summary(Served::Answer(again)).await,
        "answer 503 lock-core; hit; detail=negative age=0 body=down"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // After it: one call again.
    tokio::time::sleep(Duration::from_millis(350)).await;
    crowd(&http, 20, "/f", failing, &calls).await;
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_zero_negative_ttl_shares_with_the_waiting_requests_only() {
    let http = http(|b| b.negative_ttl(Duration::ZERO));
    let calls = Arc::new(AtomicUsize::new(0));
    crowd(&http, 20, "/z", failing, &calls).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let next = summary(serve(&http, RequestParts::get("/z"), failing, &calls).await).await;
    assert_eq!(
        next,
        "origin 503 lock-core; fwd=miss; fwd-status=503; detail=status body=down"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2, "nothing kept");
}

#[tokio::test]
async fn an_application_error_is_a_502_for_the_waiting_requests() {
    let http = http(|b| b);
    let calls = Arc::new(AtomicUsize::new(0));
    let answers = crowd(&http, 20, "/e", || Err("refused"), &calls).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "{answers:?}");
    assert_eq!(answers.iter().filter(|a| *a == "error refused").count(), 1);
    let problems = answers
        .iter()
        .filter(|a| {
            a.starts_with(
                "answer 502 lock-core; fwd=miss; collapsed; detail=origin-error age=- body={",
            )
        })
        .count();
    assert_eq!(problems, 19, "{answers:?}");
    assert!(
        !answers
            .iter()
            .any(|a| a.contains("refused") && a.starts_with("answer")),
        "the error's text is not handed on"
    );
}

#[tokio::test]
async fn a_stale_response_wins_over_the_failure_for_every_request() {
    let http = http(|b| b);
    let calls = Arc::new(AtomicUsize::new(0));
    let fresh = || Ok(ok("max-age=1, stale-if-error=60", &["old"]));
    summary(serve(&http, RequestParts::get("/s"), fresh, &calls).await).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let answers = crowd(&http, 20, "/s", failing, &calls).await;
    assert_eq!(calls.load(Ordering::SeqCst), 2, "{answers:?}");
    let leader =
        "answer 200 lock-core; fwd=stale; fwd-status=503; detail=stale-if-error age=1 body=old";
    let waiter = "answer 200 lock-core; fwd=stale; detail=stale-if-error age=1 body=old";
    assert_eq!(
        answers.iter().filter(|a| *a == leader).count(),
        1,
        "{answers:?}"
    );
    assert_eq!(
        answers.iter().filter(|a| *a == waiter).count(),
        19,
        "{answers:?}"
    );
    // Within the negative TTL the stale response is served without calling again.
    let next = summary(serve(&http, RequestParts::get("/s"), failing, &calls).await).await;
    assert_eq!(next, waiter);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_pass_through_key_waits_for_no_lease() {
    let backend = MemoryBackend::new();
    let cache = Cache::builder(MemoryResultStore::new(), backend.clone())
        .namespace("serve")
        .build()
        .unwrap();
    let http = HttpCache::builder(cache).max_body(16).build().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let private = || Ok(ok("private, max-age=60", &["mine"]));
    for path in ["/p", "/q"] {
        let first = summary(serve(&http, RequestParts::get(path), private, &calls).await).await;
        assert!(first.ends_with("detail=private body=mine"), "{first}");
    }
    summary(serve(&http, RequestParts::get("/n"), failing, &calls).await).await;
    // Someone holds the keys' leases (as a computation would): a pass-through key and a
    // remembered failure are answered at once all the same.
    let locks = LockClient::builder(backend)
        .namespace("cache.serve")
        .build()
        .unwrap();
    let mut held = Vec::new();
    for path in ["/p", "/n"] {
        let Plan::Cache(call) = http.plan(&RequestParts::get(path)) else {
            unreachable!()
        };
        // The computations' own releases run in tasks of their own: wait for them.
        let lease = locks
            .lock(call.key().as_str())
            .acquire_within(Duration::from_secs(5));
        held.push(
            lease
                .await
                .unwrap()
                .expect("the lease, once the computation let it go"),
        );
    }
    let within = Duration::from_secs(2); // the wait for a lease is 10 s
    let passed = tokio::time::timeout(
        within,
        serve(&http, RequestParts::get("/p"), private, &calls),
    )
    .await;
    assert_eq!(
        summary(passed.expect("not queued")).await,
        "origin 200 lock-core; fwd=miss; fwd-status=200; detail=hit-for-pass body=mine"
    );
    let negative = tokio::time::timeout(
        within,
        serve(&http, RequestParts::get("/n"), failing, &calls),
    )
    .await;
    assert!(summary(negative.expect("not queued"))
        .await
        .contains("detail=negative"));
    // Requests at once for a pass-through key all call the application, none waits for
    // another's call.
    let answers = crowd(&http, 20, "/q", private, &calls).await;
    assert!(
        answers.iter().all(|a| a.contains("detail=hit-for-pass")),
        "{answers:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3 + 1 + 20);
    drop(held);
}
