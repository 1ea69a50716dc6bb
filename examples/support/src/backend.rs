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
}

impl BackendKind {
    /// Parses `memory`, `redis`, `postgres`, `mysql`, `zookeeper`, `etcd` or `redlock`.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "memory" => Ok(Self::Memory),
            "redis" => Ok(Self::Redis),
            "postgres" => Ok(Self::Postgres),
            "mysql" => Ok(Self::Mysql),
            "zookeeper" => Ok(Self::Zookeeper),
            "etcd" => Ok(Self::Etcd),
            "redlock" => Ok(Self::Redlock),
            other => Err(format!(
                "unknown backend {other:?}; expected memory, redis, postgres, mysql, zookeeper, etcd or redlock"
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
            Self::Zookeeper | Self::Etcd | Self::Redlock => false,
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

/// A server's URL: the env var `var` (as `cargo xtask` sets it), else the xtask stack's default.
#[must_use]
pub fn server_url(var: &str, default: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| default.to_owned())
}
