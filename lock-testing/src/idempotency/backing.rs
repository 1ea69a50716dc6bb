//! The records and claims behind a scenario's applications: memory, or a real Redis.

use std::time::Duration;

use super::Store;
use crate::unique;
use lock_core::idempotency::Idempotency;
use lock_core::memory::MemoryResultStore;
use lock_core::MemoryBackend;

/// One scenario's store: every [`instance`](Self::instance) shares its records and claims.
pub(super) struct Backing {
    namespace: String,
    kind: Kind,
}

enum Kind {
    Memory {
        idempotency: Idempotency,
        backend: MemoryBackend,
    },
    #[cfg(feature = "redis")]
    Redis { url: String },
}

impl Backing {
    /// A fresh namespace on `store`; `None` (after a loud skip) when the store's server is not
    /// configured and not required.
    ///
    /// # Panics
    /// When the server is required but not configured, or cannot be reached.
    pub(super) async fn new(store: Store, driver: &str, name: &str) -> Option<Self> {
        let namespace = unique(&format!("{driver}-{name}"));
        let kind = match store {
            Store::Memory => Kind::memory(&namespace),
            #[cfg(feature = "redis")]
            Store::Redis => Kind::Redis {
                url: crate::server_url("LOCK_TEST_REDIS_URL").expect("test server")?,
            },
        };
        Some(Self { namespace, kind })
    }

    /// On memory only (the scenarios that reach into the lock backend).
    pub(super) fn memory(driver: &str, name: &str) -> Self {
        let namespace = unique(&format!("{driver}-{name}"));
        Self {
            kind: Kind::memory(&namespace),
            namespace,
        }
    }

    /// The idempotency client of one more instance of the service: on memory the same one,
    /// on Redis one on connections of its own.
    ///
    /// # Panics
    /// When Redis cannot be reached.
    pub(super) async fn instance(&self) -> Idempotency {
        match &self.kind {
            Kind::Memory { idempotency, .. } => idempotency.clone(),
            #[cfg(feature = "redis")]
            Kind::Redis { url } => {
                let backend = lock_core::RedisBackend::connect(url).await.unwrap();
                let store = lock_core::redis::RedisResultStore::from_backend(&backend)
                    .await
                    .unwrap();
                Idempotency::builder(store, backend)
                    .namespace(&self.namespace)
                    .build()
                    .unwrap()
            }
        }
    }

    /// The lock a claim of `key` in `scope` is held with (`idem.<namespace>:<record name>`).
    pub(super) fn lock_key(&self, scope: &str, key: &str) -> String {
        format!("idem.{}:{}:{scope}:{key}", self.namespace, scope.len())
    }

    /// Deletes the claim's lock of `key` in `scope` under its holder (memory only); whether
    /// one was held.
    ///
    /// # Panics
    /// On Redis.
    pub(super) fn delete_claim(&self, scope: &str, key: &str) -> bool {
        match &self.kind {
            Kind::Memory { backend, .. } => {
                backend.simulate_external_delete(&self.lock_key(scope, key))
            }
            #[cfg(feature = "redis")]
            Kind::Redis { .. } => unimplemented!("memory only"),
        }
    }

    /// Waits (bounded) until a request waits for the claim of `key` in `scope`: the store
    /// offers nothing to subscribe to for that.
    ///
    /// # Panics
    /// When none does within [`LIMIT`](super::LIMIT).
    pub(super) async fn until_waiting(&self, scope: &str, key: &str) {
        let lock_key = self.lock_key(scope, key);
        let deadline = tokio::time::Instant::now() + super::LIMIT;
        let mut waiters = Waiters::new(&self.kind, &lock_key).await;
        while waiters.count().await == 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no request ever waited for {lock_key}"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

impl Kind {
    fn memory(namespace: &str) -> Self {
        let backend = MemoryBackend::new();
        let idempotency = Idempotency::builder(MemoryResultStore::new(), backend.clone())
            .namespace(namespace)
            .build()
            .unwrap();
        Self::Memory {
            idempotency,
            backend,
        }
    }
}

/// Counts the requests queued for one lock.
enum Waiters<'a> {
    Memory(&'a MemoryBackend, &'a str),
    #[cfg(feature = "redis")]
    Redis(redis::aio::MultiplexedConnection, String),
}

impl<'a> Waiters<'a> {
    async fn new(kind: &'a Kind, lock_key: &'a str) -> Self {
        match kind {
            Kind::Memory { backend, .. } => Self::Memory(backend, lock_key),
            #[cfg(feature = "redis")]
            Kind::Redis { url } => {
                let names = lock_core::RedisBackend::connect(url).await.unwrap();
                let connection = redis::Client::open(url.as_str())
                    .unwrap()
                    .get_multiplexed_async_connection()
                    .await
                    .unwrap();
                Self::Redis(connection, names.waiters_key(lock_key))
            }
        }
    }

    async fn count(&mut self) -> usize {
        match self {
            Self::Memory(backend, lock_key) => backend.waiter_count(lock_key),
            #[cfg(feature = "redis")]
            Self::Redis(connection, queue) => redis::cmd("ZCARD")
                .arg(&*queue)
                .query_async(connection)
                .await
                .unwrap(),
        }
    }
}
