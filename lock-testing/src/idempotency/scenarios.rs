//! The scenarios: every adapter runs them all, the ones taking a [`Store`] on memory and on
//! Redis.

use std::time::Duration;

use super::backing::Backing;
use super::{send, Answer, Driver, Handler, Request, Store, GUEST};
use lock_core::http::idempotency::IdempotencyRules;
use lock_core::http::PROBLEM_JSON;
use lock_core::idempotency::InFlight;

/// The rules of most scenarios: the defaults, with a `Retry-After` of 3 s (to tell it from
/// the default).
fn rules() -> IdempotencyRules {
    IdempotencyRules::new().retry_after(Duration::from_secs(3))
}

/// Asserts an `application/problem+json` answer with `status` and the problem type `urn`.
#[track_caller]
fn assert_problem(answer: &Answer, status: u16, urn: &str, what: &str) {
    assert_eq!(answer.status, status, "{what}: {}", answer.text());
    assert_eq!(answer.header("content-type"), Some(PROBLEM_JSON), "{what}");
    assert!(
        answer.text().contains(&format!(r#""type":"{urn}""#)),
        "{what}: {}",
        answer.text()
    );
    assert!(!answer.replayed(), "{what}");
}

/// Asserts the handler's own first answer (not a replay) to a request with `body`.
#[track_caller]
fn assert_ran(answer: &Answer, run: usize, method: &str, path: &str, body: &str) {
    assert_eq!(answer.status, 201, "{}", answer.text());
    assert_eq!(answer.text(), format!("run {run}: {method} {path} {body}"));
    assert_eq!(answer.header("x-run"), Some(run.to_string().as_str()));
    assert!(!answer.replayed(), "a first answer is not a replay");
}

/// Asserts `replay` is `first` again, marked `Idempotent-Replayed: true`.
#[track_caller]
fn assert_replay(replay: &Answer, first: &Answer) {
    assert_eq!(
        (replay.status, replay.text()),
        (first.status, first.text()),
        "the same status and body"
    );
    assert!(replay.replayed(), "{:?}", replay.headers);
    for (name, value) in &first.headers {
        if !matches!(name.as_str(), "content-length" | "date") {
            assert_eq!(replay.header(name), Some(value.as_str()), "{name} replayed");
        }
    }
}

/// 400 `bad-key` problems for a missing key (required by default), an empty one, a
/// non-ASCII one, one of 256 characters, a malformed quoted string and a repeated header (two
/// `Idempotency-Key` lines, even of one value), before anything runs;
/// a key of 255 characters is accepted, and so is the draft's structured-field string form
/// (`"q-1"`), the same key as plain `q-1`.
///
/// # Panics
/// When an answer is not that.
pub async fn keys_are_checked_before_anything_runs<D: Driver>() {
    let backing = Backing::memory(D::NAME, "keys");
    let handler = Handler::new();
    let idempotency = backing.instance().await;
    let app = D::app(idempotency.clone(), rules(), handler.clone()).await;
    let refused = [
        ("missing", Request::post("/pay")),
        ("empty", Request::post("/pay").key("")),
        ("non-ASCII", Request::post("/pay").key("ключ")),
        ("256 characters", Request::post("/pay").key("k".repeat(256))),
        ("unterminated quoted", Request::post("/pay").key("\"abc")),
        ("bad escape", Request::post("/pay").key(r#""a\nb""#)),
        ("repeated", Request::post("/pay").key("k-1").key("k-2")),
        (
            "repeated, same",
            Request::post("/pay").key("k-1").key("k-1"),
        ),
    ];
    for (what, request) in refused {
        let answer = send::<D>(&app, request).await;
        assert_problem(&answer, 400, "urn:distributed-lock:bad-key", what);
    }
    assert_eq!(handler.runs(), 0, "nothing ran");
    assert_eq!(idempotency.stats().rejected, 8, "every refusal is counted");
    let longest = Request::post("/pay").key("k".repeat(255));
    assert_ran(&send::<D>(&app, longest).await, 1, "POST", "/pay", "");
    let quoted = send::<D>(&app, Request::post("/pay").key("\"q-1\"").body("a")).await;
    assert_ran(&quoted, 2, "POST", "/pay", "a");
    let plain = send::<D>(&app, Request::post("/pay").key("q-1").body("a")).await;
    assert_replay(&plain, &quoted);
    assert_eq!(handler.runs(), 2);
}

/// Methods the layer does not handle (`GET`, `PUT`) run every time, key or not, their body
/// reaching the handler untouched and their answer not marked; with the key optional, a
/// `POST` without one runs every time, and one with a key is still idempotent.
///
/// # Panics
/// When a request is held back, answered by the layer, or given a claim.
pub async fn requests_the_layer_does_not_handle_pass_through<D: Driver>() {
    let backing = Backing::memory(D::NAME, "pass");
    let handler = Handler::new();
    let app = D::app(backing.instance().await, rules(), handler.clone()).await;
    let get = || Request::new("GET", "/pay").key("g").body("g");
    assert_ran(&send::<D>(&app, get()).await, 1, "GET", "/pay", "g");
    assert_ran(&send::<D>(&app, get()).await, 2, "GET", "/pay", "g");
    let put = Request::new("PUT", "/pay").body("p");
    assert_ran(&send::<D>(&app, put).await, 3, "PUT", "/pay", "p");
    assert_eq!(handler.claims(), [None, None, None], "passed untouched");

    let optional = D::app(
        backing.instance().await,
        rules().optional(),
        handler.clone(),
    )
    .await;
    let post = || Request::post("/pay").body("o");
    assert_ran(&send::<D>(&optional, post()).await, 4, "POST", "/pay", "o");
    assert_ran(&send::<D>(&optional, post()).await, 5, "POST", "/pay", "o");
    let first = send::<D>(&optional, post().key("o-1")).await;
    assert_ran(&first, 6, "POST", "/pay", "o");
    assert_replay(&send::<D>(&optional, post().key("o-1")).await, &first);
    assert_eq!(handler.runs(), 6);
}

/// The handler finds its claim in the request: the key as sent, the scope, a fencing token.
///
/// # Panics
/// When it does not.
pub async fn the_handler_sees_its_claim<D: Driver>() {
    let backing = Backing::memory(D::NAME, "claim");
    let handler = Handler::new();
    let app = D::app(backing.instance().await, rules(), handler.clone()).await;
    let request = Request::post("/pay").key("\"claim-1\"").user("alice");
    assert_eq!(send::<D>(&app, request).await.status, 201);
    let request = Request::new("PATCH", "/pay").key("claim-2");
    assert_eq!(send::<D>(&app, request).await.status, 201);
    let claims = handler.claims();
    let [Some(alice), Some(guest)] = claims.as_slice() else {
        panic!("no claim in the handler: {claims:?}");
    };
    assert_eq!(
        (alice.scope.as_str(), alice.key.as_str()),
        ("alice", "claim-1")
    );
    assert_eq!(
        (guest.scope.as_str(), guest.key.as_str()),
        (GUEST, "claim-2")
    );
    assert!(alice.fencing_token.get() > 0 && guest.fencing_token.get() > 0);
}

/// The first `POST` runs (201); its duplicates, on this instance and another, get the same
/// status, headers and body with `Idempotent-Replayed: true`; the handler ran once.
///
/// # Panics
/// When they do not, or when `store` is required but not configured.
pub async fn a_duplicate_gets_the_first_response_replayed<D: Driver>(store: Store) {
    let Some(backing) = Backing::new(store, D::NAME, "replay").await else {
        return;
    };
    let handler = Handler::new();
    let one = D::app(backing.instance().await, rules(), handler.clone()).await;
    let two = D::app(backing.instance().await, rules(), handler.clone()).await;
    let pay = || Request::post("/pay").key("r-1").user("alice").body("100");
    let first = send::<D>(&one, pay()).await;
    assert_ran(&first, 1, "POST", "/pay", "100");
    assert_eq!(first.header("content-type"), Some("text/plain"));
    for app in [&two, &one, &two] {
        assert_replay(&send::<D>(app, pay()).await, &first);
    }
    assert_eq!(handler.runs(), 1, "the handler ran once");
}

/// A duplicate sent while the first request runs gets a 409 `in-flight` problem with
/// `Retry-After: 3`; once the first completes, duplicates get its response.
///
/// # Panics
/// When they do not, or when `store` is required but not configured.
pub async fn a_duplicate_in_flight_gets_409_with_retry_after<D: Driver>(store: Store) {
    let Some(backing) = Backing::new(store, D::NAME, "inflight").await else {
        return;
    };
    let handler = Handler::new();
    let one = D::app(backing.instance().await, rules(), handler.clone()).await;
    let two = D::app(backing.instance().await, rules(), handler.clone()).await;
    let pay = || Request::post("/block").key("f-1").body("100");
    let duplicate = async {
        handler.entered(1).await;
        let answers = [send::<D>(&two, pay()).await, send::<D>(&one, pay()).await];
        handler.open(1);
        answers
    };
    let (first, duplicates) = tokio::join!(send::<D>(&one, pay()), duplicate);
    for answer in &duplicates {
        assert_problem(
            answer,
            409,
            "urn:distributed-lock:idempotency:in-flight",
            "in flight",
        );
        assert_eq!(answer.header("retry-after"), Some("3"));
    }
    assert_ran(&first, 1, "POST", "/block", "100");
    assert_replay(&send::<D>(&two, pay()).await, &first);
    assert_eq!(handler.runs(), 1);
}

/// With [`InFlight::Wait`], a duplicate sent while the first request runs waits for it and
/// gets its response replayed; the handler ran once.
///
/// # Panics
/// When it does not, or when `store` is required but not configured.
pub async fn a_waiting_duplicate_gets_the_replay<D: Driver>(store: Store) {
    let Some(backing) = Backing::new(store, D::NAME, "wait").await else {
        return;
    };
    let handler = Handler::new();
    let rules = rules().in_flight(InFlight::Wait(Duration::from_secs(15)));
    let one = D::app(backing.instance().await, rules.clone(), handler.clone()).await;
    let two = D::app(backing.instance().await, rules, handler.clone()).await;
    let pay = || Request::post("/block").key("w-1").user("bob").body("7");
    let duplicate = async {
        handler.entered(1).await;
        let open = async {
            backing.until_waiting("bob", "w-1").await;
            handler.open(1);
        };
        tokio::join!(send::<D>(&two, pay()), open).0
    };
    let (first, duplicate) = tokio::join!(send::<D>(&one, pay()), duplicate);
    assert_ran(&first, 1, "POST", "/block", "7");
    assert_replay(&duplicate, &first);
    assert_eq!(handler.runs(), 1);
}

/// The key used again with another body, another value of a fingerprinted header
/// (`content-type`) or another path gets a 422 `key-reused` problem; the same request still
/// gets its replay.
///
/// # Panics
/// When it does not, or when `store` is required but not configured.
pub async fn the_same_key_with_another_request_gets_422<D: Driver>(store: Store) {
    let Some(backing) = Backing::new(store, D::NAME, "reuse").await else {
        return;
    };
    let handler = Handler::new();
    let rules = rules().fingerprint_header("content-type");
    let app = D::app(backing.instance().await, rules, handler.clone()).await;
    let pay = |path: &str, content_type: &str, body: &str| {
        Request::post(path)
            .key("m-1")
            .header("content-type", content_type)
            .body(body)
    };
    let first = send::<D>(&app, pay("/pay", "application/json", "100")).await;
    assert_ran(&first, 1, "POST", "/pay", "100");
    let reused = [
        ("another body", pay("/pay", "application/json", "999")),
        ("another content-type", pay("/pay", "text/plain", "100")),
        ("another path", pay("/refund", "application/json", "100")),
    ];
    for (what, request) in reused {
        let answer = send::<D>(&app, request).await;
        assert_problem(
            &answer,
            422,
            "urn:distributed-lock:idempotency:key-reused",
            what,
        );
    }
    let again = send::<D>(&app, pay("/pay", "application/json", "100")).await;
    assert_replay(&again, &first);
    assert_eq!(handler.runs(), 1);
}

/// One key and body sent by alice and bob: two records, two runs, two different responses;
/// nobody gets another's response.
///
/// # Panics
/// When a response crosses principals, or when `store` is required but not configured.
pub async fn keys_are_scoped_per_user<D: Driver>(store: Store) {
    let Some(backing) = Backing::new(store, D::NAME, "scope").await else {
        return;
    };
    let handler = Handler::new();
    let app = D::app(backing.instance().await, rules(), handler.clone()).await;
    let pay = |user: &str| Request::post("/pay").key("s-1").body("5").user(user);
    let alice = send::<D>(&app, pay("alice")).await;
    assert_ran(&alice, 1, "POST", "/pay", "5");
    let bob = send::<D>(&app, pay("bob")).await;
    assert_ran(&bob, 2, "POST", "/pay", "5");
    assert_ne!(alice.body, bob.body, "bob got alice's response");
    assert_eq!(bob.header("idempotent-replayed"), None);
    assert_replay(&send::<D>(&app, pay("bob")).await, &bob);
    assert_replay(&send::<D>(&app, pay("alice")).await, &alice);
    assert_eq!(handler.runs(), 2);
}

/// A request with a key but no principal (the scope function answers `None`: no user, or
/// the authentication layer inside the idempotency one) is refused with 401 before anything
/// runs, and is no record: it never shares a scope with other such requests.
///
/// # Panics
/// When it runs, is replayed, or is answered otherwise.
pub async fn a_request_without_a_principal_is_refused_with_401<D: Driver>() {
    let backing = Backing::memory(D::NAME, "unscoped");
    let handler = Handler::new();
    let app = D::app(backing.instance().await, rules(), handler.clone()).await;
    let pay = || Request::post("/pay").key("u-1").body("5");
    for _ in 0..2 {
        let refused = send::<D>(&app, pay().unauthenticated()).await;
        assert_eq!(refused.status, 401, "{refused:?}");
        assert_eq!(
            refused.header("content-type"),
            Some("application/problem+json")
        );
        let body = String::from_utf8_lossy(&refused.body);
        assert!(body.contains("no principal"), "{body}");
        assert_eq!(handler.runs(), 0);
    }
    // Not a record: the key is free for its principal's request.
    assert_ran(
        &send::<D>(&app, pay().user("carol")).await,
        1,
        "POST",
        "/pay",
        "5",
    );
    // Requests without a key are not the middleware's to refuse.
    let plain = send::<D>(&app, Request::new("GET", "/pay").unauthenticated()).await;
    assert_ran(&plain, 2, "GET", "/pay", "");
}

/// Each status sent twice under its own key: final answers (200, 202, 400, 404, 410, 422)
/// are kept and replayed; those asking for a retry (408, 409, 425, 429) and 5xx are not, and
/// the retry runs the handler again.
///
/// # Panics
/// When one is kept or lost wrongly, or when `store` is required but not configured.
pub async fn only_final_answers_are_kept_and_replayed<D: Driver>(store: Store) {
    let Some(backing) = Backing::new(store, D::NAME, "status").await else {
        return;
    };
    let handler = Handler::new();
    let app = D::app(backing.instance().await, rules(), handler.clone()).await;
    let mut runs = 0;
    for (status, kept) in [
        (200, true),
        (202, true),
        (400, true),
        (404, true),
        (410, true),
        (422, true),
        (408, false),
        (409, false),
        (425, false),
        (429, false),
        (500, false),
        (502, false),
        (503, false),
    ] {
        let request = || Request::post(&format!("/status/{status}")).key(format!("c-{status}"));
        let first = send::<D>(&app, request()).await;
        runs += 1;
        assert_eq!(first.status, status);
        assert_eq!(first.text(), format!("status {status}, run {runs}"));
        assert!(!first.replayed());
        let second = send::<D>(&app, request()).await;
        if kept {
            assert_replay(&second, &first);
        } else {
            runs += 1;
            assert_eq!(
                (second.status, second.text()),
                (status, format!("status {status}, run {runs}")),
                "{status} is not kept: the retry runs"
            );
            assert!(!second.replayed());
        }
        assert_eq!(handler.runs(), runs, "{status}");
    }
}

/// With a 1 KiB limit, a request body of 1025 bytes gets a 413 `too-large` problem and
/// nothing runs (nor is the key used up); 1024 bytes run.
///
/// # Panics
/// When it does not.
pub async fn a_request_body_over_the_limit_is_refused_with_413<D: Driver>() {
    let backing = Backing::memory(D::NAME, "large-req");
    let handler = Handler::new();
    let rules = rules().max_body_bytes(1024);
    let app = D::app(backing.instance().await, rules, handler.clone()).await;
    let over = Request::post("/status/201").key("b-1").body([b'a'; 1025]);
    let answer = send::<D>(&app, over).await;
    assert_problem(&answer, 413, "urn:distributed-lock:too-large", "1025 bytes");
    assert_eq!(handler.runs(), 0, "nothing ran");
    let at = Request::post("/status/201").key("b-1").body([b'a'; 1024]);
    let answer = send::<D>(&app, at).await;
    assert_eq!(
        (answer.status, answer.text()),
        (201, "status 201, run 1".to_owned())
    );
    assert_eq!(handler.runs(), 1);
}

/// With a 1 KiB limit, a handler answering 2000 bytes is answered a 500
/// `response-too-large` problem, kept: its duplicate gets the same 500 replayed and the
/// handler ran once. 1024 bytes are kept as they are.
///
/// # Panics
/// When it does not.
pub async fn a_response_over_the_limit_is_kept_as_a_500<D: Driver>() {
    let backing = Backing::memory(D::NAME, "large-res");
    let handler = Handler::new();
    let rules = rules().max_body_bytes(1024);
    let app = D::app(backing.instance().await, rules, handler.clone()).await;
    let large = || Request::post("/large/2000").key("l-1");
    let first = send::<D>(&app, large()).await;
    let urn = "urn:distributed-lock:idempotency:response-too-large";
    assert_problem(&first, 500, urn, "2000 bytes");
    let duplicate = send::<D>(&app, large()).await;
    assert_replay(&duplicate, &first);
    assert_eq!(handler.runs(), 1, "the handler ran once");
    let fits = || Request::post("/large/1024").key("l-2");
    let first = send::<D>(&app, fits()).await;
    assert_eq!((first.status, first.body.len()), (201, 1024));
    assert_replay(&send::<D>(&app, fits()).await, &first);
    assert_eq!(handler.runs(), 2);
}

/// The claim's lock deleted under a running handler (as an operator's `DEL`, or an expiry
/// would): the handler is cancelled and the request answered a 503 `unavailable` problem
/// with `Retry-After`; the key is given back, and the retry runs.
///
/// # Panics
/// When it does not.
pub async fn a_lost_claim_cancels_the_handler_with_503<D: Driver>() {
    let backing = Backing::memory(D::NAME, "lost");
    let handler = Handler::new();
    let app = D::app(backing.instance().await, rules(), handler.clone()).await;
    let pay = || Request::post("/block").key("x-1").user("carol").body("9");
    let cut = async {
        handler.entered(1).await;
        assert!(backing.delete_claim("carol", "x-1"), "the claim was held");
    };
    let (lost, ()) = tokio::join!(send::<D>(&app, pay()), cut);
    assert_problem(&lost, 503, "urn:distributed-lock:unavailable", "lost");
    assert_eq!(lost.header("retry-after"), Some("3"));
    assert_eq!(
        (handler.runs(), handler.cancelled()),
        (1, 1),
        "the handler was cancelled"
    );
    handler.open(1);
    let retry = send::<D>(&app, pay()).await;
    assert_ran(&retry, 2, "POST", "/block", "9");
    assert_replay(&send::<D>(&app, pay()).await, &retry);
}
