//! Shared by the Redis suites: the stack's server, connections of the test's own to look
//! behind the toolkit's back, and backends with a key prefix.

use lock_core::redis::RedisConnection;
use lock_core::RedisBackend;

use crate::acl_support::AclRedis;

/// The stack's Redis (`LOCK_TEST_REDIS_URL`); `None` (after saying so) when the suite may skip.
pub(crate) fn redis_url() -> Option<String> {
    lock_testing::server_url("LOCK_TEST_REDIS_URL").expect("test server")
}

/// A connection of the test's own to the server at `url` (every key and command).
pub(crate) async fn admin_connection(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("cannot reach Redis at {url}: {e}"))
}

/// A backend on the server at `url` with the key prefix `prefix`.
pub(crate) async fn prefixed_backend(url: &str, prefix: &str) -> RedisBackend {
    RedisBackend::builder(url)
        .key_prefix(prefix)
        .connect()
        .await
        .unwrap()
}

/// The keys of the server whose names hold `name`.
pub(crate) async fn keys_naming(
    connection: &mut redis::aio::MultiplexedConnection,
    name: &str,
) -> Vec<String> {
    let mut cursor = 0u64;
    let mut keys = Vec::new();
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("*{name}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(connection)
            .await
            .unwrap();
        keys.extend(batch);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}

/// The conformance suite's fault injection on Redis: an admin connection and the backend that
/// names the keys.
pub(crate) struct BehindTheBack<C = redis::aio::MultiplexedConnection> {
    pub(crate) admin: C,
    pub(crate) names: RedisBackend,
}

impl<C: redis::aio::ConnectionLike + Clone + Send + Sync> BehindTheBack<C> {
    /// Deletes the lock `full_key`, behind its holder's back.
    pub(crate) async fn delete_behind(&self, full_key: &str) {
        let deleted: i64 = redis::cmd("DEL")
            .arg(self.names.redis_key(full_key))
            .query_async(&mut self.admin.clone())
            .await
            .unwrap();
        assert_eq!(deleted, 1, "nothing to delete");
    }

    /// The waiter entries of `full_key`.
    pub(crate) async fn queued(&self, full_key: &str) -> usize {
        redis::cmd("ZCARD")
            .arg(self.names.waiters_key(full_key))
            .query_async(&mut self.admin.clone())
            .await
            .unwrap()
    }
}

/// The Redis server a suite's instances share, each on connections of its own: the stack's
/// (key prefix `lock`), or a server of the test's own as an ACL user limited to its key prefix
/// (`~svc:*`, `&svc:*`; see `acl_support.rs`).
pub(crate) struct SharedRedis {
    pub(crate) url: String,
    /// The backends' key prefix.
    prefix: String,
    /// The server, when it is the test's own (an ACL user's): kept until the test ends.
    _acl: Option<AclRedis>,
}

impl SharedRedis {
    /// The stack's Redis; `None` (after saying so) when the suite may skip.
    pub(crate) fn stack() -> Option<Self> {
        redis_url().map(|url| Self {
            url,
            prefix: "lock".to_owned(),
            _acl: None,
        })
    }

    /// A server of the test's own, as the ACL user `svc` limited to its key prefix.
    pub(crate) async fn acl_user() -> Self {
        let acl = AclRedis::start("svc").await;
        Self {
            url: acl.url(),
            prefix: acl.prefix().to_owned(),
            _acl: Some(acl),
        }
    }

    /// A backend on a connection of its own, with the key prefix.
    pub(crate) async fn backend(&self) -> RedisBackend {
        prefixed_backend(&self.url, &self.prefix).await
    }
}

/// A Redis deployment of the stack beside its single server: the cluster (`cargo xtask stack
/// up --redis-cluster`: 3 primaries, 3 replicas) or the Sentinel set (`--redis-sentinel`: a
/// primary, 2 replicas, 3 sentinels).
#[derive(Clone, Debug)]
pub(crate) enum Deployment {
    /// The cluster's node URLs.
    Cluster(Vec<String>),
    /// The sentinels' URLs and the service they monitor.
    Sentinel {
        sentinels: Vec<String>,
        service: String,
    },
}

/// The comma-separated URLs in `variable`; `None` (after saying so) when the suite may skip.
fn urls(variable: &str) -> Option<Vec<String>> {
    let urls = lock_testing::server_url(variable).expect("test server")?;
    Some(urls.split(',').map(str::to_owned).collect())
}

impl Deployment {
    /// The stack's cluster (`LOCK_TEST_REDIS_CLUSTER_URLS`).
    pub(crate) fn cluster() -> Option<Self> {
        urls("LOCK_TEST_REDIS_CLUSTER_URLS").map(Self::Cluster)
    }

    /// The stack's Sentinel set (`LOCK_TEST_REDIS_SENTINEL_URLS`, the service in
    /// `LOCK_TEST_REDIS_SENTINEL_SERVICE`, `lock-primary` by default).
    pub(crate) fn sentinel() -> Option<Self> {
        let sentinels = urls("LOCK_TEST_REDIS_SENTINEL_URLS")?;
        let service = std::env::var("LOCK_TEST_REDIS_SENTINEL_SERVICE")
            .unwrap_or_else(|_| "lock-primary".to_owned());
        Some(Self::Sentinel { sentinels, service })
    }

    /// A backend builder for the deployment.
    pub(crate) fn builder(&self) -> lock_core::redis::RedisBackendBuilder {
        match self {
            Self::Cluster(nodes) => RedisBackend::builder_cluster(nodes.clone()),
            Self::Sentinel { sentinels, service } => {
                RedisBackend::builder_sentinel(sentinels.clone(), service.clone())
            }
        }
    }

    /// A backend on connections of its own.
    pub(crate) async fn backend(&self) -> RedisBackend {
        self.builder().connect().await.unwrap()
    }

    /// A connection of the test's own (every key and command): a cluster connection, or one to
    /// the primary the sentinels name now.
    pub(crate) async fn admin(&self) -> RedisConnection {
        match self {
            Self::Cluster(nodes) => redis::cluster::ClusterClient::new(nodes.clone())
                .unwrap()
                .get_async_connection()
                .await
                .unwrap()
                .into(),
            Self::Sentinel { sentinels, service } => {
                let mut sentinel = redis::sentinel::SentinelClient::build(
                    sentinels.clone(),
                    service.clone(),
                    None,
                    redis::sentinel::SentinelServerType::Master,
                )
                .unwrap();
                let client = sentinel.async_get_client().await.unwrap();
                redis::aio::ConnectionManager::new(client)
                    .await
                    .unwrap()
                    .into()
            }
        }
    }

    /// The fault injection of the conformance suite on this deployment.
    pub(crate) async fn behind(&self) -> BehindTheBack<RedisConnection> {
        BehindTheBack {
            admin: self.admin().await,
            names: self.backend().await,
        }
    }
}
