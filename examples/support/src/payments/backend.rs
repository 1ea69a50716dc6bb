//! Where one or more payments instances keep their idempotency records, claim their keys and
//! record their payments, per backend:
//!
//! | backend    | records                | claims (fenced leases) | ledger                  | exactly once by |
//! |------------|------------------------|------------------------|-------------------------|-----------------|
//! | `memory`   | `MemoryResultStore`    | `MemoryBackend`        | in process memory       | one process: records and ledger die together |
//! | `redis`    | `RedisResultStore`     | `RedisBackend`         | PostgreSQL tables       | `RecoveryPoints` in the ledger's database, written with the payment |
//! | `postgres` | `PostgresResultStore`  | `PostgresBackend`      | the same PostgreSQL     | the record itself, completed in the payment's transaction |
//!
//! The server-backed ones need this crate's `postgres` feature (the payments apps' `servers`).

use std::time::Duration;

use lock_core::idempotency::Idempotency;
use lock_core::memory::MemoryResultStore;
use lock_core::{LeaseMode, LockClient, MemoryBackend};

use super::ledger::Ledger;
use super::PaymentsConfig;
use crate::backend::BackendKind;

/// The backend the instances of a run share. Each [`instance`](Self::instance) is one
/// instance's: on the servers its own connections, as separate processes would have; what
/// instances share is what is on the server (on memory: one store, one lock backend and one
/// ledger for the whole process).
#[derive(Clone)]
pub enum PaymentsBackend {
    /// One memory store, lock backend and ledger, shared by the instances of this process.
    Memory {
        /// The idempotency records.
        store: MemoryResultStore,
        /// The claims' leases.
        locks: MemoryBackend,
        /// The payments.
        ledger: Ledger,
    },
    /// Records and claims in Redis, the ledger in PostgreSQL.
    Redis {
        /// The Redis URL.
        redis_url: String,
        /// The ledger's PostgreSQL URL.
        postgres_url: String,
    },
    /// Records, claims and ledger in one PostgreSQL database.
    Postgres {
        /// Its URL, for records and claims.
        postgres_url: String,
        /// The URL the ledger connects with (the same database, perhaps by another route:
        /// the tests put a fault proxy on the records' route only); `None`: the records'
        /// pool.
        ledger_url: Option<String>,
    },
}

impl std::fmt::Debug for PaymentsBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl PaymentsBackend {
    /// A fresh shared memory backend; the ledger records under `namespace`.
    #[must_use]
    pub fn memory(namespace: &str) -> Self {
        Self::Memory {
            store: MemoryResultStore::new(),
            locks: MemoryBackend::new(),
            ledger: Ledger::memory(namespace),
        }
    }

    /// The backend `config` names (memory: a fresh one).
    #[must_use]
    pub fn of_config(config: &PaymentsConfig) -> Self {
        let mut backend = Self::for_kind(
            config.backend,
            &config.redis_url,
            &config.postgres_url,
            &config.namespace,
        );
        if let Self::Postgres { ledger_url, .. } = &mut backend {
            ledger_url.clone_from(&config.ledger_url);
        }
        backend
    }

    /// `memory`, `redis` or `postgres` (other kinds are refused by [`PaymentsConfig`] and
    /// fall back to memory here).
    #[must_use]
    pub fn for_kind(
        kind: BackendKind,
        redis_url: &str,
        postgres_url: &str,
        namespace: &str,
    ) -> Self {
        match kind {
            BackendKind::Redis => Self::Redis {
                redis_url: redis_url.to_owned(),
                postgres_url: postgres_url.to_owned(),
            },
            BackendKind::Postgres => Self::Postgres {
                postgres_url: postgres_url.to_owned(),
                ledger_url: None,
            },
            _ => Self::memory(namespace),
        }
    }

    /// A lock client on the idempotency claims of the instances under `namespace`
    /// (`idem.payments.<namespace>`, where [`instance`](Self::instance)'s records and claims
    /// are): the admin console's, which shows the payments in flight. On Redis and
    /// PostgreSQL, a connection of its own.
    pub async fn lock_client(&self, namespace: &str) -> Result<LockClient, String> {
        let claims = format!("idem.payments.{namespace}");
        let built = |builder: lock_core::LockClientBuilder| {
            builder
                .namespace(claims.as_str())
                .build()
                .map_err(|e| format!("the admin console's lock client: {e}"))
        };
        match self {
            Self::Memory { locks, .. } => built(LockClient::builder(locks.clone())),
            Self::Redis { redis_url, .. } => {
                let backend = lock_core::RedisBackend::connect(redis_url)
                    .await
                    .map_err(|e| format!("cannot reach Redis at {redis_url}: {e}"))?;
                built(LockClient::builder(backend))
            }
            #[cfg(feature = "postgres")]
            Self::Postgres { postgres_url, .. } => {
                let backend = lock_core::PostgresBackend::builder(postgres_url.as_str())
                    .max_connections(2)
                    .connect()
                    .await
                    .map_err(|e| format!("cannot reach PostgreSQL at {postgres_url}: {e}"))?;
                built(LockClient::builder(backend))
            }
            #[cfg(not(feature = "postgres"))]
            other => Err(format!(
                "the {} backend needs example-support's `postgres` feature (the apps' `servers`)",
                other.name()
            )),
        }
    }

    /// The backend's name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Memory { .. } => "memory",
            Self::Redis { .. } => "redis",
            Self::Postgres { .. } => "postgres",
        }
    }

    /// The idempotency and the ledger of one more instance: records under
    /// `idem.payments.<namespace>`, claims held with a watchdog lease of `lease`, payments
    /// recorded under `namespace` (on memory, the namespace the backend was made with).
    pub async fn instance(
        &self,
        namespace: &str,
        lease: Duration,
    ) -> Result<(Idempotency, Ledger), String> {
        let lease = LeaseMode::watchdog(lease);
        let records = format!("payments.{namespace}");
        let built = |result: Result<Idempotency, lock_core::LockError>| {
            result.map_err(|e| format!("idempotency settings: {e}"))
        };
        match self {
            Self::Memory {
                store,
                locks,
                ledger,
            } => {
                let idempotency = built(
                    Idempotency::builder(store.clone(), locks.clone())
                        .namespace(&records)
                        .lease(lease)
                        .build(),
                )?;
                Ok((idempotency, ledger.clone()))
            }
            #[cfg(feature = "postgres")]
            Self::Redis {
                redis_url,
                postgres_url,
            } => {
                let backend = lock_core::RedisBackend::connect(redis_url)
                    .await
                    .map_err(|e| format!("cannot reach Redis at {redis_url}: {e}"))?;
                let store = lock_core::redis::RedisResultStore::from_backend(&backend)
                    .await
                    .map_err(|e| format!("cannot reach Redis at {redis_url}: {e}"))?;
                let ledger = Ledger::connect(postgres_url, namespace)
                    .await
                    .map_err(|e| format!("the ledger at {postgres_url}: {e}"))?;
                // The records cannot commit with the payment: a recovery point in the
                // ledger's database does, written by the payment's transaction.
                let pool = ledger
                    .pool()
                    .cloned()
                    .ok_or("a PostgreSQL ledger has a pool")?;
                let points = lock_core::sql::RecoveryPoints::from_pool(pool)
                    .await
                    .map_err(|e| format!("recovery points at {postgres_url}: {e}"))?;
                let idempotency = built(
                    Idempotency::builder(store, backend)
                        .namespace(&records)
                        .lease(lease)
                        .recovery_points(points)
                        .build(),
                )?;
                Ok((idempotency, ledger))
            }
            #[cfg(feature = "postgres")]
            Self::Postgres {
                postgres_url,
                ledger_url,
            } => {
                let unreachable = |e: lock_core::LockError| {
                    format!("cannot reach PostgreSQL at {postgres_url}: {e}")
                };
                // One pool for claims, records and ledger: the payment's row and the claim's
                // record are in the same database.
                let backend = lock_core::PostgresBackend::builder(postgres_url.as_str())
                    .max_connections(24)
                    .connect()
                    .await
                    .map_err(unreachable)?;
                // The store shares the backend's pool, so it shares its breaker too: one
                // outage of the database opens one breaker.
                let store =
                    lock_core::sql::PostgresResultStore::builder_from_pool(backend.pool().clone())
                        .breaker(backend.breaker().clone())
                        .connect()
                        .await
                        .map_err(unreachable)?;
                // The payment's transaction completes the record (same database).
                let ledger = match ledger_url {
                    None => Ledger::postgres(backend.pool().clone(), namespace).await,
                    Some(url) => Ledger::connect(url, namespace).await,
                }
                .map_err(|e| format!("the ledger at {postgres_url}: {e}"))?;
                let idempotency = built(
                    Idempotency::builder(store, backend)
                        .namespace(&records)
                        .lease(lease)
                        .build(),
                )?;
                Ok((idempotency, ledger))
            }
            #[cfg(not(feature = "postgres"))]
            other => Err(format!(
                "the {} backend needs example-support's `postgres` feature (the apps' `servers`)",
                other.name()
            )),
        }
    }
}
