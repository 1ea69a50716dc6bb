//! The product service's settings and where its cache lives.

use std::time::Duration;

use lock_core::cache::{Cache, Freshness};
use lock_core::http::admin::TokenAuth;
use lock_core::memory::MemoryResultStore;
use lock_core::redis::RedisResultStore;
use lock_core::{LockClient, LockError, MemoryBackend, RedisBackend};

use crate::backend::{redis_url, BackendKind};
use crate::flags::{Flags, ADMIN_TOKEN_FLAG};

/// How long the product pages stay fresh and stale, and how slow the origin is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProductPolicy {
    /// How long a product is served from the cache without asking the origin.
    pub fresh: Duration,
    /// After that, how long it is served stale while one request refreshes it.
    pub stale_while_revalidate: Duration,
    /// After fresh, how long it is served stale when the origin fails.
    pub stale_if_error: Duration,
    /// How long one origin call takes.
    pub origin_delay: Duration,
}

impl Default for ProductPolicy {
    /// Fresh 500 ms, stale-while-revalidate 10 s, stale-if-error 60 s, a 50 ms origin.
    fn default() -> Self {
        Self {
            fresh: Duration::from_millis(500),
            stale_while_revalidate: Duration::from_secs(10),
            stale_if_error: Duration::from_secs(60),
            origin_delay: Duration::from_millis(50),
        }
    }
}

impl ProductPolicy {
    /// The cache's freshness for a product.
    #[must_use]
    pub fn freshness(&self) -> Freshness {
        Freshness::fresh_for(self.fresh)
            .stale_while_revalidate(self.stale_while_revalidate)
            .stale_if_error(self.stale_if_error)
    }
}

/// Where the cache of one or more service instances lives. Each [`cache`](Self::cache) is
/// one instance's: its own flights (the collapsing of callers inside one instance) and, on
/// Redis, its own connection and push subscription; what they share is the store and the
/// leases, as separate processes would.
#[derive(Clone)]
pub enum CacheBackend {
    /// One memory store and lock backend, shared by the instances of this process.
    Memory {
        /// The entries.
        store: MemoryResultStore,
        /// The computations' leases.
        locks: MemoryBackend,
    },
    /// A Redis server.
    Redis {
        /// Its URL.
        url: String,
    },
}

impl CacheBackend {
    /// A fresh shared memory backend.
    #[must_use]
    pub fn memory() -> Self {
        Self::Memory {
            store: MemoryResultStore::new(),
            locks: MemoryBackend::new(),
        }
    }

    /// `memory` or `redis` (at `redis_url`); other kinds are refused.
    pub fn for_kind(kind: BackendKind, redis_url: &str) -> Result<Self, LockError> {
        match kind {
            BackendKind::Memory => Ok(Self::memory()),
            BackendKind::Redis => Ok(Self::Redis {
                url: redis_url.to_owned(),
            }),
            other => Err(LockError::InvalidConfig(format!(
                "the product service caches in memory or redis, not {}",
                other.name()
            ))),
        }
    }

    /// The backend's name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Memory { .. } => "memory",
            Self::Redis { .. } => "redis",
        }
    }

    /// A lock client on the leases of the caches under `namespace` (`cache.<namespace>`, as
    /// [`Cache`] places them): the admin console's, which shows the computations in flight.
    pub async fn lock_client(&self, namespace: &str) -> Result<LockClient, LockError> {
        let leases = if namespace.is_empty() {
            "cache".to_owned()
        } else {
            format!("cache.{namespace}")
        };
        match self {
            Self::Memory { locks, .. } => LockClient::builder(locks.clone()).namespace(leases),
            Self::Redis { url } => {
                LockClient::builder(RedisBackend::connect(url).await?).namespace(leases)
            }
        }
        .build()
    }

    /// A cache for one more instance, under `namespace`.
    pub async fn cache(&self, namespace: &str, freshness: Freshness) -> Result<Cache, LockError> {
        match self {
            Self::Memory { store, locks } => Cache::builder(store.clone(), locks.clone())
                .namespace(namespace)
                .freshness(freshness)
                .build(),
            Self::Redis { url } => {
                let backend = RedisBackend::connect(url).await?;
                let store = RedisResultStore::from_backend(&backend).await?;
                Cache::builder(store, backend)
                    .namespace(namespace)
                    .freshness(freshness)
                    .build()
            }
        }
    }
}

/// Everything a standalone app instance is started with (`stampede-axum --help`).
#[derive(Clone, Debug)]
pub struct ProductConfig {
    /// `--port` (0: any free port; the app prints the one it got).
    pub port: u16,
    /// `--backend memory|redis`.
    pub backend: BackendKind,
    /// `--redis-url` (else `LOCK_TEST_REDIS_URL`, else the stack's default).
    pub redis_url: String,
    /// `--namespace`: instances sharing a Redis share products only under the same one.
    pub namespace: String,
    /// `--fresh-ms`, `--swr-ms`, `--sie-ms`, `--origin-ms`.
    pub policy: ProductPolicy,
    /// `--admin-token` (else `ADMIN_TOKEN`): the admin console at `/admin` behind that token,
    /// on the cache's leases ([`crate::admin`]); none without.
    pub admin: Option<TokenAuth>,
}

const APP_FLAGS: &[&str] = &[
    "port",
    "backend",
    "redis-url",
    "namespace",
    "fresh-ms",
    "swr-ms",
    "sie-ms",
    "origin-ms",
    ADMIN_TOKEN_FLAG,
];

impl ProductConfig {
    /// Parses the app's arguments (after the program name).
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let flags = Flags::parse(args, APP_FLAGS)?;
        let defaults = ProductPolicy::default();
        let millis = |name, default: Duration| {
            flags
                .number(name, default.as_millis() as u64)
                .map(Duration::from_millis)
        };
        let port = flags.number("port", 8080)?;
        let config = Self {
            port: u16::try_from(port).map_err(|_| format!("--port {port} is not a port"))?,
            backend: flags.backend()?,
            redis_url: redis_url(&flags),
            namespace: flags.get("namespace").unwrap_or("products").to_owned(),
            policy: ProductPolicy {
                fresh: millis("fresh-ms", defaults.fresh)?,
                stale_while_revalidate: millis("swr-ms", defaults.stale_while_revalidate)?,
                stale_if_error: millis("sie-ms", defaults.stale_if_error)?,
                origin_delay: millis("origin-ms", defaults.origin_delay)?,
            },
            admin: flags.admin_auth()?,
        };
        config
            .policy
            .freshness()
            .validate()
            .map_err(|e| e.to_string())?;
        CacheBackend::for_kind(config.backend, &config.redis_url).map_err(|e| e.to_string())?;
        Ok(config)
    }

    /// The defaults on memory (for in-process tests).
    #[must_use]
    pub fn memory() -> Self {
        Self::from_args(Vec::new()).expect("the defaults parse")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<ProductConfig, String> {
        ProductConfig::from_args(args.iter().map(|a| (*a).to_owned()))
    }

    #[test]
    fn flags_set_the_policy_and_bad_ones_are_refused() {
        let config = parse(&["--fresh-ms", "100", "--origin-ms", "5"]).unwrap();
        assert_eq!(config.policy.fresh, Duration::from_millis(100));
        assert_eq!(config.policy.origin_delay, Duration::from_millis(5));
        assert!(parse(&["--fresh-ms", "0"]).is_err());
        assert!(parse(&["--backend", "etcd"]).is_err());
        assert!(parse(&["--namespace-typo", "x"]).is_err());
    }
}
