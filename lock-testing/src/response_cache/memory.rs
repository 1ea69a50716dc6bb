//! The scenarios on the memory cache; every adapter runs them all.

use std::time::Duration;

use tokio::time::timeout;

use super::origin::{Calls, Feeds, Gate, Origin};
use super::table::rows;
use super::{concurrent, http_cache, send, Adapter, Answer, Request, HIT, LIMIT, MISS_STORED};
use lock_core::cache::Cache;
use lock_core::http::cache::{HttpCache, Plan, RequestParts};
use lock_core::memory::MemoryResultStore;
use lock_core::{LockClient, MemoryBackend};

/// The memory cache `name`, behind a response cache storing bodies up to 1 KiB.
async fn app<A: Adapter>(name: &str, origin: Origin) -> A::App {
    A::app(http_cache(Cache::memory(name).unwrap(), Some(1024)), origin).await
}

/// An origin of products answering `private, max-age=60` with a `Set-Cookie`, after 100 ms.
fn private_origin(calls: &Calls) -> Origin {
    Origin::products(
        calls,
        "private, max-age=60",
        Duration::from_millis(100),
        true,
    )
}

/// Each of `answers` is a miss with `detail`, and a response of its own: its `Set-Cookie`
/// and `body`.
#[track_caller]
fn assert_each_its_own(answers: &[Answer], detail: &str, body: &[u8]) {
    for answer in answers {
        assert_eq!(
            answer.headers.cache_status(),
            format!("lock-core; fwd=miss; fwd-status=200; detail={detail}")
        );
        assert_eq!(
            answer.headers.get("set-cookie"),
            "session=abc",
            "its own response"
        );
        assert_eq!(answer.body, body);
    }
}

/// Each row of the semantics table (22), sent twice: `Cache-Status`, status, body, how often
/// the origin ran, `Age` and `ttl`.
///
/// # Panics
/// When an answer is not the row's.
pub async fn cache_control_semantics_over_http<A: Adapter>() {
    let rows = rows();
    assert_eq!(rows.len(), 22);
    let origin = Origin::table(rows);
    let app = app::<A>("semantics", origin.clone()).await;
    for (n, row) in origin.rows().iter().enumerate() {
        let path = format!("/t/{n}");
        let answered = row.answered.unwrap_or(row.status);
        let mut seen = Vec::new();
        for expected in [row.first, row.second] {
            let answer = send::<A>(&app, Request::get(&path, row.request)).await;
            assert_eq!(answer.headers.cache_status(), expected, "{}", row.name);
            assert_eq!(answer.status, answered, "{}", row.name);
            if row.answered.is_none() {
                assert_eq!(answer.text(), format!("row {n}"), "{}", row.name);
            }
            seen.push(answer.headers);
        }
        assert_eq!(origin.row_calls(n), row.calls, "{}", row.name);
        let second = &seen[1];
        if let Some(age) = row.age {
            assert_eq!(second.get("age"), age, "{}", row.name);
        }
        if let Some((low, high)) = row.ttl {
            let ttl = second.ttl().unwrap();
            assert!((low..=high).contains(&ttl), "{}: ttl {ttl}", row.name);
        }
        let own_age = row.response.iter().any(|(name, _)| *name == "age");
        if row.calls > 0 && row.answered.is_none() && !own_age {
            assert!(!seen[0].contains("age"), "{}: computed, no Age", row.name);
        }
    }
}

/// 200 concurrent cold `GET`s of one key: the origin runs once; one answer is the stored
/// miss, 199 are collapsed onto it, all `200 product 7`.
///
/// # Panics
/// When they are not.
pub async fn two_hundred_cold_gets_call_the_handler_once<A: Adapter>() {
    let calls = Calls::default();
    let origin = Origin::products(&calls, "max-age=60", Duration::from_millis(200), true);
    let app = app::<A>("cold", origin).await;
    let answers = concurrent::<A>(&app, 200, "/products/7").await;
    assert_eq!(calls.count(), 1);
    let statuses: Vec<String> = answers.iter().map(|a| a.headers.cache_status()).collect();
    let stored = statuses.iter().filter(|s| *s == MISS_STORED).count();
    let collapsed = statuses
        .iter()
        .filter(|s| *s == "lock-core; fwd=miss; collapsed")
        .count();
    assert_eq!((stored, collapsed), (1, 199), "{statuses:?}");
    assert!(answers
        .iter()
        .all(|a| a.status == 200 && a.body == b"product 7"));
}

/// 20 concurrent requests for a `private` response: each runs the origin and gets its own
/// response (with its own `Set-Cookie`).
///
/// # Panics
/// When a response is handed to another request.
pub async fn responses_not_to_share_are_not_handed_to_waiters<A: Adapter>() {
    let calls = Calls::default();
    let origin = private_origin(&calls);
    let app = app::<A>("private", origin).await;
    let answers = concurrent::<A>(&app, 20, "/products/1").await;
    assert_eq!(calls.count(), 20, "each request ran the handler");
    assert_each_its_own(&answers, "private", b"product 1");
}

/// The request that computed a response gets its `Set-Cookie`; hits do not.
///
/// # Panics
/// When a hit carries it.
pub async fn set_cookie_reaches_the_computing_request_only<A: Adapter>() {
    let calls = Calls::default();
    let origin = Origin::products(&calls, "max-age=60", Duration::ZERO, true);
    let app = app::<A>("cookie", origin).await;
    let first = send::<A>(&app, Request::get("/products/2", &[])).await;
    assert_eq!(first.headers.get("set-cookie"), "session=abc");
    let hit = send::<A>(&app, Request::get("/products/2", &[])).await;
    assert_eq!(hit.headers.cache_status(), HIT);
    assert!(!hit.headers.contains("set-cookie"), "{:?}", hit.headers);
    assert_eq!(hit.body, b"product 2");
}

/// A cold `HEAD` is forwarded as a `GET` and stores the entry; `GET` and `HEAD` then hit it,
/// with its `Content-Length`.
///
/// # Panics
/// When they do not.
pub async fn head_is_served_from_the_get_entry<A: Adapter>() {
    let calls = Calls::default();
    let origin = Origin::products(&calls, "max-age=60", Duration::ZERO, true);
    let app = app::<A>("head", origin).await;
    let head = || Request::new("HEAD", "/products/3", &[]);
    // A cold HEAD is forwarded as a GET, so the entry holds the body (actix-web sends its
    // length and drops it on the wire).
    let answer = send::<A>(&app, head()).await;
    assert_eq!(
        (answer.status, answer.headers.cache_status()),
        (200, MISS_STORED.to_owned())
    );
    if A::HEAD_WITHOUT_BODY {
        assert_eq!(answer.body.len(), 0);
        assert_eq!(answer.headers.get("content-length"), "9");
    }
    assert_eq!(calls.methods(), ["GET"]);
    let answer = send::<A>(&app, Request::get("/products/3", &[])).await;
    assert_eq!(
        (answer.headers.cache_status(), answer.text()),
        (HIT.to_owned(), "product 3".to_owned())
    );
    let answer = send::<A>(&app, head()).await;
    assert_eq!(answer.headers.cache_status(), HIT);
    if A::HEAD_WITHOUT_BODY {
        assert_eq!(answer.body.len(), 0);
    }
    assert_eq!(answer.headers.get("content-length"), "9");
    assert_eq!(calls.count(), 1);
}

/// `POST` passes through the cache, uncounted and unstored.
///
/// # Panics
/// When it does not.
pub async fn other_methods_pass_through<A: Adapter>() {
    let calls = Calls::default();
    let origin = Origin::products(&calls, "max-age=60", Duration::ZERO, true);
    let app = app::<A>("post", origin).await;
    for _ in 0..2 {
        let answer = send::<A>(&app, Request::new("POST", "/products/4", &[])).await;
        assert_eq!((answer.status, answer.text()), (200, "posted".to_owned()));
        assert_eq!(answer.headers.cache_status(), "lock-core; fwd=method");
    }
    assert_eq!(calls.count(), 0);
}

/// Bodies over the 1 KiB limit are answered whole and not stored: a known length at once, an
/// unknown one as soon as the limit is crossed, before the body ends. The second request for
/// each passes through at once (`hit-for-pass`).
///
/// # Panics
/// When they are stored, cut, or held back.
pub async fn bodies_over_the_limit_reach_the_client_whole_and_are_not_stored<A: Adapter>() {
    let (calls, feeds) = (Calls::default(), Feeds::default());
    let app = app::<A>("large", Origin::large(&calls, &feeds)).await;
    let too_large = "lock-core; fwd=miss; fwd-status=200; detail=too-large";
    let passed = "lock-core; fwd=miss; fwd-status=200; detail=hit-for-pass";
    // Content-Length over the limit: passed at once, twice (nothing stored).
    for expected in [too_large, passed] {
        let answer = send::<A>(&app, Request::get("/length", &[])).await;
        assert_eq!((answer.status, answer.body.len()), (200, 3000));
        assert_eq!(answer.headers.cache_status(), expected);
    }
    assert_eq!(calls.count(), 2);
    // Unknown length: the answer starts once the limit is crossed, before the body ends, and
    // goes on with the rest.
    for expected in [too_large, passed] {
        let feed = feeds.push();
        for _ in 0..3 {
            feed.send(vec![b'y'; 500]).await.unwrap();
        }
        let response = timeout(LIMIT, A::call(&app, Request::get("/chunked", &[])))
            .await
            .expect("answered before the body ended");
        assert_eq!(response.headers.cache_status(), expected);
        for _ in 0..4 {
            feed.send(vec![b'z'; 500]).await.unwrap();
        }
        drop(feed);
        let body = timeout(LIMIT, response.body).await.unwrap();
        assert_eq!(body.len(), 3500);
        assert_eq!(&body[..1500], &[b'y'; 1500][..]);
        assert_eq!(&body[1500..], &[b'z'; 2000][..]);
    }
}

/// A failing application (`503` with `Retry-After: 7`) under 200 concurrent cold `GET`s is
/// called once: one request answers with its response, the 199 that waited replay it (status,
/// `Retry-After`, body); a request within the negative TTL (1 s) gets it without a call.
///
/// # Panics
/// When the application is called again, or an answer is not its response.
pub async fn a_failing_origin_is_called_once_and_its_answer_shared<A: Adapter>() {
    let calls = Calls::default();
    let origin = Origin::flaky(&calls, Duration::from_millis(200));
    origin.fail(true);
    let app = app::<A>("failing", origin).await;
    let answers = concurrent::<A>(&app, 200, "/products/5").await;
    let statuses: Vec<String> = answers.iter().map(|a| a.headers.cache_status()).collect();
    let count = |status: &str| statuses.iter().filter(|s| *s == status).count();
    let own = count("lock-core; fwd=miss; fwd-status=503; detail=status");
    let collapsed = count("lock-core; fwd=miss; fwd-status=503; collapsed");
    assert_eq!(
        calls.count(),
        1,
        "{own} answered its own, {collapsed} collapsed"
    );
    assert_eq!((own, collapsed), (1, 199), "{:?}", statuses.first());
    for answer in &answers {
        let seen = (
            answer.status,
            answer.headers.get("retry-after"),
            answer.text(),
        );
        assert_eq!(seen, (503, "7", "down".to_owned()));
    }
    let again = send::<A>(&app, Request::get("/products/5", &[])).await;
    assert_eq!(
        again.headers.cache_status(),
        "lock-core; hit; detail=negative"
    );
    let seen = (again.status, again.headers.get("retry-after"), again.text());
    assert_eq!(seen, (503, "7", "down".to_owned()));
    assert_eq!(calls.count(), 1, "remembered for the negative TTL");
}

/// A response that is not stored (`private`) marks its key pass-through: while a computation
/// holds the key's lease, 20 requests for it still go straight to the application, each
/// answered with its own response (`detail=hit-for-pass`), none waiting for the lease.
///
/// # Panics
/// When a request waits, or is handed another's response.
pub async fn an_uncacheable_answer_marks_the_key_pass_through<A: Adapter>() {
    let calls = Calls::default();
    let origin = private_origin(&calls);
    let backend = MemoryBackend::new();
    let cache = Cache::builder(MemoryResultStore::new(), backend.clone())
        .namespace("pass")
        .build()
        .unwrap();
    let app = A::app(http_cache(cache.clone(), Some(1024)), origin).await;
    let first = send::<A>(&app, Request::get("/products/6", &[])).await;
    assert_eq!(
        first.headers.cache_status(),
        "lock-core; fwd=miss; fwd-status=200; detail=private"
    );
    // A computation holds the key's lease (the first one's release runs on its own: wait for
    // it): requests for a pass-through key do not queue behind it.
    let http = HttpCache::builder(cache).build().unwrap();
    let Plan::Cache(call) = http.plan(&RequestParts::get("/products/6")) else {
        unreachable!("a GET is served through the cache");
    };
    let locks = LockClient::builder(backend)
        .namespace("cache.pass")
        .build()
        .unwrap();
    let held = locks.lock(call.key().as_str()).acquire_within(LIMIT).await;
    let _held = held.unwrap().expect("the key's lease");
    let answers = timeout(LIMIT, concurrent::<A>(&app, 20, "/products/6"))
        .await
        .unwrap();
    assert_eq!(calls.count(), 21, "each request ran the handler");
    assert_each_its_own(&answers, "hit-for-pass", b"product 6");
}

/// A cache that varies on `Accept-Language` says so in `Vary` on every answer to a `GET` or
/// `HEAD` (RFC 9110 §12.5.5), so caches further down keep the variants apart too: computed
/// and replayed, merged with the handler's own `Vary` (its members first, no name twice,
/// `*` left alone), and on a conditional `GET` the cache passes by (whose `304` must say
/// what its `200` would). Each language is an entry of its own. A `POST`'s answer is left
/// alone.
///
/// # Panics
/// When an answer's `Vary` is not that.
pub async fn vary_names_the_keyed_headers_on_every_answer<A: Adapter>() {
    let calls = Calls::default();
    let http = HttpCache::builder(Cache::memory("vary").unwrap())
        .vary("Accept-Language")
        .build()
        .unwrap();
    let app = A::app(http, Origin::varying(&calls)).await;
    let vary = |answer: &super::Answer| -> Vec<String> {
        let lines = answer.headers.0.iter().filter(|(name, _)| name == "vary");
        lines.map(|(_, value)| value.clone()).collect()
    };
    let (de, fr) = (&[("accept-language", "de")], &[("accept-language", "fr")]);

    // Computed, replayed (the HEAD too), and another language computed anew.
    for (request, cache_status, calls_then) in [
        (Request::get("/plain/1", de), MISS_STORED, 1),
        (Request::get("/plain/1", de), HIT, 1),
        (Request::new("HEAD", "/plain/1", de), HIT, 1),
        (Request::get("/plain/1", fr), MISS_STORED, 2),
        (Request::get("/plain/1", fr), HIT, 2),
    ] {
        let what = format!("{} {:?}", request.method, request.headers);
        let answer = send::<A>(&app, request).await;
        assert_eq!(answer.status, 200, "{what}");
        assert_eq!(answer.headers.cache_status(), cache_status, "{what}");
        assert_eq!(vary(&answer), ["accept-language"], "{what}");
        assert_eq!(calls.count(), calls_then, "{what}");
    }

    // The handler's own `Vary`, twice each (computed, then replayed or passed through).
    for (path, expected) in [
        ("/encoding/1", "Accept-Encoding, accept-language"),
        ("/language/1", "Accept-Language"),
        ("/star/1", "*"),
    ] {
        for _ in 0..2 {
            let answer = send::<A>(&app, Request::get(path, de)).await;
            assert_eq!(answer.status, 200, "{path}");
            assert_eq!(vary(&answer), [expected], "{path}");
        }
    }

    // Passed by: a conditional GET (the application may answer 304), and a POST.
    let conditional = [("accept-language", "de"), ("if-none-match", "\"v1\"")];
    let answer = send::<A>(&app, Request::get("/plain/1", &conditional)).await;
    assert_eq!(
        answer.headers.cache_status(),
        "lock-core; fwd=bypass; detail=conditional"
    );
    assert_eq!(vary(&answer), ["accept-language"]);
    let answer = send::<A>(&app, Request::new("POST", "/plain/1", de)).await;
    assert_eq!(answer.headers.cache_status(), "lock-core; fwd=method");
    assert!(vary(&answer).is_empty(), "{:?}", vary(&answer));
}

/// A stale response (`max-age=1, stale-while-revalidate=30`) is served at once to the request
/// that starts its refresh, as to every other: the refresh's origin call, held at a gate the
/// scenario opens only once that answer arrived, runs in the background, once, and its
/// response is what the requests after it get.
///
/// # Panics
/// When the request that starts the refresh waits for the origin (not answered within 5 s),
/// the origin is called more than once for the refresh, or the refreshed response never lands.
pub async fn the_request_that_starts_a_refresh_is_served_stale<A: Adapter>() {
    let calls = Calls::default();
    let gate = Gate::closed();
    let app = app::<A>("swr", Origin::gated(&calls, &gate)).await;
    let get = || Request::get("/products/6", &[]);
    gate.open(1);
    let filled = send::<A>(&app, get()).await;
    assert_eq!(filled.headers.cache_status(), MISS_STORED);
    assert_eq!(filled.text(), "product 6 v1");
    // Stale once `max-age=1` has passed by the store's clock: nothing to wait on but time.
    tokio::time::sleep(Duration::from_millis(1100)).await;

    // The gate is shut: the refresh's call cannot answer before this request is.
    let stale = timeout(Duration::from_secs(5), send::<A>(&app, get()))
        .await
        .expect("the request that starts the refresh is answered stale, not after the origin");
    assert_eq!(
        stale.headers.cache_status(),
        "lock-core; hit; detail=stale-while-revalidate"
    );
    assert_eq!(stale.text(), "product 6 v1");
    assert!(stale.headers.ttl().unwrap() < 0);

    gate.open(1);
    let refreshed = timeout(LIMIT, async {
        loop {
            let answer = send::<A>(&app, get()).await;
            if answer.text() != "product 6 v1" {
                return answer;
            }
            // No signal says the refresh was stored: ask again shortly.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the refreshed response lands");
    assert_eq!(refreshed.text(), "product 6 v2");
    assert_eq!(refreshed.headers.cache_status(), HIT);
    assert!(refreshed.headers.ttl().unwrap() >= 0);
    assert_eq!(calls.count(), 2, "one call for the refresh");
}
