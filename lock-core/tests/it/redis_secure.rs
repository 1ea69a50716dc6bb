//! The stack's production-like Sentinel set (`cargo xtask stack up --redis-secure`): Redis 8
//! data nodes and a sentinel that speak only TLS (certificates from a private CA, in
//! `LOCK_TEST_REDIS_SECURE_CA`), with ACL users (the default user off) and the append-only file
//! on. Checked here: the backend reaches the primary through the sentinel over TLS as an ACL
//! user, both from URLs and from the application's own `SentinelClient`; it follows a
//! failover there; and `wait_for_aof` (`WAITAOF`, Redis 7.2+) acknowledges grants or fails
//! closed.
//!
//! The tests share one set and one of them fails it over, so they take turns ([`TURN`]).

use std::time::Duration;

use lock_core::{LockClient, RedisBackend};
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{IntoConnectionInfo, TlsCertificates};

use crate::conformance::{self, bounded, unique_key};

/// One test at a time on the set.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The set, as the stack names it.
struct Secure {
    /// The sentinel's URL, with the ACL user and password.
    sentinel: String,
    /// The service the sentinel monitors.
    service: String,
    /// The private CA's certificate (PEM).
    ca: Vec<u8>,
}

impl Secure {
    /// The stack's set; `None` (after saying so) when the suite may skip.
    #[allow(
        deprecated,
        reason = "rustls 0.23.48 deprecates ring's provider; the tests pick ring, as lock-core does"
    )]
    fn stack() -> Option<Self> {
        // The test builds redis-rs TLS clients of its own before any backend (which would
        // install `ring` when the process has no provider), as an application may.
        // Err: one is installed already, which is as good.
        rustls::crypto::ring::default_provider()
            .install_default()
            .ok();
        let sentinel = lock_testing::server_url("LOCK_TEST_REDIS_SECURE_SENTINEL_URL")
            .expect("test server")?;
        let service = std::env::var("LOCK_TEST_REDIS_SECURE_SERVICE")
            .unwrap_or_else(|_| "lock-secure".to_owned());
        let ca_file = std::env::var("LOCK_TEST_REDIS_SECURE_CA").expect("the CA beside the URL");
        let ca = std::fs::read(&ca_file).unwrap_or_else(|e| panic!("{ca_file}: {e}"));
        Some(Self {
            sentinel,
            service,
            ca,
        })
    }

    fn certificates(&self) -> TlsCertificates {
        TlsCertificates {
            client_tls: None,
            root_cert: Some(self.ca.clone()),
        }
    }

    /// The ACL user and password in the sentinel's URL (the data nodes have the same user).
    fn user(&self) -> (String, String) {
        let info = self.sentinel.as_str().into_connection_info().unwrap();
        let settings = info.redis_settings();
        (
            settings.username().unwrap().to_owned(),
            settings.password().unwrap().to_owned(),
        )
    }

    /// A `SentinelClient` as an application with a private CA builds it: the CA and the user
    /// towards the sentinel and towards the data nodes.
    fn sentinel_client(&self) -> SentinelClient {
        let (user, password) = self.user();
        self.sentinel_client_as(&user, &password, &password)
    }

    /// [`sentinel_client`](Self::sentinel_client) with the passwords given, towards the
    /// sentinel and towards the data nodes.
    fn sentinel_client_as(
        &self,
        user: &str,
        sentinel_password: &str,
        password: &str,
    ) -> SentinelClient {
        let address = self
            .sentinel
            .as_str()
            .into_connection_info()
            .unwrap()
            .addr()
            .clone();
        SentinelClientBuilder::new([address], &self.service, SentinelServerType::Master)
            .unwrap()
            .set_client_to_sentinel_username(user)
            .set_client_to_sentinel_password(sentinel_password)
            .set_client_to_sentinel_certificates(self.certificates())
            .set_client_to_redis_tls_mode(redis::TlsMode::Secure)
            .set_client_to_redis_username(user)
            .set_client_to_redis_password(password)
            .set_client_to_redis_certificates(self.certificates())
            .build()
            .unwrap()
    }

    /// A backend through the application's `SentinelClient`.
    fn builder(&self) -> lock_core::redis::RedisBackendBuilder {
        RedisBackend::builder_from_sentinel_client(self.sentinel_client())
    }

    /// A connection to the sentinel itself.
    async fn sentinel_connection(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::build_with_tls(self.sentinel.as_str(), self.certificates())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// The port of the primary the sentinel names now.
    async fn primary_port(&self) -> u16 {
        let (_, port): (String, u16) = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(&self.service)
            .query_async(&mut self.sentinel_connection().await)
            .await
            .unwrap();
        port
    }

    /// Whether the primary the sentinel names has its replica back: a write there reaches the
    /// append-only files of both within a moment (`WAITAOF 1 1`), as the acknowledgement tests
    /// need. After a failover the demoted primary rejoins as a replica only when the sentinel
    /// next looks at it (every 10 s), and then syncs and rewrites its file.
    async fn whole(&self) -> bool {
        let Ok(client) = self.sentinel_client().async_get_client().await else {
            return false;
        };
        let Ok(mut primary) = client.get_multiplexed_async_connection().await else {
            return false;
        };
        let written: redis::RedisResult<()> = redis::cmd("SET")
            .arg("secure-set-check")
            .arg(1)
            .query_async(&mut primary)
            .await;
        let acknowledged: redis::RedisResult<(u64, u64)> = redis::cmd("WAITAOF")
            .arg(1)
            .arg(1)
            .arg(200)
            .query_async(&mut primary)
            .await;
        written.is_ok() && acknowledged == Ok((1, 1))
    }

    /// Waits (bounded) until the set is [`whole`](Self::whole).
    async fn until_whole(&self) {
        let started = tokio::time::Instant::now();
        while !self.whole().await {
            assert!(
                started.elapsed() < Duration::from_secs(40),
                "the secure set's primary never had its replica back"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The ACL users are checked on both legs, and a failed login says so without the password:
/// a wrong password towards the sentinel or towards the data nodes fails `connect`. The URL
/// path cannot carry a private CA: a `rediss://` sentinel URL alone fails the handshake, which
/// is why the backend also takes the application's `SentinelClient`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_passwords_and_an_unknown_ca_fail_connect() {
    let Some(set) = Secure::stack() else { return };
    let _turn = TURN.lock().await;
    bounded(async {
        let (user, password) = set.user();
        for (sentinel_password, data_password) in [
            ("not-the-password", password.as_str()),
            (password.as_str(), "not-the-password"),
        ] {
            let client = set.sentinel_client_as(&user, sentinel_password, data_password);
            let error = RedisBackend::builder_from_sentinel_client(client)
                .connect()
                .await
                .unwrap_err();
            assert!(error.is_unavailable(), "{}", error.with_causes());
            assert!(
                !error.with_causes().contains("not-the-password"),
                "{}",
                error.with_causes()
            );
        }
        let error = RedisBackend::builder_sentinel([set.sentinel.as_str()], set.service.as_str())
            .connect()
            .await
            .unwrap_err();
        assert!(error.is_unavailable(), "{}", error.with_causes());
        assert!(
            !error.with_causes().contains(&password),
            "{}",
            error.with_causes()
        );
        // The right ones connect.
        let locks = conformance::client_on(set.builder().connect().await.unwrap());
        let guard = locks.lock(unique_key("secure-login")).await.unwrap();
        assert!(guard.release().await.unwrap());
    })
    .await;
}

/// Through the application's `SentinelClient` (the private CA checked on both legs), a lock
/// and a semaphore work; after `SENTINEL FAILOVER` the backend follows the new primary and
/// the fencing token keeps increasing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_client_with_a_private_ca_follows_a_failover() {
    let Some(set) = Secure::stack() else { return };
    let _turn = TURN.lock().await;
    conformance::bounded_for(Duration::from_secs(90), async {
        let locks = conformance::client_on(set.builder().connect().await.unwrap());
        let key = unique_key("secure-failover");
        let before = locks.lock(&key).await.unwrap();
        let token = before.fencing_token();
        assert!(before.release().await.unwrap());
        let permits = locks.semaphore(unique_key("secure-permits"), 2);
        let permit = permits.acquire(1).await.unwrap();
        assert!(permit.release().await.unwrap());

        let old = set.primary_port().await;
        let () = redis::cmd("SENTINEL")
            .arg("FAILOVER")
            .arg(&set.service)
            .query_async(&mut set.sentinel_connection().await)
            .await
            .unwrap();
        let moved = tokio::time::Instant::now();
        while set.primary_port().await == old {
            assert!(moved.elapsed() < Duration::from_secs(20), "no failover");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The next grant reaches the new primary: the old one answers READONLY (or is
        // restarting), and the backend asks the sentinel again.
        let after = locks
            .lock(&key)
            .acquire_within(Duration::from_secs(20))
            .await;
        let after = after.unwrap().expect("a grant on the new primary");
        assert!(
            after.fencing_token() > token,
            "{} after {token}",
            after.fencing_token()
        );
        assert!(after.release().await.unwrap());
        // The demoted primary rejoins as the new one's replica before the next test.
        set.until_whole().await;
    })
    .await;
}

/// `wait_for_replicas(1, …)` with `wait_for_aof(true, 0, …)`: every grant (the lock's and a
/// fair lock's) is in the replica's memory and on the primary's disk before the caller has it.
/// `wait_for_aof(true, 1, …)` also waits for the replica's disk, which it reports with its
/// once-a-second acknowledgement: given a timeout above a second, that grant comes too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_wait_for_the_append_only_files() {
    let Some(set) = Secure::stack() else { return };
    let _turn = TURN.lock().await;
    conformance::bounded_for(Duration::from_secs(60), async {
        set.until_whole().await;
        let backend = set
            .builder()
            .wait_for_replicas(1, Duration::from_millis(500))
            .wait_for_aof(true, 0, Duration::from_millis(500))
            .connect()
            .await
            .unwrap();
        let locks = LockClient::new(backend);
        for n in 0..10 {
            let guard = locks
                .lock(unique_key(&format!("aof-{n}")))
                .try_acquire()
                .await
                .unwrap_or_else(|e| panic!("{}", e.with_causes()))
                .expect("a free key");
            assert!(guard.release().await.unwrap());
        }
        let guard = locks.fair_lock(unique_key("aof-fair")).await.unwrap();
        assert!(guard.release().await.unwrap());

        let on_both_disks = LockClient::new(
            set.builder()
                .response_timeout(Duration::from_secs(4))
                .wait_for_aof(true, 1, Duration::from_millis(2500))
                .connect()
                .await
                .unwrap(),
        );
        let guard = on_both_disks
            .lock(unique_key("aof-replica"))
            .try_acquire()
            .await
            .unwrap_or_else(|e| panic!("{}", e.with_causes()))
            .expect("a free key");
        assert!(guard.release().await.unwrap());
    })
    .await;
}

/// Asking for more append-only files than there are replicas fails the acquire closed, with
/// an error saying what was reached, and gives the grant back: the key is free at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aof_acknowledgement_short_of_replicas_fails_closed() {
    let Some(set) = Secure::stack() else { return };
    let _turn = TURN.lock().await;
    conformance::bounded_for(Duration::from_secs(60), async {
        set.until_whole().await;
        let strict = LockClient::new(
            set.builder()
                .wait_for_aof(true, 2, Duration::from_millis(100))
                .connect()
                .await
                .unwrap(),
        );
        let key = unique_key("aof-short");
        let error = strict.lock(&key).try_acquire().await.unwrap_err();
        assert!(error.is_unavailable(), "{error}");
        let message = error.with_causes();
        assert!(message.contains("of 2 replicas"), "{message}");
        assert!(message.contains("given back"), "{message}");
        let plain = LockClient::new(set.builder().connect().await.unwrap());
        let guard = plain.lock(&key).try_acquire().await.unwrap();
        assert!(guard.is_some(), "the short grant was not given back");
    })
    .await;
}
