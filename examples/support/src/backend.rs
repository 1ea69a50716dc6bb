//! Which backend an app runs on (`--backend`), and where the servers are: the flag, else the
//! env var `cargo xtask` sets, else the port the xtask stack uses.
//!
//! ```
//! use example_support::backend::BackendKind;
//!
//! assert_eq!(BackendKind::parse("redis"), Ok(BackendKind::Redis));
//! assert!(BackendKind::parse("dynamo").is_err());
//! ```

use crate::flags::Flags;

/// Which backend a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// In-process memory (tasks of one process).
    Memory,
    /// The Redis server at `LOCK_TEST_REDIS_URL` (or `--redis-url`).
    Redis,
    /// The PostgreSQL lock table at `LOCK_TEST_POSTGRES_URL`.
    Postgres,
    /// The MySQL / MariaDB lock table at `LOCK_TEST_MYSQL_URL`.
    Mysql,
    /// The ZooKeeper ensemble at `LOCK_TEST_ZOOKEEPER_URL`.
    Zookeeper,
    /// The etcd cluster at `LOCK_TEST_ETCD_URL`.
    Etcd,
    /// RedLock over the independent Redis nodes at `LOCK_TEST_REDLOCK_URLS`.
    Redlock,
    /// The Redis Cluster whose nodes are at `LOCK_TEST_REDIS_CLUSTER_URLS`.
    RedisCluster,
    /// The primary the sentinels at `LOCK_TEST_REDIS_SENTINEL_URLS` name for
    /// `LOCK_TEST_REDIS_SENTINEL_SERVICE`, followed across failovers.
    RedisSentinel,
}

impl BackendKind {
    /// Parses `memory`, `redis`, `postgres`, `mysql`, `zookeeper`, `etcd`, `redlock`,
    /// `redis-cluster` or `redis-sentinel`.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "memory" => Ok(Self::Memory),
            "redis" => Ok(Self::Redis),
            "postgres" => Ok(Self::Postgres),
            "mysql" => Ok(Self::Mysql),
            "zookeeper" => Ok(Self::Zookeeper),
            "etcd" => Ok(Self::Etcd),
            "redlock" => Ok(Self::Redlock),
            "redis-cluster" => Ok(Self::RedisCluster),
            "redis-sentinel" => Ok(Self::RedisSentinel),
            other => Err(format!(
                "unknown backend {other:?}; expected memory, redis, postgres, mysql, zookeeper, \
                 etcd, redlock, redis-cluster or redis-sentinel"
            )),
        }
    }

    /// The backend's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Redis => "redis",
            Self::Postgres => "postgres",
            Self::Mysql => "mysql",
            Self::Zookeeper => "zookeeper",
            Self::Etcd => "etcd",
            Self::Redlock => "redlock",
            Self::RedisCluster => "redis-cluster",
            Self::RedisSentinel => "redis-sentinel",
        }
    }
}

impl BackendKind {
    /// Whether this build of the flash-sale shop can keep its stock on this backend: memory
    /// and Redis always, PostgreSQL and MySQL with the features of those names.
    ///
    /// ```
    /// use example_support::backend::BackendKind;
    ///
    /// assert!(BackendKind::Redis.has_shop() && !BackendKind::Etcd.has_shop());
    /// ```
    #[must_use]
    pub fn has_shop(self) -> bool {
        match self {
            Self::Memory | Self::Redis => true,
            Self::Postgres => cfg!(feature = "postgres"),
            Self::Mysql => cfg!(feature = "mysql"),
            Self::Zookeeper
            | Self::Etcd
            | Self::Redlock
            | Self::RedisCluster
            | Self::RedisSentinel => false,
        }
    }
}

/// The Redis URL: `--redis-url`, else `LOCK_TEST_REDIS_URL`, else the xtask stack's default.
#[must_use]
pub fn redis_url(flags: &Flags) -> String {
    flags
        .get("redis-url")
        .map(str::to_owned)
        .or_else(|| std::env::var("LOCK_TEST_REDIS_URL").ok())
        .unwrap_or_else(|| "redis://127.0.0.1:26379/".to_owned())
}

/// The PostgreSQL URL: `LOCK_TEST_POSTGRES_URL`, else the xtask stack's default.
#[must_use]
pub fn postgres_url() -> String {
    server_url(
        "LOCK_TEST_POSTGRES_URL",
        "postgres://postgres@127.0.0.1:25432/postgres",
    )
}

/// The MySQL URL: `LOCK_TEST_MYSQL_URL`, else the xtask stack's default.
#[must_use]
pub fn mysql_url() -> String {
    server_url("LOCK_TEST_MYSQL_URL", "mysql://root@127.0.0.1:23306/locks")
}

/// RedLock's node URLs: `LOCK_TEST_REDLOCK_URLS` (comma-separated, as `cargo xtask` sets it),
/// else the xtask stack's five nodes.
#[must_use]
pub fn redlock_urls() -> Vec<String> {
    server_url(
        "LOCK_TEST_REDLOCK_URLS",
        "redis://127.0.0.1:26391/,redis://127.0.0.1:26392/,redis://127.0.0.1:26393/,\
         redis://127.0.0.1:26394/,redis://127.0.0.1:26395/",
    )
    .split(',')
    .map(str::to_owned)
    .collect()
}

/// The Redis Cluster's node URLs: `LOCK_TEST_REDIS_CLUSTER_URLS` (comma-separated, as `cargo
/// xtask` sets it), else the xtask stack's six nodes.
#[must_use]
pub fn redis_cluster_urls() -> Vec<String> {
    url_list(
        "LOCK_TEST_REDIS_CLUSTER_URLS",
        "redis://127.0.0.1:26401/,redis://127.0.0.1:26402/,redis://127.0.0.1:26403/,\
         redis://127.0.0.1:26404/,redis://127.0.0.1:26405/,redis://127.0.0.1:26406/",
    )
}

/// The sentinels' URLs: `LOCK_TEST_REDIS_SENTINEL_URLS` (comma-separated), else the xtask
/// stack's three sentinels.
#[must_use]
pub fn redis_sentinel_urls() -> Vec<String> {
    url_list(
        "LOCK_TEST_REDIS_SENTINEL_URLS",
        "redis://127.0.0.1:26421/,redis://127.0.0.1:26422/,redis://127.0.0.1:26423/",
    )
}

/// The name the sentinels monitor the primary under: `LOCK_TEST_REDIS_SENTINEL_SERVICE`, else
/// the xtask stack's `lock-primary`.
#[must_use]
pub fn redis_sentinel_service() -> String {
    server_url("LOCK_TEST_REDIS_SENTINEL_SERVICE", "lock-primary")
}

/// The Sentinel set's data nodes (primary and replicas, whichever is which now):
/// `LOCK_TEST_REDIS_SENTINEL_NODES` (comma-separated), else the xtask stack's three.
#[must_use]
pub fn redis_sentinel_nodes() -> Vec<String> {
    url_list(
        "LOCK_TEST_REDIS_SENTINEL_NODES",
        "redis://127.0.0.1:26411/,redis://127.0.0.1:26412/,redis://127.0.0.1:26413/",
    )
}

/// The comma-separated URLs of `var`, else of `default`.
fn url_list(var: &str, default: &str) -> Vec<String> {
    server_url(var, default)
        .split(',')
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A server's URL: the env var `var` (as `cargo xtask` sets it), else the xtask stack's default.
#[must_use]
pub fn server_url(var: &str, default: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| default.to_owned())
}
