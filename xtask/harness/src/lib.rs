//! Shared pieces of the demo, stress and bench programs: choosing a backend, reading flags,
//! and summarising latencies.

pub mod app;
pub mod bad_input;
// The bench's floors speak to every server (feature `servers`).
#[cfg(feature = "servers")]
pub mod cache_bench;
pub mod chaos;
pub mod checks;
#[cfg(feature = "servers")]
pub mod etcd_contention_bench;
pub mod fair_bench;
#[cfg(feature = "servers")]
pub mod floor;
#[cfg(feature = "servers")]
pub mod idempotency_bench;
pub mod inventory;
pub mod load;
#[cfg(feature = "servers")]
pub mod middleware_bench;
pub mod overhead;
pub mod payments;
pub mod primitive_stress;
mod process;
pub mod product;
pub mod progress;
pub mod prometheus;
pub mod scrape;
pub mod shop;
pub mod stampede;
pub mod test_redis;

use std::collections::HashMap;
use std::time::Duration;

use lock_core::{LockClient, LockError, MemoryBackend, RedisBackend};

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
    /// The ZooKeeper ensemble at `LOCK_TEST_ZOOKEEPER_URL` (see [`zookeeper_url`]).
    Zookeeper,
    /// The etcd cluster at `LOCK_TEST_ETCD_URL` (see [`etcd_url`]).
    Etcd,
}

impl BackendKind {
    /// Parses `memory` or `redis`.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "memory" => Ok(Self::Memory),
            "redis" => Ok(Self::Redis),
            "postgres" => Ok(Self::Postgres),
            "mysql" => Ok(Self::Mysql),
            "zookeeper" => Ok(Self::Zookeeper),
            "etcd" => Ok(Self::Etcd),
            other => Err(format!(
                "unknown backend {other:?}; expected memory, redis, postgres, mysql, zookeeper or etcd"
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
        }
    }
}

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
            let backend = lock_core::PostgresBackend::connect(&postgres_url()).await?;
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
        #[cfg(not(feature = "servers"))]
        other => Err(LockError::InvalidConfig(format!(
            "the {} backend needs lock-harness's `servers` feature",
            other.name()
        ))),
    }
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

/// A server's URL: the env var `var` (as `cargo xtask` sets it), else the xtask stack's default.
#[must_use]
pub fn server_url(var: &str, default: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| default.to_owned())
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

/// `--name value` / `--name=value` / `--switch` flags.
#[derive(Debug, Default)]
pub struct Flags {
    values: HashMap<String, String>,
}

impl Flags {
    /// The process's flags after the program name; an unknown one exits with a usage error.
    #[must_use]
    pub fn of_process(allowed: &[&str]) -> Self {
        Self::parse(std::env::args().skip(1), allowed).unwrap_or_else(|e| usage_error(&e))
    }

    /// Parses the process arguments after the program name; `allowed` lists the flag names.
    pub fn parse(args: impl IntoIterator<Item = String>, allowed: &[&str]) -> Result<Self, String> {
        let mut values = HashMap::new();
        let mut args = args.into_iter().peekable();
        while let Some(arg) = args.next() {
            let Some(name) = arg.strip_prefix("--") else {
                return Err(format!("unexpected argument {arg:?}"));
            };
            let (name, value) = match name.split_once('=') {
                Some((name, value)) => (name.to_owned(), value.to_owned()),
                None => {
                    let value = match args.peek() {
                        Some(next) if !next.starts_with("--") => args.next().unwrap_or_default(),
                        _ => "true".to_owned(),
                    };
                    (name.to_owned(), value)
                }
            };
            if !allowed.contains(&name.as_str()) {
                return Err(format!(
                    "unknown flag --{name}; known: --{}",
                    allowed.join(", --")
                ));
            }
            values.insert(name, value);
        }
        Ok(Self { values })
    }

    /// The raw value of `--name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// `--name` as a number, or `default`.
    pub fn number(&self, name: &str, default: u64) -> Result<u64, String> {
        match self.get(name) {
            None => Ok(default),
            Some(raw) => raw
                .parse()
                .map_err(|_| format!("--{name} expects a whole number, got {raw:?}")),
        }
    }

    /// `--name` as a number, or `default`; anything else exits with a usage error.
    #[must_use]
    pub fn number_or_exit(&self, name: &str, default: u64) -> u64 {
        self.number(name, default)
            .unwrap_or_else(|e| usage_error(&e))
    }

    /// `--backend`, default memory.
    pub fn backend(&self) -> Result<BackendKind, String> {
        BackendKind::parse(self.get("backend").unwrap_or("memory"))
    }

    /// `--backend`, default memory; an unknown backend exits with a usage error.
    #[must_use]
    pub fn backend_or_exit(&self) -> BackendKind {
        self.backend().unwrap_or_else(|e| usage_error(&e))
    }
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

/// Exits with status 2 and `message` on stderr.
pub fn usage_error(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(2)
}
