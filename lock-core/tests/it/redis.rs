//! The conformance suite on a real Redis server, plus Redis-specific failure checks.
//!
//! The server comes from `LOCK_TEST_REDIS_URL` (`cargo xtask test` starts one and sets it).
//! Without it the suite fails when `LOCK_TEST_REQUIRE_SERVERS=1` or `CI` is set, and otherwise
//! says loudly that it skipped.

use std::time::Duration;

use lock_core::backend::LeaseKind;
use lock_core::{LockClient, RedisBackend};

use crate::conformance::{self, conformance_suite, unique_key, Harness};
use crate::primitives::primitives_suite;
use crate::redis_support::{admin_connection, redis_url, BehindTheBack};

struct Redis {
    url: String,
    behind: BehindTheBack,
}

async fn redis() -> Option<Redis> {
    let url = redis_url()?;
    let admin = admin_connection(&url).await;
    let names = RedisBackend::connect(&url).await.unwrap();
    Some(Redis {
        url,
        behind: BehindTheBack { admin, names },
    })
}

impl Harness for Redis {
    async fn client(&self) -> LockClient {
        conformance::client_on(RedisBackend::connect(&self.url).await.unwrap())
    }

    async fn delete_behind(&self, full_key: &str) {
        self.behind.delete_behind(full_key).await;
    }

    async fn queued(&self, full_key: &str) -> usize {
        self.behind.queued(full_key).await
    }
}

conformance_suite!(redis());
primitives_suite!(redis());

/// An unreachable server is a typed, fail-closed error, quickly.
#[tokio::test]
async fn unreachable_server_is_unavailable() {
    let unreachable =
        RedisBackend::builder("redis://127.0.0.1:1/").response_timeout(Duration::from_millis(300));
    conformance::unavailable_quickly(unreachable.connect()).await;
    conformance::refused_as_config(RedisBackend::connect("not a url")).await;
}

/// A key the server keeps as another type is a backend error, not a panic or a grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_data_under_the_key_is_an_error() {
    let Some(h) = redis().await else { return };
    let client = h.client().await;
    let key = unique_key("foreign");
    let full = format!("conformance:{key}");
    let _: () = redis::cmd("HSET")
        .arg(h.behind.names.redis_key(&full))
        .arg("field")
        .arg("not a lock")
        .query_async(&mut h.behind.admin.clone())
        .await
        .unwrap();
    let err = client.lock(&key).try_acquire().await.unwrap_err();
    assert!(err.is_unavailable(), "{err}");
}

/// Milliseconds until `key` expires: -1 when it never does, -2 when it does not exist.
async fn pttl(h: &Redis, key: &str) -> i64 {
    redis::cmd("PTTL")
        .arg(key)
        .query_async(&mut h.behind.admin.clone())
        .await
        .unwrap()
}

/// Nothing a lock leaves in Redis lives forever: after locks on many one-off keys (some with
/// waiters that gave up), every key under their hash tags expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_lock_key_lives_forever() {
    let Some(h) = redis().await else { return };
    let (a, b) = (h.client().await, h.client().await);
    let retention = i64::try_from(lock_core::redis::FENCE_RETENTION.as_millis()).unwrap();
    for round in 0..50 {
        let key = unique_key("one-off");
        let guard = a.lock(&key).await.unwrap();
        if round % 5 == 0 {
            let waited = b
                .lock(&key)
                .acquire_within(Duration::from_millis(30))
                .await
                .unwrap();
            assert!(waited.is_none());
        }
        let full = guard.key().full().to_owned();
        guard.release().await.unwrap();
        let lock_key = h.behind.names.redis_key(&full);
        assert_eq!(
            pttl(&h, &lock_key).await,
            -2,
            "the lock key outlived its release"
        );
        let fence = pttl(&h, &format!("{lock_key}:fence")).await;
        assert!(
            0 < fence && fence <= retention,
            "fence counter TTL {fence} ms"
        );
        let waiters = pttl(&h, &h.behind.names.waiters_key(&full)).await;
        assert!(
            waiters == -2 || waiters > 0,
            "waiter queue TTL {waiters} ms"
        );
    }
}

/// A client's fence retention bounds how long the fencing counter outlives each grant;
/// `keep_fence_for` raises it for data kept under the token, and a later grant never lowers
/// it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fencing_counter_lives_as_long_as_asked() {
    let Some(h) = redis().await else { return };
    let backend = RedisBackend::connect(&h.url).await.unwrap();
    let short = Duration::from_secs(2);
    let client = LockClient::builder(backend)
        .namespace("conformance")
        .fence_retention(short)
        .build()
        .unwrap();
    let key = unique_key("retention");
    let fence_key = format!(
        "{}:fence",
        h.behind.names.redis_key(&format!("conformance:{key}"))
    );
    let guard = client.lock(&key).await.unwrap();
    let granted = pttl(&h, &fence_key).await;
    assert!(0 < granted && granted <= 2_000, "counter TTL {granted} ms");
    guard.keep_fence_for(Duration::from_secs(60)).await.unwrap();
    guard.release().await.unwrap();
    let kept = pttl(&h, &fence_key).await;
    assert!(
        kept > 50_000,
        "counter TTL {kept} ms after keep_fence_for(60 s)"
    );
    let again = client.lock(&key).await.unwrap();
    let after = pttl(&h, &fence_key).await;
    assert!(
        after > 50_000,
        "a grant lowered the counter's TTL to {after} ms"
    );
    again.release().await.unwrap();
}

/// Fencing tokens keep increasing when the counter is gone: expired after its retention, or
/// lost in a restart without persistence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_survives_a_lost_counter() {
    let Some(h) = redis().await else { return };
    let client = h.client().await;
    let key = unique_key("fence-reset");
    let first = client.lock(&key).await.unwrap();
    let before = first.fencing_token();
    first.release().await.unwrap();
    let fence_key = format!(
        "{}:fence",
        h.behind.names.redis_key(&format!("conformance:{key}"))
    );
    assert!(pttl(&h, &fence_key).await > 0, "the counter has no expiry");
    let _: i64 = redis::cmd("DEL")
        .arg(&fence_key)
        .query_async(&mut h.behind.admin.clone())
        .await
        .unwrap();
    let second = client.lock(&key).await.unwrap();
    assert!(
        second.fencing_token() > before,
        "{} !> {before}",
        second.fencing_token()
    );
}

/// A backend on the application's own `redis::Client`, and one on its client and
/// `ConnectionManager`: both lock, and a release by one wakes a waiter of the other through
/// the subscription each opened from its client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backends_from_a_client_and_from_parts() {
    let Some(h) = redis().await else { return };
    let client = redis::Client::open(h.url.as_str()).unwrap();
    let manager = redis::aio::ConnectionManager::new(client.clone())
        .await
        .unwrap();
    let from_client = RedisBackend::builder_from_client(client.clone())
        .key_prefix("byo")
        .connect()
        .await
        .unwrap();
    let from_parts = RedisBackend::builder_from_parts(client.clone(), manager.clone())
        .key_prefix("byo")
        .connect()
        .await
        .unwrap();
    assert_eq!(from_client.redis_key("ns:k"), "byo:{#ns:k}");
    let (a, b) = (
        LockClient::builder(from_client.clone())
            .namespace("byo")
            .build()
            .unwrap(),
        LockClient::builder(from_parts.clone())
            .namespace("byo")
            .build()
            .unwrap(),
    );
    let key = unique_key("byo");
    let held = b.lock(&key).await.unwrap();
    // The lock lives on the application's connection too.
    let stored: Option<String> = redis::cmd("GET")
        .arg(from_parts.redis_key(held.key().full()))
        .query_async(&mut manager.clone())
        .await
        .unwrap();
    // `<owner>:<fence>|<holder record>`.
    let lease = format!(
        "{}:{}|",
        held.owner_token().to_hex(),
        held.fencing_token().get()
    );
    assert!(stored.is_some_and(|v| v.starts_with(&lease)));
    let waiter = tokio::spawn({
        let key = key.clone();
        async move {
            let started = tokio::time::Instant::now();
            let guard = a.lock(&key).await.unwrap();
            let waited = started.elapsed();
            guard.release().await.unwrap();
            waited
        }
    });
    tokio::time::timeout(Duration::from_secs(10), async {
        while b.queue_length(LeaseKind::Exclusive, &key).await.unwrap() == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await; // the queue lives in Redis
        }
    })
    .await
    .expect("the waiter queued");
    held.release().await.unwrap();
    let waited = waiter.await.unwrap();
    assert!(from_client.wakeups_received() >= 1, "no wake-up message");
    assert!(
        waited < Duration::from_millis(900),
        "woken after {waited:?}"
    );
    // The shortcuts take the same sources.
    let shortcut = RedisBackend::from_parts(client.clone(), manager)
        .await
        .unwrap();
    assert_eq!(shortcut.redis_key("ns:k"), "lock:{#ns:k}");
    RedisBackend::from_client(client).await.unwrap();
}

/// With `redis-tls`, a `rediss://` URL makes a TLS connection: against the plain-text test
/// server (which waits for a command line and never answers the ClientHello) the connection
/// fails, quickly, with an error that says the TLS handshake did not complete, not a bare
/// "timed out".
#[cfg(feature = "redis-tls")]
#[tokio::test]
async fn tls_url_to_a_plain_text_server_says_tls_did_not_complete() {
    let Some(h) = redis().await else { return };
    let tls_url = h.url.replacen("redis://", "rediss://", 1);
    let plain_text_server =
        RedisBackend::builder(&tls_url).response_timeout(Duration::from_millis(500));
    let error = conformance::unavailable_quickly(plain_text_server.connect()).await;
    let mut message = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        message = format!("{message}: {cause}");
        source = cause.source();
    }
    assert!(
        message.contains("TLS handshake") && message.contains("did not complete"),
        "{message}"
    );
}

/// With `redis-tls`, a backend connects over `rediss://` to the stack's TLS server (its
/// certificate signed by a private CA, given to the client as a production setup with its own
/// CA does) and locks there. lock-core's tests build rustls with both `ring` and `aws-lc-rs`
/// (the dev-dependency), as an application with the Prometheus exporter's defaults does:
/// rustls cannot choose a provider by itself there and would panic at the handshake; lock-core
/// installs `ring` when the process has none.
#[cfg(feature = "redis-tls")]
#[tokio::test]
async fn tls_server_with_a_private_ca() {
    let url = lock_testing::server_url("LOCK_TEST_REDIS_TLS_URL").expect("test server");
    let Some(url) = url else { return };
    let ca_file = std::env::var("LOCK_TEST_REDIS_TLS_CA").expect("the CA's file beside the URL");
    let ca = std::fs::read(&ca_file).unwrap_or_else(|e| panic!("{ca_file}: {e}"));
    let certificates = redis::TlsCertificates {
        client_tls: None,
        root_cert: Some(ca),
    };
    let client = redis::Client::build_with_tls(url.as_str(), certificates).unwrap();
    let backend = RedisBackend::builder_from_client(client)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("rediss:// with the stack's CA: {e}"));
    assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    let locks = conformance::client_on(backend);
    let guard = locks.lock(unique_key("tls")).await.unwrap();
    assert!(guard.fencing_token().get() > 0);
    guard.release().await.unwrap();
}

/// A waiter that was woken (its queue entry popped by a release) and then beaten to the key by
/// a newcomer goes back to the front of the queue, not the back: the next release wakes it
/// again, before waiters that came after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_beaten_waiter_keeps_its_place() {
    let Some(h) = redis().await else { return };
    tokio::time::timeout(Duration::from_secs(30), async {
        let key = unique_key("keeps-place");
        let holder = h.client().await;
        let guard = holder.lock(&key).await.unwrap();
        let full = guard.key().full().to_owned();
        let queue = h.behind.names.waiters_key(&full);
        let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for name in ["first", "second"] {
            let client = h.client().await;
            let (key, order) = (key.clone(), order.clone());
            waiters.push(tokio::spawn(async move {
                let guard = client.lock(&key).await.unwrap();
                order.lock().unwrap().push(name);
                guard.release().await.unwrap();
            }));
            let before = waiters.len();
            while h.queued(&full).await < before {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        // What a release does to the first waiter before a newcomer wins the key: pop it.
        let popped: Vec<String> = redis::cmd("ZPOPMIN")
            .arg(&queue)
            .query_async(&mut h.behind.admin.clone())
            .await
            .unwrap();
        assert_eq!(popped.len(), 2, "the first waiter was queued");
        // Its re-check (timer) puts it back: at the front.
        let front = loop {
            let front: Vec<String> = redis::cmd("ZRANGE")
                .arg(&queue)
                .arg(0)
                .arg(-1)
                .query_async(&mut h.behind.admin.clone())
                .await
                .unwrap();
            if front.len() == 2 {
                break front;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        assert_eq!(front[0], popped[0], "the beaten waiter went to the back");
        guard.release().await.unwrap();
        for waiter in waiters {
            waiter.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), ["first", "second"]);
    })
    .await
    .expect("bounded");
}

/// Batching: 64 tasks acquiring, extending and releasing distinct keys at once go to the
/// server in fewer script calls than locks (their calls queue behind a busy connection and go together), each
/// getting its own grant and fence; a key holding another program's data fails its own
/// caller only, not the others in its batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_in_flight_together_go_in_batches_with_their_own_replies() {
    let Some(h) = redis().await else { return };
    conformance::bounded(async {
        let backend = RedisBackend::connect(&h.url).await.unwrap();
        let client = conformance::client_on(backend.clone());
        let foreign = unique_key("batch-foreign");
        let _: () = redis::cmd("HSET")
            .arg(h.behind.names.redis_key(&format!("conformance:{foreign}")))
            .arg("field")
            .arg("not a lock")
            .query_async(&mut h.behind.admin.clone())
            .await
            .unwrap();
        let before = backend.commands_sent();
        let rounds = 20;
        let tasks: Vec<_> = (0..64)
            .map(|task| {
                let (client, foreign) = (client.clone(), foreign.clone());
                tokio::spawn(async move {
                    let mut fences = Vec::new();
                    for round in 0..rounds {
                        if task == 0 && round % 2 == 0 {
                            let error = client.lock(&foreign).try_acquire().await.unwrap_err();
                            assert!(error.is_unavailable(), "{error}");
                            continue;
                        }
                        let key = format!("batch-{task}");
                        let guard = client.lock(&key).try_acquire().await.unwrap().unwrap();
                        fences.push(guard.fencing_token().get());
                        assert!(guard.extend(Duration::from_secs(20)).await.unwrap());
                        assert!(guard.remaining() > Duration::from_secs(10));
                        assert!(guard.release().await.unwrap());
                    }
                    fences
                })
            })
            .collect();
        for task in tasks {
            let fences = task.await.unwrap();
            assert!(
                fences.windows(2).all(|pair| pair[0] < pair[1]),
                "{fences:?}"
            );
        }
        let calls = backend.commands_sent() - before;
        let operations = 64 * rounds * 3;
        assert!(
            calls < operations,
            "{calls} script calls for {operations} acquisitions, renewals and releases: no batch formed"
        );
    })
    .await;
}

/// `wait_for_aof` on a server without `WAITAOF` (the command came in Redis 7.2; the stack's
/// Redis is Debian bookworm's 7.0) fails `connect` as a setting to change, naming the version,
/// rather than every grant; on 7.2 or later the same settings connect.
#[tokio::test]
async fn wait_for_aof_before_redis_7_2_is_a_config_error() {
    let Some(url) = redis_url() else { return };
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut admin_connection(&url).await)
        .await
        .unwrap();
    let version: Vec<u32> = info
        .lines()
        .find_map(|line| line.strip_prefix("redis_version:"))
        .unwrap()
        .split('.')
        .map(|part| part.trim().parse().unwrap())
        .collect();
    let outcome = RedisBackend::builder(url)
        .wait_for_aof(false, 1, Duration::from_millis(100))
        .connect()
        .await;
    if version[..2] >= [7, 2][..] {
        outcome.unwrap();
        return;
    }
    let error = outcome.unwrap_err();
    assert!(
        matches!(error, lock_core::LockError::InvalidConfig(_)),
        "{error}"
    );
    assert!(error.to_string().contains("7.2"), "{error}");
}
