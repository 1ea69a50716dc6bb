//! Every Redis key and pub/sub channel the toolkit uses lives under the backend's key prefix
//! (`RedisBackend::builder(url).key_prefix(..)`), the stores' too: the cache's entries and
//! the idempotency records (`<prefix>:cache:…`), the fenced values (`<prefix>:fenced:…`), the
//! lock's wake-ups and the stores' pushes (`<prefix>:wake:…`, `<prefix>:cache:push:…`).
//!
//! - Two applications on one server with the same names and different prefixes: each name's
//!   keys are all under one of the prefixes, and neither sees the other's lock, cache entry,
//!   idempotency record or fenced value.
//! - A Redis ACL user limited to its prefix (`~svc:*`, `&svc:*`, `+@all -@dangerous`, on a
//!   server of the test's own: `acl_support.rs`) runs the lock, cache, idempotency and fenced
//!   operations with no `NOPERM`; the lock's conformance and primitives suites run on it here,
//!   the cache, result store and idempotency suites in their own files.

use std::collections::BTreeSet;
use std::time::Duration;

use lock_core::cache::{Cache, CacheStatus};
use lock_core::fenced::FencedWrite;
use lock_core::idempotency::{Begin, Completion, Fingerprint, Idempotency, InFlight};
use lock_core::redis::RedisFencedStore;
use lock_core::redis::RedisResultStore;
use lock_core::results::StoredResponse;
use lock_core::{FencingToken, LockClient, RedisBackend};

use crate::acl_support::{acl_user_backend, AclRedis};
use crate::conformance::{self, bounded, Harness};
use crate::redis_support::{
    admin_connection, keys_naming, prefixed_backend, redis_url, BehindTheBack,
};

/// One application's clients, on a backend with its key prefix.
struct App {
    prefix: String,
    backend: RedisBackend,
    locks: LockClient,
    cache: Cache,
    payments: Idempotency,
    fenced: RedisFencedStore,
}

async fn app(backend: RedisBackend) -> App {
    let store = RedisResultStore::from_backend(&backend).await.unwrap();
    App {
        prefix: backend.key_prefix().to_owned(),
        locks: LockClient::builder(backend.clone())
            .namespace("orders")
            .build()
            .unwrap(),
        cache: Cache::builder(store.clone(), backend.clone())
            .namespace("prices")
            .build()
            .unwrap(),
        payments: Idempotency::builder(store, backend.clone())
            .namespace("payments")
            .build()
            .unwrap(),
        fenced: RedisFencedStore::from_backend(&backend).await.unwrap(),
        backend,
    }
}

fn pay() -> Fingerprint {
    Fingerprint::builder("POST", "/payments")
        .body(b"100")
        .finish()
}

fn paid(body: &str) -> StoredResponse {
    StoredResponse {
        status: 201,
        headers: Vec::new(),
        body: body.as_bytes().to_vec(),
        initial_age: Duration::ZERO,
        fresh: Duration::ZERO,
    }
}

/// A lock, a cache entry, an idempotency record and a fenced value, each named `name`, as an
/// application would use them; each answer is the application's own (`value`), not another's
/// that used the same name.
async fn use_every_store(app: &App, name: &str, value: &str, fence: u64) {
    let guard = app.locks.lock(name).await.unwrap();
    let got = app
        .cache
        .entry(name)
        .try_get_with({
            let value = value.as_bytes().to_vec();
            move || async move { Ok::<_, String>(value) }
        })
        .await
        .unwrap();
    assert_eq!(
        (got.status, got.value.as_slice()),
        (CacheStatus::Computed, value.as_bytes()),
        "{}: the cache entry {name} was another application's",
        app.prefix
    );
    let claim = match app
        .payments
        .begin("alice", name, pay(), InFlight::Conflict)
        .await
        .unwrap()
    {
        Begin::Run(claim) => claim,
        other => panic!(
            "{}: the payment {name} must run, got {other:?} (another application's record)",
            app.prefix
        ),
    };
    assert!(matches!(
        claim.complete(paid(value)).await.unwrap(),
        Completion::Stored(_)
    ));
    match app
        .payments
        .begin("alice", name, pay(), InFlight::Conflict)
        .await
        .unwrap()
    {
        Begin::Replay(done) => assert_eq!(done.response.body, value.as_bytes()),
        other => panic!("{}: expected a replay, got {other:?}", app.prefix),
    }
    let written = app
        .fenced
        .write(name, FencingToken::new(fence), value.as_bytes())
        .await
        .unwrap();
    assert_eq!(
        written,
        FencedWrite::Accepted,
        "{}: the fenced value {name} holds another application's token",
        app.prefix
    );
    guard.release().await.unwrap();
}

/// The channels somebody subscribes to under `prefix`.
async fn channels_under(
    connection: &mut redis::aio::MultiplexedConnection,
    prefix: &str,
) -> Vec<String> {
    redis::cmd("PUBSUB")
        .arg("CHANNELS")
        .arg(format!("{prefix}:*"))
        .query_async(connection)
        .await
        .unwrap()
}

/// Two applications on the stack's Redis with the same names (lock, cache entry, idempotency
/// record, fenced value) and prefixes of their own: every key of those names is under one of
/// the prefixes, each application has its keys of every kind and its channels (wake-ups and
/// pushes) under its own, and neither meets the other's values: each computes its own cache
/// entry, runs its own payment and writes its fenced value with a smaller token than the
/// other's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_prefixes_on_one_server_keep_apart() {
    let Some(url) = redis_url() else {
        return;
    };
    bounded(async {
        let prefixes = [lock_testing::unique("app-a"), lock_testing::unique("app-b")];
        let mut apps = Vec::new();
        for prefix in &prefixes {
            let backend = prefixed_backend(&url, prefix).await;
            apps.push(app(backend).await);
        }
        let name = lock_testing::unique("shared-name");
        // The second application writes its fenced value with the smaller token: refused if
        // the two shared the value.
        use_every_store(&apps[0], &name, "from a", 1_000).await;
        use_every_store(&apps[1], &name, "from b", 1).await;

        // Both hold the lock at once: it is a lock each.
        let a = apps[0].locks.lock(&name).await.unwrap();
        let b = apps[1].locks.lock(&name).try_acquire().await.unwrap();
        let b = b.unwrap_or_else(|| panic!("the lock {name} is shared by the two prefixes"));
        for (app, value, fence) in [(&apps[0], "from a", 1_000), (&apps[1], "from b", 1)] {
            let hit = app
                .cache
                .entry(&name)
                .get::<Vec<u8>>()
                .await
                .unwrap()
                .expect("a fresh entry");
            assert_eq!(hit.value, value.as_bytes(), "{}", app.prefix);
            let (token, stored) = app.fenced.read(&name).await.unwrap().unwrap();
            assert_eq!((token.get(), stored.as_slice()), (fence, value.as_bytes()));
        }
        a.release().await.unwrap();
        b.release().await.unwrap();

        let mut admin = admin_connection(&url).await;
        let keys = keys_naming(&mut admin, &name).await;
        let mut problems: Vec<String> = keys
            .iter()
            .filter(|key| !prefixes.iter().any(|p| key.starts_with(&format!("{p}:"))))
            .map(|key| format!("the key {key:?} is under neither prefix"))
            .collect();
        for prefix in &prefixes {
            let mine: BTreeSet<&str> = keys
                .iter()
                .filter(|key| key.starts_with(&format!("{prefix}:")))
                .map(String::as_str)
                .collect();
            let expected = [
                (
                    format!("{prefix}:{{#orders:{name}}}:fence"),
                    "lock's fencing counter",
                ),
                (format!("{prefix}:cache:{{#prices:{name}}}"), "cache entry"),
                (
                    format!("{prefix}:cache:{{#idem.payments:5:alice:{name}}}"),
                    "idempotency record",
                ),
                (format!("{prefix}:fenced:{name}"), "fenced value"),
            ];
            for (key, what) in expected {
                if !mine.contains(key.as_str()) {
                    problems.push(format!("no {what} {key:?}"));
                }
            }
            let channels = channels_under(&mut admin, prefix).await;
            for kind in ["wake", "cache:push"] {
                if !channels
                    .iter()
                    .any(|c| c.starts_with(&format!("{prefix}:{kind}:")))
                {
                    problems.push(format!(
                        "no {kind} channel under {prefix}: (its channels: {channels:?})"
                    ));
                }
            }
        }
        assert!(
            problems.is_empty(),
            "{problems:#?}\nkeys naming {name}: {keys:#?}"
        );
        drop(apps);
    })
    .await;
}

/// An ACL user limited to its prefix (keys `~svc:*`, channels `&svc:*`, `+@all -@dangerous`)
/// runs every store made from a backend with that prefix: a lock a second client waits for,
/// a cache miss three callers on two instances collapse into one computation, an idempotent
/// payment run, completed and replayed, and a fenced write; the server logs no refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_limited_to_its_prefix_uses_every_store() {
    let acl = AclRedis::start("svc").await;
    bounded(async {
        let (one, two) = (
            app(acl.backend().await).await,
            app(acl.backend().await).await,
        );
        let name = lock_testing::unique("acl");

        // A lock, waited for: the release wakes the waiter by pub/sub.
        let held = one.locks.lock(&name).await.unwrap();
        let waiter = tokio::spawn({
            let locks = two.locks.clone();
            let name = name.clone();
            async move {
                locks
                    .lock(&name)
                    .acquire_within(Duration::from_secs(10))
                    .await
            }
        });
        let admin = acl.admin().await;
        let queue = one.backend.waiters_key(&format!("orders:{name}"));
        conformance::eventually("the second client queues", || {
            let (mut admin, queue) = (admin.clone(), queue.clone());
            async move {
                let queued: usize = redis::cmd("ZCARD")
                    .arg(queue)
                    .query_async(&mut admin)
                    .await
                    .unwrap();
                queued > 0
            }
        })
        .await;
        held.release().await.unwrap();
        let granted = waiter.await.unwrap().unwrap().expect("woken and granted");
        granted.release().await.unwrap();

        // A cold cache key: three callers on two instances, one computation, pushed to the
        // others.
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let compute = {
            let calls = calls.clone();
            move || async move {
                calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(200)).await;
                Ok::<_, String>(b"v".to_vec())
            }
        };
        let (x, y, z) = tokio::join!(
            one.cache.entry(&name).try_get_with(compute.clone()),
            two.cache.entry(&name).try_get_with(compute.clone()),
            two.cache.entry(&name).try_get_with(compute),
        );
        for got in [x, y, z] {
            assert_eq!(got.unwrap().value, b"v");
        }
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);

        pay_and_fence(&one, &two, &name).await;
    })
    .await;
    acl.assert_no_refusals().await;
}

/// An idempotent payment `name` run on one instance (in flight for the other), completed and
/// replayed on the other; the fenced value `name` written by one, a stale write refused on the
/// other.
async fn pay_and_fence(one: &App, two: &App, name: &str) {
    let Begin::Run(claim) = one
        .payments
        .begin("alice", name, pay(), InFlight::Conflict)
        .await
        .unwrap()
    else {
        panic!("the first payment runs");
    };
    assert!(matches!(
        two.payments
            .begin("alice", name, pay(), InFlight::Conflict)
            .await
            .unwrap(),
        Begin::InFlight
    ));
    claim.complete(paid("ok")).await.unwrap();
    let Begin::Replay(done) = two
        .payments
        .begin("alice", name, pay(), InFlight::Conflict)
        .await
        .unwrap()
    else {
        panic!("the retry replays");
    };
    assert_eq!(done.response.body, b"ok");

    assert!(one
        .fenced
        .write(name, FencingToken::new(7), b"new")
        .await
        .unwrap()
        .is_accepted());
    assert_eq!(
        two.fenced
            .write(name, FencingToken::new(6), b"stale")
            .await
            .unwrap(),
        FencedWrite::Refused {
            newest: FencingToken::new(7)
        }
    );
}

/// A fenced store on a connection of the application's own takes the prefix it is given, and
/// meets the values of a store connected through a backend with that prefix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_store_on_a_connection_of_its_own_takes_the_prefix() {
    let (acl, backend) = acl_user_backend("svc").await;
    bounded(async {
        let through_backend = RedisFencedStore::from_backend(&backend).await.unwrap();
        let client = redis::Client::open(acl.url()).unwrap();
        let connection = redis::aio::ConnectionManager::new(client).await.unwrap();
        let own = RedisFencedStore::from_connection(connection.clone())
            .with_key_prefix(acl.prefix())
            .unwrap();
        assert_eq!(own.redis_key("report").unwrap(), "svc:fenced:report");
        assert!(through_backend
            .write("report", FencingToken::new(9), b"v")
            .await
            .unwrap()
            .is_accepted());
        let (fence, value) = own.read("report").await.unwrap().unwrap();
        assert_eq!((fence.get(), value.as_slice()), (9, &b"v"[..]));
        assert!(!own
            .write("report", FencingToken::new(8), b"stale")
            .await
            .unwrap()
            .is_accepted());
        // The default is a default backend's prefix; a bad prefix is a configuration error.
        let default = RedisFencedStore::from_connection(connection.clone());
        assert_eq!(default.redis_key("report").unwrap(), "lock:fenced:report");
        for bad in ["", "a{b"] {
            let refused = RedisFencedStore::from_connection(connection.clone())
                .with_key_prefix(bad)
                .unwrap_err();
            assert!(
                matches!(refused, lock_core::LockError::InvalidConfig(_)),
                "{refused}"
            );
        }
    })
    .await;
    acl.assert_no_refusals().await;
}

/// An election on an ACL user limited to its prefix: an observer that reads the store only
/// every minute is told of each leader as it takes over and resigns (the grant and the release
/// publish on the election's channel, `svc:wake:leader:…`, which the observer subscribes to),
/// and the server logs no refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_limited_to_its_prefix_elects_and_observes() {
    let acl = AclRedis::start("svc").await;
    bounded(async {
        let locks = [
            LockClient::new(acl.backend().await),
            LockClient::new(acl.backend().await),
        ];
        let name = lock_testing::unique("elected");
        let mut watch = locks[0]
            .election(&name)
            .observe_every(Duration::from_secs(60))
            .observe();
        assert_eq!(told(&mut watch).await, None);
        let candidate = locks[1].election(&name).participant("a");
        let (seen, leading) = tokio::join!(told(&mut watch), async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            candidate.campaign().await.unwrap()
        });
        assert_eq!(
            seen.map(|leader| (leader.participant, leader.fencing_token)),
            Some(("a".to_owned(), leading.fencing_token()))
        );
        let (seen, resigned) = tokio::join!(told(&mut watch), async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            leading.resign().await.unwrap()
        });
        assert!(resigned);
        assert_eq!(seen, None);
    })
    .await;
    acl.assert_no_refusals().await;
}

/// What `watch` is told next, within 5 s (the observer reads on its own only every minute).
async fn told(watch: &mut lock_core::LeaderWatch) -> Option<lock_core::Leader> {
    tokio::time::timeout(Duration::from_secs(5), watch.changed())
        .await
        .expect("the store told the observer")
        .unwrap()
}

/// The lock's conformance and primitives suites, run by an ACL user limited to its prefix.
struct AclUser {
    acl: AclRedis,
    behind: BehindTheBack,
}

async fn acl_user() -> Option<AclUser> {
    let acl = AclRedis::start("svc").await;
    let admin = acl.admin().await;
    let names = acl.backend().await;
    Some(AclUser {
        acl,
        behind: BehindTheBack { admin, names },
    })
}

impl Harness for AclUser {
    async fn client(&self) -> LockClient {
        conformance::client_on(self.acl.backend().await)
    }

    async fn delete_behind(&self, full_key: &str) {
        self.behind.delete_behind(full_key).await;
    }

    async fn queued(&self, full_key: &str) -> usize {
        self.behind.queued(full_key).await
    }
}

mod on_an_acl_user {
    use super::acl_user;

    crate::conformance::conformance_suite!(acl_user());
    crate::primitives::primitives_suite!(acl_user());
}
