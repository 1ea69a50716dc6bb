//! The middleware's exclusion, counted by the handler: requests of one key run one at a time
//! (the others queued for the lock), requests of different keys together, a waiting request
//! runs once the key is released, and a lost lease cancels the handler or is left to it.

use super::assertions::{assert_locked, assert_problem, assert_ran};
use super::{app, send, Answer, Driver, Handler, Request, LIMIT};
use lock_core::http::keyed::{KeySource, KeyedLockOptions, OnLost};
use lock_core::{LockClient, MemoryBackend, WaitPolicy};

/// Options that wait for a busy key as long as a scenario may take.
fn waiting() -> KeyedLockOptions {
    KeyedLockOptions::new().wait(WaitPolicy::Within(LIMIT))
}

/// Waits (bounded) until exactly `n` requests are queued for `key`: the backend offers
/// nothing to subscribe to for that.
///
/// # Panics
/// When they are not within [`LIMIT`].
async fn until_waiting(backend: &MemoryBackend, key: &str, n: usize) {
    let queued = async {
        while backend.waiter_count(key) != n {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(LIMIT, queued)
        .await
        .unwrap_or_else(|_| panic!("{n} requests queued for {key} in time"));
}

/// Four requests of one key sent together, each held inside the handler until the test lets
/// it go: at every turn one is inside and the rest are queued for the lock; all four run, one
/// after the other, each under a fence of its own.
///
/// # Panics
/// When two were ever inside the handler at once, or a request was lost.
pub async fn one_key_runs_one_request_at_a_time<D: Driver>() {
    const REQUESTS: usize = 4;
    let backend = MemoryBackend::new();
    let handler = Handler::new();
    let locks = LockClient::new(backend.clone());
    let app = app::<D>(locks, KeySource::path_index(1), waiting(), handler.clone()).await;
    let hold = || send::<D>(&app, Request::post("/hold/a"));
    let turns = async {
        for turn in 1..=REQUESTS {
            handler.entered(turn).await;
            until_waiting(&backend, "a", REQUESTS - turn).await;
            assert_eq!(
                handler.inside(),
                1,
                "turn {turn}: one inside, the rest queued"
            );
            handler.open(1);
        }
    };
    let (a, b, c, d, ()) = tokio::join!(hold(), hold(), hold(), hold(), turns);
    let mut bodies: Vec<String> = [a, b, c, d]
        .iter()
        .map(|answer| {
            assert_eq!(answer.status, 200, "{}", answer.text());
            answer.text()
        })
        .collect();
    bodies.sort();
    assert_eq!(bodies, ["a 1", "a 2", "a 3", "a 4"], "a fence each");
    assert_eq!(
        (handler.runs(), handler.most_inside()),
        (REQUESTS, 1),
        "every request ran, never two at once"
    );
}

/// Three requests of three keys sent together are all inside the handler at once.
///
/// # Panics
/// When one waits for another.
pub async fn different_keys_run_at_the_same_time<D: Driver>() {
    let handler = Handler::new();
    let locks = LockClient::new(MemoryBackend::new());
    let app = app::<D>(locks, KeySource::path_index(1), waiting(), handler.clone()).await;
    let hold = |key: &str| send::<D>(&app, Request::post(&format!("/hold/{key}")));
    let together = async {
        handler.entered(3).await;
        assert_eq!(handler.inside(), 3, "all three inside at once");
        handler.open(3);
    };
    let (x, y, z, ()) = tokio::join!(hold("x"), hold("y"), hold("z"), together);
    for (answer, key) in [(x, "x"), (y, "y"), (z, "z")] {
        assert_locked(&answer, key);
    }
    assert_eq!((handler.runs(), handler.most_inside()), (3, 3));
}

/// With a wait, a request for a key held elsewhere queues, and runs (under the next fence)
/// once the holder releases it.
///
/// # Panics
/// When it does not.
pub async fn a_waiting_request_gets_the_lock_when_it_is_released<D: Driver>() {
    let backend = MemoryBackend::new();
    let locks = LockClient::new(backend.clone());
    let held = locks.lock("a").await.unwrap();
    let handler = Handler::new();
    let source = KeySource::path_index(1);
    let app = app::<D>(locks, source, waiting(), handler.clone()).await;
    let release = async {
        until_waiting(&backend, "a", 1).await;
        assert_eq!(handler.runs(), 0, "not before the release");
        held.release().await.unwrap();
    };
    let (answer, ()) = tokio::join!(send::<D>(&app, Request::post("/buy/a")), release);
    assert_ran(&answer, "a 2");
    assert_eq!(handler.runs(), 1);
}

/// Sends a request that holds inside the handler and deletes its lock (`job:7`) under it, as
/// an operator's `DEL` or an expiry would; with `on_lost` [`OnLost::Continue`], lets the
/// handler go on once the lock is gone. The answer, and the handler to count its runs.
async fn lose_the_lease<D: Driver>(on_lost: OnLost) -> (Answer, Handler) {
    let backend = MemoryBackend::new();
    let handler = Handler::new();
    let options = KeyedLockOptions::new().key_prefix("job:").on_lost(on_lost);
    let locks = LockClient::new(backend.clone());
    let app = app::<D>(locks, KeySource::path_index(1), options, handler.clone()).await;
    let cut = async {
        handler.entered(1).await;
        assert!(
            backend.simulate_external_delete("job:7"),
            "the lock was held"
        );
        if on_lost == OnLost::Continue {
            handler.open(1);
        }
    };
    let (answer, ()) = tokio::join!(send::<D>(&app, Request::post("/hold/7")), cut);
    (answer, handler)
}

/// The lock deleted under a running handler, [`OnLost::Cancel`] (the default): the handler
/// is dropped before it answers, and the request answered a 503 `lease-lost` problem.
///
/// # Panics
/// When it is not.
pub async fn a_lost_lease_cancels_the_handler_with_503<D: Driver>() {
    let (answer, handler) = lose_the_lease::<D>(OnLost::Cancel).await;
    assert_problem(&answer, 503, "urn:distributed-lock:lease-lost");
    assert_eq!(
        (handler.runs(), handler.cancelled()),
        (1, 1),
        "the handler was cancelled"
    );
}

/// The lock deleted under a running handler, [`OnLost::Continue`]: the handler finishes and
/// its 200 is sent.
///
/// # Panics
/// When it is not.
pub async fn a_lost_lease_can_be_left_to_the_handler<D: Driver>() {
    let (answer, handler) = lose_the_lease::<D>(OnLost::Continue).await;
    assert_ran(&answer, "job:7 1");
    assert_eq!(
        (handler.runs(), handler.cancelled()),
        (1, 0),
        "the handler finished"
    );
}
