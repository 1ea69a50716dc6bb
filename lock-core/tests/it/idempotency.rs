//! Idempotency records, one suite run on every result store (memory always; Redis and
//! PostgreSQL against the servers of `cargo xtask test`): one run per key across instances,
//! replays, 422 on another fingerprint, scopes, a zombie completion refused, crashed and
//! released claims, waiting duplicates, and a store that fails closed.
//!
//! "Instances" are separate `Idempotency` clients on separate connections (separate
//! processes are tested by the example apps' suites).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::idempotency::{
    Begin, Claim, Completion, Fingerprint, Idempotency, IdempotencyBuilder, InFlight,
};
use lock_core::memory::MemoryResultStore;
use lock_core::results::StoredResponse;
use lock_core::{LeaseMode, MemoryBackend};
use tokio::time::timeout;

const BOUND: Duration = Duration::from_secs(30);

/// How the suite gets clients of one kind of store.
trait Harness: Send + Sync + 'static {
    /// Another instance holding its claims with `lease`: it shares the store and the lock
    /// backend with every other (as instances of a service do), on connections of its own
    /// where the store has them.
    fn instance(&self, lease: LeaseMode) -> impl Future<Output = Idempotency> + Send;
}

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

/// Two instances holding their claims with the default lease.
async fn two(h: &impl Harness) -> (Idempotency, Idempotency) {
    (
        h.instance(LeaseMode::default()).await,
        h.instance(LeaseMode::default()).await,
    )
}

/// `client` begins `key` of `scope`, a payment of `cents`, which must run: its claim.
async fn runs(
    client: &Idempotency,
    scope: &str,
    key: &str,
    cents: u32,
    in_flight: InFlight,
) -> Claim {
    match client
        .begin(scope, key, pay(cents), in_flight)
        .await
        .unwrap()
    {
        Begin::Run(claim) => claim,
        other => panic!("{scope}/{key} runs, got {other:?}"),
    }
}

fn built(builder: IdempotencyBuilder, lease: LeaseMode) -> Idempotency {
    builder.namespace("test").lease(lease).build().unwrap()
}

/// The memory store and lock backend, shared by the instances.
struct Memory(MemoryResultStore, MemoryBackend);

impl Harness for Memory {
    async fn instance(&self, lease: LeaseMode) -> Idempotency {
        built(Idempotency::builder(self.0.clone(), self.1.clone()), lease)
    }
}

async fn memory() -> Option<Memory> {
    Some(Memory(MemoryResultStore::new(), MemoryBackend::new()))
}

/// The suite, as `#[tokio::test]`s in module `$module`, each on the harness `$harness` (an
/// async expression: `None` when its server is missing and may be).
macro_rules! idempotency_suite {
    ($module:ident, $harness:expr) => {
        idempotency_suite!($module, $harness;
            one_run_then_replays,
            another_fingerprint_is_refused,
            scopes_do_not_share_records,
            concurrent_duplicates_run_once,
            a_dropped_claim_lets_the_next_request_run,
            a_released_claim_lets_a_waiting_duplicate_run,
            a_waiting_duplicate_gets_the_replay,
            a_zombie_completion_is_refused,
            a_zombie_completion_after_the_retry_completed_is_refused);
    };
    ($module:ident, $harness:expr; $($check:ident),+) => {
        mod $module {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $check() {
                    if let Some(harness) = $harness.await {
                        timeout(BOUND, super::$check(&harness)).await.expect("bounded");
                    }
                }
            )+
        }
    };
}

async fn one_run_then_replays(h: &impl Harness) {
    let (a, b) = two(h).await;
    let key = unique("once");
    let claim = runs(&a, "u", &key, 100, InFlight::Conflict).await;
    assert!(claim.info().fencing_token.get() > 0);
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

async fn another_fingerprint_is_refused(h: &impl Harness) {
    let a = h.instance(LeaseMode::default()).await;
    let key = unique("mismatch");
    let claim = runs(&a, "u", &key, 1, InFlight::Conflict).await;
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

async fn scopes_do_not_share_records(h: &impl Harness) {
    let a = h.instance(LeaseMode::default()).await;
    let key = unique("scoped");
    let alice = runs(&a, "alice", &key, 5, InFlight::Conflict).await;
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
    let one = runs(&a, "a:b", &first, 0, InFlight::Conflict).await;
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

async fn concurrent_duplicates_run_once(h: &impl Harness) {
    let clients = [
        h.instance(LeaseMode::default()).await,
        h.instance(LeaseMode::default()).await,
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

async fn a_dropped_claim_lets_the_next_request_run(h: &impl Harness) {
    let a = h.instance(LeaseMode::default()).await;
    let key = unique("dropped");
    let claim = runs(&a, "u", &key, 3, InFlight::Conflict).await;
    let first_fence = claim.info().fencing_token;
    // A cancelled or panicking handler drops its claim: the lease goes at once, and a retry
    // that waits for it (pushed) takes the key over with a larger fence.
    drop(claim);
    match a
        .begin("u", &key, pay(3), InFlight::Wait(Duration::from_secs(5)))
        .await
        .unwrap()
    {
        Begin::Run(retry) => {
            assert!(retry.info().fencing_token > first_fence);
            retry.complete(response("retried")).await.unwrap();
        }
        other => panic!("the retry runs, got {other:?}"),
    }
}

async fn a_released_claim_lets_a_waiting_duplicate_run(h: &impl Harness) {
    let (a, b) = two(h).await;
    let key = unique("released");
    let claim = runs(&a, "u", &key, 4, InFlight::Conflict).await;
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
    let claim = runs(&a, "u", &key, 4, InFlight::Conflict).await;
    claim.release().await.unwrap();
    assert!(matches!(
        b.begin("u", &key, pay(4), InFlight::Conflict)
            .await
            .unwrap(),
        Begin::Run(_)
    ));
}

async fn a_waiting_duplicate_gets_the_replay(h: &impl Harness) {
    let (a, b) = two(h).await;
    let key = unique("waiting");
    let claim = runs(&a, "u", &key, 6, InFlight::Conflict).await;
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
    let _claim = runs(&a, "u", &key, 6, InFlight::Conflict).await;
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

/// A claim whose lease ran out and the retry that took its key over: the `zombie` claim of a
/// `paused` instance (a 300 ms fixed lease), and the `retry` of a second instance, which waits
/// for the key and gets it when the zombie's lease runs out. Both pay `cents` in scope `u`.
struct Takeover {
    paused: Idempotency,
    retrying: Idempotency,
    key: String,
    zombie: Claim,
    retry: Claim,
}

impl Takeover {
    async fn of(h: &impl Harness, name: &str, cents: u32) -> Self {
        let short = LeaseMode::fixed(Duration::from_millis(300));
        let (paused, retrying) = (
            h.instance(short).await,
            h.instance(LeaseMode::default()).await,
        );
        let key = unique(name);
        let zombie = runs(&paused, "u", &key, cents, InFlight::Conflict).await;
        let wait = InFlight::Wait(Duration::from_secs(10));
        let retry = runs(&retrying, "u", &key, cents, wait).await;
        Self {
            paused,
            retrying,
            key,
            zombie,
            retry,
        }
    }
}

/// A claim whose lease ran out (its process paused past it) is taken over by the retry; the
/// paused handler's completion, arriving while the retry runs, is refused, and the retry's
/// answer stands.
async fn a_zombie_completion_is_refused(h: &impl Harness) {
    let Takeover {
        paused,
        retrying,
        key,
        zombie,
        retry,
    } = Takeover::of(h, "zombie", 8).await;
    assert!(retry.info().fencing_token > zombie.info().fencing_token);
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

async fn a_zombie_completion_after_the_retry_completed_is_refused(h: &impl Harness) {
    let Takeover { zombie, retry, .. } = Takeover::of(h, "zombie-late", 9).await;
    retry.complete(response("retry")).await.unwrap();
    match zombie.complete(response("zombie")).await.unwrap() {
        Completion::Superseded(Some(done)) => assert_eq!(done.response.body, b"retry"),
        other => panic!("the zombie is refused, got {other:?}"),
    }
}

idempotency_suite!(memory_store, memory());

#[cfg(feature = "redis")]
mod redis_harness {
    use lock_core::idempotency::Idempotency;
    use lock_core::redis::RedisResultStore;
    use lock_core::LeaseMode;

    use super::{built, Harness};
    use crate::redis_support::SharedRedis;

    /// A Redis server: each instance on connections of its own, its store connected through
    /// its lock backend (so claims take one script) or, with `two_steps`, through another
    /// backend on the same server (so they read the record, take the lease and write it in
    /// flight as separate commands).
    pub(crate) struct Redis {
        pub(crate) server: SharedRedis,
        two_steps: bool,
    }

    impl Harness for Redis {
        async fn instance(&self, lease: LeaseMode) -> Idempotency {
            let backend = self.server.backend().await;
            let store = if self.two_steps {
                let other = self.server.backend().await;
                RedisResultStore::from_backend(&other).await.unwrap()
            } else {
                RedisResultStore::from_backend(&backend).await.unwrap()
            };
            built(Idempotency::builder(store, backend), lease)
        }
    }

    /// The stack's Redis; `two_steps` as in [`Redis`].
    pub(crate) async fn redis(two_steps: bool) -> Option<Redis> {
        let server = SharedRedis::stack()?;
        Some(Redis { server, two_steps })
    }

    /// A Redis Cluster or Sentinel deployment: each instance on a backend of its own, its
    /// store connected through it.
    pub(crate) struct OnDeployment(crate::redis_support::Deployment);

    impl Harness for OnDeployment {
        async fn instance(&self, lease: LeaseMode) -> Idempotency {
            let backend = self.0.backend().await;
            let store = RedisResultStore::from_backend(&backend).await.unwrap();
            built(Idempotency::builder(store, backend), lease)
        }
    }

    /// The stack's deployment, when it is there.
    pub(crate) async fn deployment(
        deployment: Option<crate::redis_support::Deployment>,
    ) -> Option<OnDeployment> {
        deployment.map(OnDeployment)
    }

    /// A server of the test's own, as an ACL user limited to its key prefix (`~svc:*`,
    /// `&svc:*`; see `acl_support.rs`): every record's key and push channel is under it.
    pub(crate) async fn acl_user() -> Option<Redis> {
        let server = SharedRedis::acl_user().await;
        Some(Redis {
            server,
            two_steps: false,
        })
    }
}

#[cfg(feature = "redis")]
idempotency_suite!(redis_store, redis_harness::redis(false));
#[cfg(feature = "redis")]
idempotency_suite!(
    redis_cluster,
    redis_harness::deployment(crate::redis_support::Deployment::cluster())
);
#[cfg(feature = "redis")]
idempotency_suite!(
    redis_sentinel,
    redis_harness::deployment(crate::redis_support::Deployment::sentinel())
);
#[cfg(feature = "redis")]
idempotency_suite!(redis_store_two_steps, redis_harness::redis(true));
#[cfg(feature = "redis")]
idempotency_suite!(redis_acl_user, redis_harness::acl_user());

/// With the store on the lock backend itself, a claim is one script: a replay reads the
/// completed record there and takes no lease (the key's fencing counter does not move, no lock
/// key is set), a first request's record is in flight under its claim's fence as soon as
/// `begin` returns, and its lease is gone as soon as `complete` returns (one more script).
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_replay_takes_no_lease() {
    use lock_core::redis::RedisResultStore;
    use lock_core::RedisBackend;

    let Some(redis) = redis_harness::redis(false).await else {
        return;
    };
    timeout(BOUND, async {
        let backend = RedisBackend::connect(&redis.server.url).await.unwrap();
        let store = RedisResultStore::from_backend(&backend).await.unwrap();
        let client = built(
            Idempotency::builder(store.clone(), backend.clone()),
            LeaseMode::default(),
        );
        let key = unique("one-script");
        // The record's (and the lock's) key: `idem.test:<scope length>:<scope>:<key>`.
        let full = format!("idem.test:1:u:{key}");
        let raw = redis::Client::open(redis.server.url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        // A raw `GET` of `key`, beside the clients.
        let get = |key: String| {
            let mut raw = raw.clone();
            async move {
                redis::cmd("GET")
                    .arg(key)
                    .query_async::<Option<Vec<u8>>>(&mut raw)
                    .await
                    .unwrap()
            }
        };
        let (lock_key, record_key) = (backend.redis_key(&full), store.redis_key(&full));
        let fence_key = format!("{lock_key}:fence");

        let claim = runs(&client, "u", &key, 100, InFlight::Conflict).await;
        let fence = claim.info().fencing_token.get();
        let record = get(record_key).await.expect("a record");
        let header = String::from_utf8_lossy(&record).into_owned();
        assert!(
            header.starts_with(&format!("lc1 I {fence:020} ")),
            "in flight under the claim's fence: {header}"
        );
        let granted = get(fence_key.clone()).await;
        assert_eq!(granted, Some(fence.to_string().into_bytes()));
        claim.complete(response("paid")).await.unwrap();
        // The completion released the lease in the same script: free as `complete` returns.
        assert_eq!(
            get(lock_key.clone()).await,
            None,
            "the lease is released with the completion"
        );

        for _ in 0..3 {
            assert!(matches!(
                client
                    .begin("u", &key, pay(100), InFlight::Conflict)
                    .await
                    .unwrap(),
                Begin::Replay(_)
            ));
            assert!(matches!(
                client
                    .begin("u", &key, pay(7), InFlight::Conflict)
                    .await
                    .unwrap(),
                Begin::Mismatch
            ));
        }
        assert_eq!(get(fence_key).await, granted, "a replay took a lease");
        assert_eq!(
            get(lock_key).await,
            None,
            "no lease is held after the replays"
        );
    })
    .await
    .unwrap();
}

#[cfg(feature = "postgres")]
mod postgres_harness {
    use lock_core::idempotency::Idempotency;
    use lock_core::sql::PostgresResultStore;
    use lock_core::{LeaseMode, PostgresBackend};

    use super::{built, Harness};

    /// A PostgreSQL server holding the lock table and the records (where an application's
    /// effects would be too): each instance on a pool of its own.
    pub(crate) struct Postgres(String);

    impl Harness for Postgres {
        async fn instance(&self, lease: LeaseMode) -> Idempotency {
            let backend = PostgresBackend::connect(&self.0).await.unwrap();
            let store = PostgresResultStore::connect(&self.0).await.unwrap();
            built(Idempotency::builder(store, backend), lease)
        }
    }

    pub(crate) async fn postgres() -> Option<Postgres> {
        lock_testing::server_url("LOCK_TEST_POSTGRES_URL")
            .unwrap()
            .map(Postgres)
    }
}

#[cfg(feature = "postgres")]
idempotency_suite!(postgres_store, postgres_harness::postgres());

/// Redis down under the store: nothing runs (fail closed); a completion that cannot be
/// stored is an error and the claim is left to expire, never marked done.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_store_that_is_down_fails_closed() {
    use lock_core::redis::RedisResultStore;
    use lock_core::RedisBackend;
    use lock_testing::{free_port, RedisServer};

    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("redis-idempotency-{}", std::process::id()));
    let mut server = RedisServer::start(free_port(), dir);
    timeout(BOUND, async {
        let backend = RedisBackend::builder(server.url())
            .response_timeout(Duration::from_millis(300))
            .connect()
            .await
            .unwrap();
        let store = RedisResultStore::from_backend(&backend).await.unwrap();
        let client = built(
            Idempotency::builder(store, backend),
            LeaseMode::fixed(Duration::from_secs(2)),
        );
        let claim = runs(&client, "u", "down", 1, InFlight::Conflict).await;
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
