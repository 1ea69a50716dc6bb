//! The middleware's answers, one request at a time: the fence in the handler, busy (409 or
//! 429) and unavailable (503) problems, a missing or malformed key (400), the requests it
//! does not select, a zero wait, refused settings.

use std::time::Duration;

use super::assertions::{assert_locked, assert_problem, assert_ran};
use super::{app, send, Driver, Handler, Request, Unreachable};
use lock_core::http::keyed::{BusyStatus, KeySource, KeyedLockOptions};
use lock_core::{LeaseMode, LockClient, MemoryBackend, WaitPolicy};

/// The key source of most scenarios: `/buy/{sku}`.
fn sku() -> KeySource {
    KeySource::path_param("/buy/{sku}", "sku")
}

/// A `POST` to `/buy/{sku}`.
fn buy(sku: &str) -> Request {
    Request::post(&format!("/buy/{sku}"))
}

/// The handler finds its lock in the request: the key with the options' prefix, and a
/// fencing token that grows with every grant.
///
/// # Panics
/// When it does not.
pub async fn the_handler_sees_increasing_fencing_tokens<D: Driver>() {
    let handler = Handler::new();
    let options = KeyedLockOptions::new().key_prefix("sku:");
    let locks = LockClient::new(MemoryBackend::new());
    let app = app::<D>(locks, sku(), options, handler.clone()).await;
    assert_ran(&send::<D>(&app, buy("a")).await, "sku:a 1");
    assert_ran(&send::<D>(&app, buy("a")).await, "sku:a 2");
    assert_eq!(handler.runs(), 2);
}

/// A key held elsewhere: the request is answered a `busy` problem naming the key, 409 or
/// (with [`BusyStatus::TooManyRequests`]) 429, with the options' `Retry-After`, and the
/// handler does not run; another key is not held up.
///
/// # Panics
/// When it does not.
pub async fn busy_answers_409_or_429_with_retry_after_and_a_problem<D: Driver>() {
    let locks = LockClient::new(MemoryBackend::new());
    let held = locks.lock("sku:a").await.unwrap();
    let handler = Handler::new();
    let options = KeyedLockOptions::new()
        .key_prefix("sku:")
        .retry_after(Duration::from_secs(3));
    let conflict = app::<D>(locks.clone(), sku(), options.clone(), handler.clone()).await;
    let answer = send::<D>(&conflict, buy("a")).await;
    assert_problem(&answer, 409, "urn:distributed-lock:busy");
    assert_eq!(answer.header("retry-after"), Some("3"));
    let body = answer.text();
    assert!(
        body.starts_with(
            r#"{"type":"urn:distributed-lock:busy","title":"Resource busy","status":409,"#
        ),
        "{body}"
    );
    assert!(body.ends_with(r#","key":"sku:a"}"#), "{body}");

    let too_many = options.busy_status(BusyStatus::TooManyRequests);
    let too_many = app::<D>(locks.clone(), sku(), too_many, handler.clone()).await;
    let answer = send::<D>(&too_many, buy("a")).await;
    assert_problem(&answer, 429, "urn:distributed-lock:busy");
    assert_eq!(answer.header("retry-after"), Some("3"));
    assert!(
        answer.text().contains(r#""status":429"#),
        "{}",
        answer.text()
    );
    assert_eq!(handler.runs(), 0, "a busy key runs nothing");

    assert_locked(&send::<D>(&conflict, buy("b")).await, "sku:b");
    assert_eq!(handler.runs(), 1);
    held.release().await.unwrap();
}

/// With the key held elsewhere, requests the options do not select (another method than
/// `methods`, a path outside `path_prefix`, on whole segments) and paths the key source's
/// template does not match run at once, without a lock; the selected request is busy.
///
/// # Panics
/// When a request not selected is held up or given a lock.
pub async fn requests_the_middleware_does_not_select_pass_through<D: Driver>() {
    let locks = LockClient::new(MemoryBackend::new());
    let held = locks.lock("a").await.unwrap();
    let handler = Handler::new();
    let post_only = KeyedLockOptions::new().methods(["POST"]);
    let post_only = app::<D>(locks.clone(), sku(), post_only, handler.clone()).await;
    assert_ran(
        &send::<D>(&post_only, Request::new("GET", "/buy/a")).await,
        "unlocked",
    );
    assert_eq!(send::<D>(&post_only, buy("a")).await.status, 409);

    let under_buy = KeyedLockOptions::new().path_prefix("/buy");
    let index = KeySource::path_index(1);
    let under_buy = app::<D>(locks.clone(), index, under_buy, handler.clone()).await;
    for outside in ["/sell/a", "/buyer/a"] {
        let answer = send::<D>(&under_buy, Request::post(outside)).await;
        assert_ran(&answer, "unlocked");
    }
    assert_eq!(send::<D>(&under_buy, buy("a")).await.status, 409);

    let every = KeyedLockOptions::new();
    let every = app::<D>(locks.clone(), sku(), every, handler.clone()).await;
    assert_ran(
        &send::<D>(&every, Request::post("/sell/a")).await,
        "unlocked",
    );
    assert_eq!(send::<D>(&every, buy("a")).await.status, 409);

    assert_eq!(
        handler.locks(),
        [None, None, None, None],
        "passed untouched"
    );
    held.release().await.unwrap();
}

/// A header key source without its header, and a path key that is not valid percent-encoded
/// UTF-8 (`%zz`), are answered a 400 problem (naming the header) and run nothing; the header
/// sent, the request runs under its key.
///
/// # Panics
/// When it does not.
pub async fn a_missing_or_malformed_key_answers_400<D: Driver>() {
    let locks = LockClient::new(MemoryBackend::new());
    let handler = Handler::new();
    let header = KeySource::header("Idempotency-Key");
    let by_header = app::<D>(
        locks.clone(),
        header,
        KeyedLockOptions::new(),
        handler.clone(),
    )
    .await;
    let answer = send::<D>(&by_header, Request::post("/pay")).await;
    assert_problem(&answer, 400, "urn:distributed-lock:bad-key");
    assert!(
        answer.text().contains("header `Idempotency-Key`"),
        "{}",
        answer.text()
    );
    let by_path = app::<D>(locks, sku(), KeyedLockOptions::new(), handler.clone()).await;
    let answer = send::<D>(&by_path, buy("%zz")).await;
    assert_problem(&answer, 400, "urn:distributed-lock:bad-key");
    assert_eq!(handler.runs(), 0, "nothing ran");

    let keyed = send::<D>(&by_header, Request::post("/pay").key("k1")).await;
    assert_locked(&keyed, "k1");
    assert_eq!(handler.runs(), 1);
}

/// A backend that cannot be reached: a 503 `unavailable` problem with `Retry-After: 1` whose
/// body is generic (no "refused"), and the handler does not run; with `expose_errors` the
/// body carries the cause.
///
/// # Panics
/// When it does not.
pub async fn an_unreachable_backend_answers_503_and_never_runs_the_handler<D: Driver>() {
    let handler = Handler::new();
    let locks = LockClient::new(Unreachable);
    let generic = app::<D>(
        locks.clone(),
        sku(),
        KeyedLockOptions::new(),
        handler.clone(),
    )
    .await;
    let answer = send::<D>(&generic, buy("a")).await;
    assert_problem(&answer, 503, "urn:distributed-lock:unavailable");
    assert_eq!(answer.header("retry-after"), Some("1"));
    assert!(
        !answer.text().contains("refused"),
        "5xx bodies are generic: {}",
        answer.text()
    );

    let exposed = KeyedLockOptions::new().expose_errors(true);
    let exposed = app::<D>(locks, sku(), exposed, handler.clone()).await;
    let answer = send::<D>(&exposed, buy("a")).await;
    assert_problem(&answer, 503, "urn:distributed-lock:unavailable");
    assert!(
        answer.text().contains("connection refused"),
        "{}",
        answer.text()
    );
    assert_eq!(handler.runs(), 0, "nothing ran");
}

/// A zero wait (`Within(Duration::ZERO)`) is accepted and is a try, as
/// `acquire_within(Duration::ZERO)` is: a free key runs, a held one is busy at once.
///
/// # Panics
/// When it is not.
pub async fn a_zero_wait_is_a_try<D: Driver>() {
    let locks = LockClient::new(MemoryBackend::new());
    let handler = Handler::new();
    let zero = KeyedLockOptions::new().wait(WaitPolicy::Within(Duration::ZERO));
    let app = app::<D>(locks.clone(), sku(), zero, handler.clone()).await;
    assert_locked(&send::<D>(&app, buy("a")).await, "a");
    let held = locks.lock("a").await.unwrap();
    let answer = send::<D>(&app, buy("a")).await;
    assert_problem(&answer, 409, "urn:distributed-lock:busy");
    assert_eq!(handler.runs(), 1);
    held.release().await.unwrap();
}

/// The builder refuses an empty method, one that is not an HTTP token, a key prefix with a
/// NUL, a lease too short to renew and a zero `Retry-After` (each adapter checks that its
/// builder's own methods reach the middleware).
///
/// # Panics
/// When a bad setting is accepted.
pub async fn the_builder_refuses_bad_settings<D: Driver>() {
    let locks = LockClient::new(MemoryBackend::new());
    let refused = [
        ("an empty method", KeyedLockOptions::new().methods([""])),
        (
            "a method with a space",
            KeyedLockOptions::new().methods(["PO ST"]),
        ),
        (
            "a NUL in the prefix",
            KeyedLockOptions::new().key_prefix("sku\0"),
        ),
        (
            "a 1 ms lease",
            KeyedLockOptions::new().lease(LeaseMode::fixed(Duration::from_millis(1))),
        ),
        (
            "a zero Retry-After",
            KeyedLockOptions::new().retry_after(Duration::ZERO),
        ),
    ];
    for (what, options) in refused {
        assert!(
            D::middleware(locks.clone(), sku(), options).is_err(),
            "{what} is refused"
        );
    }
}
