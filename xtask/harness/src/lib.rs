//! The tooling behind `cargo xtask demo|stress|bench|chaos` and the example apps' tests, one
//! folder per tool, each driven by its binaries in `src/bin`:
//!
//! - [`bench`](mod@bench): the lock figures and their raw floors (`bench`, `allocations`);
//! - [`chaos`]: the fault catalogue (`chaos`);
//! - [`stress`]: processes × tasks hammering a lock or primitive (`stress`);
//! - [`demo`]: the demos' scenarios and the checks the example apps' tests share (`demo`,
//!   `inventory`, `leader`; the stampede and payments demos are the `stampede-demo` and
//!   `payments-demo` crates beside this one);
//! - [`app_tests`]: the example apps' integration tests, written once for both frameworks;
//! - [`shared`]: what several tools use (the HTTP load, the fault proxy); at the root,
//!   connecting a backend, the servers' URLs and summarising latencies.
//!
//! The apps' own code (the shop, the product pages, the payments service, their flags) is the
//! `example-support` crate's, in `examples/support`.

pub mod app_tests;
pub mod bench;
pub mod chaos;
pub mod demo;
pub mod shared;
pub mod stress;

use std::time::Duration;

use example_support::backend::{server_url, BackendKind};
use lock_core::{LockClient, LockError, MemoryBackend, RedisBackend};

/// A connected backend: the lock client, and the Redis handle when there is one (for its
/// command counters).
#[derive(Clone)]
pub struct Connected {
    /// The lock client.
    pub locks: LockClient,
    /// The Redis backend behind `locks`, when it is Redis.
    pub redis: Option<RedisBackend>,
}

/// Connects `kind` under `namespace`; `memory` shares `shared_memory`.
pub async fn connect(
    kind: BackendKind,
    redis_url: &str,
    namespace: &str,
    shared_memory: &MemoryBackend,
) -> Result<Connected, LockError> {
    match kind {
        BackendKind::Memory => Ok(Connected {
            locks: LockClient::builder(shared_memory.clone())
                .namespace(namespace)
                .build()?,
            redis: None,
        }),
        BackendKind::Redis => {
            let backend = RedisBackend::connect(redis_url).await?;
            Ok(Connected {
                locks: LockClient::builder(backend.clone())
                    .namespace(namespace)
                    .build()?,
                redis: Some(backend),
            })
        }
        #[cfg(feature = "servers")]
        BackendKind::Postgres => {
            let backend =
                lock_core::PostgresBackend::connect(&example_support::backend::postgres_url())
                    .await?;
            Ok(Connected {
                locks: LockClient::builder(backend).namespace(namespace).build()?,
                redis: None,
            })
        }
        #[cfg(feature = "servers")]
        BackendKind::Mysql => {
            let backend = lock_core::MySqlBackend::connect(&mysql_url()).await?;
            Ok(Connected {
                locks: LockClient::builder(backend).namespace(namespace).build()?,
                redis: None,
            })
        }
        #[cfg(feature = "servers")]
        BackendKind::Zookeeper => Ok(Connected {
            locks: LockClient::builder(
                lock_core::ZooKeeperBackend::connect(&zookeeper_url()).await?,
            )
            .namespace(namespace)
            .build()?,
            redis: None,
        }),
        #[cfg(feature = "servers")]
        BackendKind::Etcd => Ok(Connected {
            locks: LockClient::builder(lock_core::EtcdBackend::connect(&etcd_url()).await?)
                .namespace(namespace)
                .build()?,
            redis: None,
        }),
        BackendKind::Redlock => {
            let urls = example_support::backend::redlock_urls();
            let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
            Ok(Connected {
                locks: LockClient::builder(lock_core::RedLock::connect(&urls).await?)
                    .namespace(namespace)
                    .build()?,
                redis: None,
            })
        }
        #[cfg(feature = "servers")]
        BackendKind::RedisCluster => {
            let backend =
                RedisBackend::builder_cluster(example_support::backend::redis_cluster_urls())
                    .connect()
                    .await?;
            Ok(Connected {
                locks: LockClient::builder(backend.clone())
                    .namespace(namespace)
                    .build()?,
                redis: Some(backend),
            })
        }
        #[cfg(feature = "servers")]
        BackendKind::RedisSentinel => {
            let backend = RedisBackend::builder_sentinel(
                example_support::backend::redis_sentinel_urls(),
                example_support::backend::redis_sentinel_service(),
            )
            .connect()
            .await?;
            Ok(Connected {
                locks: LockClient::builder(backend.clone())
                    .namespace(namespace)
                    .build()?,
                redis: Some(backend),
            })
        }
        #[cfg(not(feature = "servers"))]
        other => Err(LockError::InvalidConfig(format!(
            "the {} backend needs lock-harness's `servers` feature",
            other.name()
        ))),
    }
}

/// Where an example app's binary `name` is: in `bin_dir` (a `--bin-dir` flag), else next to
/// the running program (`cargo xtask demo ...` builds the apps into the same directory).
#[must_use]
pub fn app_binary(bin_dir: Option<&str>, name: &str) -> std::path::PathBuf {
    let dir = bin_dir.map_or_else(
        || {
            std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(std::path::PathBuf::from))
                .unwrap_or_default()
        },
        std::path::PathBuf::from,
    );
    dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// The ZooKeeper connect string: `LOCK_TEST_ZOOKEEPER_URL`, else the xtask stack's default.
#[must_use]
pub fn zookeeper_url() -> String {
    std::env::var("LOCK_TEST_ZOOKEEPER_URL").unwrap_or_else(|_| "127.0.0.1:22181".to_owned())
}

/// The etcd endpoints: `LOCK_TEST_ETCD_URL`, else the xtask stack's default.
#[must_use]
pub fn etcd_url() -> String {
    std::env::var("LOCK_TEST_ETCD_URL").unwrap_or_else(|_| "http://127.0.0.1:22379".to_owned())
}

/// The MySQL URL: `LOCK_TEST_MYSQL_URL`, else the xtask stack's default.
#[must_use]
pub fn mysql_url() -> String {
    server_url("LOCK_TEST_MYSQL_URL", "mysql://root@127.0.0.1:23306/locks")
}

/// p50/p99/max of a set of durations.
#[derive(Clone, Copy, Debug, Default)]
pub struct Percentiles {
    /// The median.
    pub p50: Duration,
    /// The 99th percentile.
    pub p99: Duration,
    /// The largest.
    pub max: Duration,
}

impl Percentiles {
    /// Summarises `samples` (sorts them).
    #[must_use]
    pub fn of(samples: &mut [Duration]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        samples.sort_unstable();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Self {
            p50: at(0.5),
            p99: at(0.99),
            max: samples[samples.len() - 1],
        }
    }
}

/// Formats a duration in µs with one decimal.
#[must_use]
pub fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}
