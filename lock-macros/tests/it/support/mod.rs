//! What the behaviour and HTTP tests share: clients on each backend, deleting a lock behind
//! its holder, the Redis server's address, and (in [`processes`]) one test run in two
//! processes.

pub(crate) mod processes;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lock_core::{LeaseMode, LockClient, MemoryBackend, RedisBackend};

/// The watchdog lease every test client uses: short, so a lost lease shows within
/// `LEASE / 3` on Redis too.
pub(crate) const LEASE: Duration = Duration::from_millis(300);

/// A client, its namespace, and a way to delete its locks behind their holders.
pub(crate) struct Rig {
    pub(crate) client: LockClient,
    pub(crate) namespace: String,
    pub(crate) backend: Backend,
}

/// The backend behind a [`Rig`].
pub(crate) enum Backend {
    Memory(MemoryBackend),
    Redis {
        url: String,
        backend: RedisBackend,
        admin: redis::aio::MultiplexedConnection,
    },
}

/// A namespace no other test, run or process uses.
pub(crate) fn unique_namespace(tag: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{tag}-{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A client on a fresh in-process backend.
pub(crate) fn memory() -> Rig {
    let backend = MemoryBackend::new();
    let namespace = unique_namespace("mem");
    let client = LockClient::builder(backend.clone())
        .namespace(namespace.clone())
        .lease(LeaseMode::watchdog(LEASE))
        .build()
        .unwrap();
    Rig {
        client,
        namespace,
        backend: Backend::Memory(backend),
    }
}

/// The Redis server's URL from `LOCK_TEST_REDIS_URL`. Unset, it fails the test when servers
/// are required (`LOCK_TEST_REQUIRE_SERVERS=1` or `CI`), and otherwise says loudly it skipped.
pub(crate) fn redis_url() -> Option<String> {
    match std::env::var("LOCK_TEST_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                !lock_testing::servers_required(),
                "LOCK_TEST_REDIS_URL is not set but servers are required; run `cargo xtask test`"
            );
            // Straight to stderr, past the test harness's capture, once per test binary.
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                use std::io::Write;
                let _written = writeln!(
                    std::io::stderr(),
                    "SKIPPED: LOCK_TEST_REDIS_URL is not set; the #[distributed_lock] Redis tests \
                     did not run (`cargo xtask test` starts a server)"
                );
            });
            None
        }
    }
}

/// A raw connection for test bookkeeping (`DEL`, `INCR`).
pub(crate) async fn admin(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("cannot reach Redis at {url}: {e}"))
}

/// A client on the Redis server in `namespace`, or `None` when there is none configured.
pub(crate) async fn redis_in(namespace: &str) -> Option<Rig> {
    let url = redis_url()?;
    let backend = RedisBackend::connect(&url).await.unwrap();
    let client = LockClient::builder(backend.clone())
        .namespace(namespace)
        .lease(LeaseMode::watchdog(LEASE))
        .build()
        .unwrap();
    Some(Rig {
        client,
        namespace: namespace.to_owned(),
        backend: Backend::Redis {
            admin: admin(&url).await,
            url,
            backend,
        },
    })
}

/// A client on the Redis server in a fresh namespace.
pub(crate) async fn redis() -> Option<Rig> {
    redis_in(&unique_namespace("redis")).await
}

impl Rig {
    /// `namespace:key`, as backends store it.
    pub(crate) fn full_key(&self, key: &str) -> String {
        format!("{}:{key}", self.namespace)
    }

    /// Deletes the lock `key` (without namespace) as an operator would; true when it existed.
    pub(crate) async fn delete_behind(&self, key: &str) -> bool {
        let full = self.full_key(key);
        match &self.backend {
            Backend::Memory(memory) => memory.simulate_external_delete(&full),
            Backend::Redis { backend, admin, .. } => {
                let deleted: i64 = redis::cmd("DEL")
                    .arg(backend.redis_key(&full))
                    .query_async(&mut admin.clone())
                    .await
                    .unwrap();
                deleted == 1
            }
        }
    }

    /// How long a lost lease can go unnoticed on this backend: memory tells at once, Redis
    /// at the next renewal.
    pub(crate) fn detection_bound(&self) -> Duration {
        match self.backend {
            Backend::Memory(_) => Duration::ZERO,
            Backend::Redis { .. } => LEASE / 3,
        }
    }
}

/// Sends one HTTP/1.1 request to `addr` and returns the status code and body (a raw request
/// on a fresh connection: enough for the handlers under test, no client crate needed).
pub(crate) async fn http(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    json: &str,
) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{json}",
        json.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    (status, body.to_owned())
}
