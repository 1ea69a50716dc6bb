//! Idempotency records, one suite run on every result store (memory always; Redis and
//! PostgreSQL against the servers of `cargo xtask test`): one run per key across instances,
//! replays, 422 on another fingerprint, scopes, a zombie completion refused, crashed and
//! released claims, waiting duplicates, and a store that fails closed.
//!
//! "Instances" are separate `Idempotency` clients on separate connections (separate
//! processes are tested by the example apps' suites).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::idempotency::{
    Begin, Completion, Fingerprint, Idempotency, IdempotencyBuilder, InFlight,
};
use lock_core::results::MemoryResultStore;
use lock_core::results::StoredResponse;
use lock_core::{LeaseMode, MemoryBackend};
use tokio::time::timeout;

const BOUND: Duration = Duration::from_secs(30);

/// Makes clients that share one store and one lock backend (as instances of a service do):
/// each call is another instance, on its own connections where the store has them.
type Instances = Arc<dyn Fn(LeaseMode) -> Pin<Box<dyn Future<Output = Idempotency>>> + Send + Sync>;

fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

fn response(body: &str) -> StoredResponse {
    StoredResponse {
        status: 201,
        headers: vec![("content-type".into(), b"text/plain".to_vec())],
        body: body.as_bytes().to_vec(),
        initial_age: Duration::ZERO,
        fresh: Duration::ZERO,
    }
}

fn pay(cents: u32) -> Fingerprint {
    Fingerprint::builder("POST", "/payments")
        .body(cents.to_string().as_bytes())
        .finish()
}

fn built(builder: IdempotencyBuilder, lease: LeaseMode) -> Idempotency {
    builder.namespace("test").lease(lease).build().unwrap()
}

fn memory() -> Instances {
    let (store, backend) = (MemoryResultStore::new(), MemoryBackend::new());
    Arc::new(move |lease| {
        let builder = Idempotency::builder(store.clone(), backend.clone());
        Box::pin(async move { built(builder, lease) })
    })
}

/// The whole suite against one kind of store.
async fn suite(instances: Instances) {
    timeout(BOUND, async {
        one_run_then_replays(&instances).await;
        another_fingerprint_is_refused(&instances).await;
        scopes_do_not_share_records(&instances).await;
        concurrent_duplicates_run_once(&instances).await;
        a_dropped_claim_lets_the_next_request_run(&instances).await;
        a_released_claim_lets_a_waiting_duplicate_run(&instances).await;
        a_waiting_duplicate_gets_the_replay(&instances).await;
        a_zombie_completion_is_refused(&instances).await;
        a_zombie_completion_after_the_retry_completed_is_refused(&instances).await;
    })
    .await
    .expect("the idempotency suite took longer than its bound");
}

async fn one_run_then_replays(instances: &Instances) {
    let (a, b) = (
        instances(LeaseMode::default()).await,
        instances(LeaseMode::default()).await,
    );
    let key = unique("once");
    let Begin::Run(claim) = a
        .begin("u", &key, pay(100), InFlight::Conflict)
        .await
        .unwrap()
    else {
        panic!("the first request runs");
    };
    assert!(claim.info().fence.get() > 0);
    assert_eq!(claim.info().key, key);
    assert!(matches!(
        b.begin("u", &key, pay(100), InFlight::Conflict)
            .await
            .unwrap(),
        Begin::InFlight
    ));
    let stored = claim.complete(response("paid")).await.unwrap();
    assert!(matches!(stored, Completion::Stored(_)));
    for instance in [&a, &b] {
        match instance
            .begin("u", &key, pay(100), InFlight::Conflict)
            .await
            .unwrap()
        {
            Begin::Replay(done) => {
                assert_eq!(done.response.status, 201);
                assert_eq!(done.response.body, b"paid");
            }
            other => panic!("expected a replay, got {other:?}"),
        }
    }
    assert_eq!(
        a.completed("u", &key).await.unwrap().unwrap().response.body,
        b"paid"
    );
    let stats = a.stats();
    assert_eq!((stats.executed, stats.replayed), (1, 1));
}

async fn another_fingerprint_is_refused(instances: &Instances) {
    let a = instances(LeaseMode::default()).await;
    let key = unique("mismatch");
    let Begin::Run(claim) = a
        .begin("u", &key, pay(1), InFlight::Conflict)
        .await
        .unwrap()
    else {
        panic!("the first request runs");
    };
    // In flight, and then completed: another payload under the key is refused both times,
    // by a duplicate that would wait as by one that would not.
    assert!(matches!(
        a.begin("u", &key, pay(2), InFlight::Conflict)
            .await
            .unwrap(),
        Begin::Mismatch
    ));
    assert!(matches!(
        a.begin("u", &key, pay(2), InFlight::Wait(Duration::from_secs(5)))
            .await
            .unwrap(),
        Begin::Mismatch
    ));
    claim.complete(response("one")).await.unwrap();
    assert!(matches!(
        a.begin("u", &key, pay(2), InFlight::Wait(Duration::from_secs(1)))
            .await
            .unwrap(),
        Begin::Mismatch
    ));
}

async fn scopes_do_not_share_records(instances: &Instances) {
    let a = instances(LeaseMode::default()).await;
    let key = unique("scoped");
    let Begin::Run(alice) = a
        .begin("alice", &key, pay(5), InFlight::Conflict)
        .await
        .unwrap()
    else {
        panic!("alice runs");
    };
    alice.complete(response("alice's")).await.unwrap();
    // Bob's key of the same name is his own record: he runs, never sees alice's response.
    // Scopes that could run into the key (`a:b` + `c` against `a` + `b:c`) stay apart too.
    for scope in ["bob", "alice:", &"long scope ".repeat(20)] {
        assert!(
            matches!(
                a.begin(scope, &key, pay(5), InFlight::Conflict)
                    .await
                    .unwrap(),
                Begin::Run(_)
            ),
            "{scope}"
        );
    }
    let first = unique("x");
    let Begin::Run(one) = a
        .begin("a:b", &first, pay(0), InFlight::Conflict)
        .await
        .unwrap()
    else {
        panic!()
    };
    one.complete(response("1")).await.unwrap();
    assert!(matches!(
        a.begin("a", &format!("b:{first}"), pay(0), InFlight::Conflict)
            .await
            .unwrap(),
        Begin::Run(_)
    ));
    assert!(a.begin("u", "", pay(0), InFlight::Conflict).await.is_err());
    assert!(a
        .begin("u", &"k".repeat(600), pay(0), InFlight::Conflict)
        .await
        .is_err());
}

async fn concurrent_duplicates_run_once(instances: &Instances) {
    let clients = [
        instances(LeaseMode::default()).await,
        instances(LeaseMode::default()).await,
    ];
    let key = unique("crowd");
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..200 {
        let client = clients[index % 2].clone();
        let (key, runs) = (key.clone(), runs.clone());
        tasks.spawn(async move {
            match client
                .begin("u", &key, pay(7), InFlight::Conflict)
                .await
                .unwrap()
            {
                Begin::Run(claim) => {
                    runs.fetch_add(1, Ordering::SeqCst);
                    claim.complete(response("once")).await.unwrap();
                    "ran"
                }
                Begin::Replay(done) => {
                    assert_eq!(done.response.body, b"once");
                    "replayed"
                }
                Begin::InFlight => "in flight",
                Begin::Mismatch => panic!("same fingerprint"),
            }
        });
    }
    let answers: Vec<&str> = tasks.join_all().await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "{answers:?}");
    assert_eq!(answers.iter().filter(|a| **a == "ran").count(), 1);
}

async fn a_dropped_claim_lets_the_next_request_run(instances: &Instances) {
    let a = instances(LeaseMode::default()).await;
    let key = unique("dropped");
    let Begin::Run(claim) = a
        .begin("u", &key, pay(3), InFlight::Conflict)
        .await
        .unwrap()
    else {
        panic!("the first request runs");
    };
    let first_fence = claim.info().fence;
    // A cancelled or panicking handler drops its claim: the lease goes at once, and a retry
    // that waits for it (pushed) takes the key over with a larger fence.
    drop(claim);
    match a
        .begin("u", &key, pay(3), InFlight::Wait(Duration::from_secs(5)))
        .await
        .unwrap()
    {
        Begin::Run(retry) => {
            assert!(retry.info().fence > first_fence);
            retry.complete(response("retried")).await.unwrap();
        }
        other => panic!("the retry runs, got {other:?}"),
    }
}

async fn a_released_claim_lets_a_waiting_duplicate_run(instances: &Instances) {
    let (a, b) = (
        instances(LeaseMode::default()).await,
        instances(LeaseMode::default()).await,
    );
    let key = unique("released");
    let Begin::Run(claim) = a
        .begin("u", &key, pay(4), InFlight::Conflict)
        .await
        .unwrap()
    else {
        panic!("the first request runs");
    };
    let waiting = {
        let (b, key) = (b.clone(), key.clone());
        tokio::spawn(async move {
            b.begin("u", &key, pay(4), InFlight::Wait(Duration::from_secs(10)))
                .await
                .unwrap()
        })
    };
    // A 5xx is not kept: the claim is given back, and the waiting duplicate runs.
    claim.release().await.unwrap();
    match waiting.await.unwrap() {
        Begin::Run(claim) => {
            claim.complete(response("second")).await.unwrap();
        }
        other => panic!("the waiting duplicate runs, got {other:?}"),
    }
    // And an immediate retry after a release runs too (the key is free at once).
    let key = unique("released-retry");
    let Begin::Run(claim) = a
        .begin("u", &key, pay(4), InFlight::Conflict)
        .await
        .unwrap()
    else {
        panic!()
    };
    claim.release().await.unwrap();
    assert!(matches!(
        b.begin("u", &key, pay(4), InFlight::Conflict)
            .await
            .unwrap(),
        Begin::Run(_)
    ));
}

async fn a_waiting_duplicate_gets_the_replay(instances: &Instances) {
    let (a, b) = (
        instances(LeaseMode::default()).await,
        instances(LeaseMode::default()).await,
    );
    let key = unique("waiting");
    let Begin::Run(claim) = a
        .begin("u", &key, pay(6), InFlight::Conflict)
        .await
        .unwrap()
    else {
        panic!("the first request runs");
    };
    let waiting = {
        let (b, key) = (b.clone(), key.clone());
        tokio::spawn(async move {
            b.begin("u", &key, pay(6), InFlight::Wait(Duration::from_secs(10)))
                .await
                .unwrap()
        })
    };
    claim.complete(response("waited for")).await.unwrap();
    match waiting.await.unwrap() {
        Begin::Replay(done) => assert_eq!(done.response.body, b"waited for"),
        other => panic!("the waiting duplicate gets the replay, got {other:?}"),
    }
    // A wait that ends first is a 409, not a second run.
    let key = unique("waiting-out");
    let Begin::Run(_claim) = a
        .begin("u", &key, pay(6), InFlight::Conflict)
        .await
        .unwrap()
    else {
        panic!()
    };
    assert!(matches!(
        b.begin(
            "u",
            &key,
            pay(6),
            InFlight::Wait(Duration::from_millis(200))
        )
        .await
        .unwrap(),
        Begin::InFlight
    ));
}

/// A claim whose lease ran out (its process paused past it) is taken over by the retry; the
/// paused handler's completion, arriving while the retry runs, is refused, and the retry's
/// answer stands.
async fn a_zombie_completion_is_refused(instances: &Instances) {
    let short = LeaseMode::fixed(Duration::from_millis(300));
    let (paused, retrying) = (
        instances(short).await,
        instances(LeaseMode::default()).await,
    );
    let key = unique("zombie");
    let Begin::Run(zombie) = paused
        .begin("u", &key, pay(8), InFlight::Conflict)
        .await
        .unwrap()
    else {
        panic!("the first request runs");
    };
    // The retry waits for the key: it gets it when the zombie's lease runs out.
    let Begin::Run(retry) = retrying
        .begin("u", &key, pay(8), InFlight::Wait(Duration::from_secs(10)))
        .await
        .unwrap()
    else {
        panic!("the retry takes over");
    };
    assert!(retry.info().fence > zombie.info().fence);
    assert_eq!(
        zombie.complete(response("zombie")).await.unwrap(),
        Completion::Superseded(None)
    );
    assert!(matches!(
        retry.complete(response("retry")).await.unwrap(),
        Completion::Stored(_)
    ));
    let stands = retrying.completed("u", &key).await.unwrap().unwrap();
    assert_eq!(stands.response.body, b"retry");
    assert_eq!(paused.stats().superseded, 1);
}

async fn a_zombie_completion_after_the_retry_completed_is_refused(instances: &Instances) {
    let short = LeaseMode::fixed(Duration::from_millis(300));
    let (paused, retrying) = (
        instances(short).await,
        instances(LeaseMode::default()).await,
    );
    let key = unique("zombie-late");
    let Begin::Run(zombie) = paused
        .begin("u", &key, pay(9), InFlight::Conflict)
        .await
        .unwrap()
    else {
        panic!()
    };
    let Begin::Run(retry) = retrying
        .begin("u", &key, pay(9), InFlight::Wait(Duration::from_secs(10)))
        .await
        .unwrap()
    else {
        panic!()
    };
    retry.complete(response("retry")).await.unwrap();
    match zombie.complete(response("zombie")).await.unwrap() {
        Completion::Superseded(Some(done)) => assert_eq!(done.response.body, b"retry"),
        other => panic!("the zombie is refused, got {other:?}"),
    }
}

#[tokio::test]
async fn memory_store() {
    suite(memory()).await;
}

#[cfg(feature = "redis")]
mod redis_store {
    use super::*;
    use lock_core::results::RedisResultStore;
    use lock_core::testing::{free_port, server_url, RedisServer};
    use lock_core::RedisBackend;

    fn instances(url: String) -> Instances {
        Arc::new(move |lease| {
            let url = url.clone();
            Box::pin(async move {
                let backend = RedisBackend::connect(&url).await.unwrap();
                let store = RedisResultStore::connect(&backend).await.unwrap();
                built(Idempotency::builder(store, backend), lease)
            })
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn redis_store() {
        let Some(url) = server_url("LOCK_TEST_REDIS_URL").unwrap() else {
            return;
        };
        suite(instances(url)).await;
    }

    /// Store down: nothing runs (fail closed); a completion that cannot be stored is an
    /// error and the claim is left to expire, never marked done.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_store_that_is_down_fails_closed() {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("redis-idempotency-{}", std::process::id()));
        let mut server = RedisServer::start(free_port(), dir);
        timeout(BOUND, async {
            let backend = RedisBackend::builder(server.url())
                .response_timeout(Duration::from_millis(300))
                .connect()
                .await
                .unwrap();
            let store = RedisResultStore::connect(&backend).await.unwrap();
            let client = built(
                Idempotency::builder(store, backend),
                LeaseMode::fixed(Duration::from_secs(2)),
            );
            let Begin::Run(claim) = client
                .begin("u", "down", pay(1), InFlight::Conflict)
                .await
                .unwrap()
            else {
                panic!()
            };
            server.kill();
            assert!(claim.complete(response("lost")).await.is_err());
            assert!(client
                .begin("u", "down-2", pay(1), InFlight::Conflict)
                .await
                .is_err());
            let stats = client.stats();
            assert_eq!((stats.store_failed, stats.unavailable), (1, 1));
        })
        .await
        .unwrap();
    }
}

#[cfg(feature = "postgres")]
mod postgres_store {
    use super::*;
    use lock_core::results::PostgresResultStore;
    use lock_core::testing::server_url;
    use lock_core::PostgresBackend;

    fn instances(url: String) -> Instances {
        Arc::new(move |lease| {
            let url = url.clone();
            Box::pin(async move {
                let backend = PostgresBackend::connect(&url).await.unwrap();
                let store = PostgresResultStore::connect(&url).await.unwrap();
                built(Idempotency::builder(store, backend), lease)
            })
        })
    }

    /// Records next to the effect: the lock table, the result table and the payments in one
    /// PostgreSQL.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_store() {
        let Some(url) = server_url("LOCK_TEST_POSTGRES_URL").unwrap() else {
            return;
        };
        suite(instances(url)).await;
    }
}
