//! Where a payment's effect goes: one row per payment made, in process memory or in a
//! `payments_ledger` table in PostgreSQL.
//!
//! There is deliberately **no unique constraint** on the idempotency key: if a payment ran
//! twice, the ledger shows two rows. That the demo and the tests find one row per key is the
//! idempotency layer's doing, not the database's.
//!
//! What the ledger does check is the claim's fencing token: a row is refused when a row of the
//! same key with a *newer* fence exists, so a handler whose claim was taken over (a paused
//! process, say) cannot add its stale effect after the newer one. That refuses a late
//! straggler; it never merges two executions into one row.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use lock_core::idempotency::ClaimInfo;

use super::input::Payment;

/// The ledger table's name.
pub const LEDGER_TABLE: &str = "payments_ledger";

/// One payment made: a ledger row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effect {
    /// The row's id (the payment id in the receipt).
    pub id: u64,
    /// The principal the idempotency key belongs to.
    pub scope: String,
    /// The idempotency key.
    pub key: String,
    /// The fencing token of the claim that made it.
    pub fence: u64,
    /// The account the money left.
    pub from: String,
    /// The account the money went to.
    pub to: String,
    /// How much, in cents.
    pub cents: u64,
    /// When it was recorded, in ms since the Unix epoch.
    pub created_at_ms: u64,
}

/// Why a payment was not recorded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    /// A newer claim on the same key already recorded its payment.
    #[error("a newer claim (fence {newer}) already recorded this key's payment")]
    Superseded {
        /// That claim's fencing token.
        newer: u64,
    },
    /// The database failed; nothing was recorded.
    #[error("the ledger is unavailable: {0}")]
    Unavailable(String),
}

/// The payments of one namespace. Cheap to clone; clones share the rows (memory) or the
/// connection pool (PostgreSQL).
#[derive(Clone, Debug)]
pub struct Ledger {
    namespace: String,
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    Memory(Arc<Mutex<Vec<Effect>>>),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
}

impl Ledger {
    /// A ledger in this process's memory; clones (instances of this process) share it.
    ///
    /// ```
    /// use lock_core::idempotency::ClaimInfo;
    /// use lock_core::FencingToken;
    /// use lock_harness::payments::{Ledger, Payment};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let ledger = Ledger::memory("docs");
    /// let payment = Payment::parse(br#"{"from":"a","to":"b","cents":7}"#).unwrap();
    /// let claim = ClaimInfo::new("alice", "k1", FencingToken::new(3));
    /// ledger.record(&claim, &payment).await.unwrap();
    /// let stale = ClaimInfo::new("alice", "k1", FencingToken::new(2));
    /// assert!(ledger.record(&stale, &payment).await.is_err());
    /// assert_eq!(ledger.effects().await.unwrap().len(), 1);
    /// # }
    /// ```
    #[must_use]
    pub fn memory(namespace: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            kind: Kind::Memory(Arc::default()),
        }
    }

    /// A ledger in the `payments_ledger` table of `pool`'s database (created if missing).
    #[cfg(feature = "postgres")]
    pub async fn postgres(pool: sqlx::PgPool, namespace: &str) -> Result<Self, LedgerError> {
        postgres::create_table(&pool).await?;
        Ok(Self {
            namespace: namespace.to_owned(),
            kind: Kind::Postgres(pool),
        })
    }

    /// Connects to the PostgreSQL at `url` and uses its `payments_ledger` table.
    #[cfg(feature = "postgres")]
    pub async fn connect(url: &str, namespace: &str) -> Result<Self, LedgerError> {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(std::time::Duration::from_secs(5))
            .connect(url)
            .await
            .map_err(unavailable)?;
        Self::postgres(pool, namespace).await
    }

    /// `memory` or `postgres`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self.kind {
            Kind::Memory(_) => "memory",
            #[cfg(feature = "postgres")]
            Kind::Postgres(_) => "postgres",
        }
    }

    /// The namespace whose payments this ledger records and reads.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Records `payment`, made under `claim`; refused when a newer claim on the same key has
    /// recorded one ([`LedgerError::Superseded`]).
    pub async fn record(
        &self,
        claim: &ClaimInfo,
        payment: &Payment,
    ) -> Result<Effect, LedgerError> {
        match &self.kind {
            Kind::Memory(rows) => {
                let mut rows = rows.lock().unwrap_or_else(PoisonError::into_inner);
                let newest = rows
                    .iter()
                    .filter(|row| row.scope == claim.scope && row.key == claim.key)
                    .map(|row| row.fence)
                    .max();
                if let Some(newer) = newest.filter(|newer| *newer > claim.fence.get()) {
                    return Err(LedgerError::Superseded { newer });
                }
                let effect = Effect {
                    id: rows.len() as u64 + 1,
                    scope: claim.scope.clone(),
                    key: claim.key.clone(),
                    fence: claim.fence.get(),
                    from: payment.from.clone(),
                    to: payment.to.clone(),
                    cents: payment.cents,
                    created_at_ms: now_ms(),
                };
                rows.push(effect.clone());
                Ok(effect)
            }
            #[cfg(feature = "postgres")]
            Kind::Postgres(pool) => postgres::record(pool, &self.namespace, claim, payment).await,
        }
    }

    /// Every payment of the namespace, oldest first.
    pub async fn effects(&self) -> Result<Vec<Effect>, LedgerError> {
        match &self.kind {
            Kind::Memory(rows) => Ok(rows.lock().unwrap_or_else(PoisonError::into_inner).clone()),
            #[cfg(feature = "postgres")]
            Kind::Postgres(pool) => postgres::effects(pool, &self.namespace).await,
        }
    }

    /// The payments of one key of one principal.
    pub async fn effects_of(&self, scope: &str, key: &str) -> Result<Vec<Effect>, LedgerError> {
        let mut effects = self.effects().await?;
        effects.retain(|effect| effect.scope == scope && effect.key == key);
        Ok(effects)
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(feature = "postgres")]
fn unavailable(error: sqlx::Error) -> LedgerError {
    LedgerError::Unavailable(error.to_string())
}

#[cfg(feature = "postgres")]
mod postgres {
    use lock_core::idempotency::ClaimInfo;
    use sqlx::{PgPool, Row};

    use super::{unavailable, Effect, LedgerError, Payment, LEDGER_TABLE};

    /// Serializes concurrent creators of the table (`IF NOT EXISTS` alone can collide).
    const SCHEMA_LOCK: i64 = 0x7061_796d_656e_7473; // "payments"

    pub(super) async fn create_table(pool: &PgPool) -> Result<(), LedgerError> {
        // No unique constraint on (namespace, scope, idempotency_key): see the module docs.
        let batch = format!(
            "SELECT pg_advisory_xact_lock({SCHEMA_LOCK});
             CREATE TABLE IF NOT EXISTS {LEDGER_TABLE} (
               id              bigserial PRIMARY KEY,
               namespace       text NOT NULL,
               scope           text NOT NULL,
               idempotency_key text NOT NULL,
               fence           bigint NOT NULL,
               from_account    text NOT NULL,
               to_account      text NOT NULL,
               cents           bigint NOT NULL,
               created_at      timestamptz NOT NULL DEFAULT now()
             );
             CREATE INDEX IF NOT EXISTS {LEDGER_TABLE}_by_key
               ON {LEDGER_TABLE} (namespace, scope, idempotency_key);"
        );
        sqlx::raw_sql(&batch)
            .execute(pool)
            .await
            .map(drop)
            .map_err(unavailable)
    }

    pub(super) async fn record(
        pool: &PgPool,
        namespace: &str,
        claim: &ClaimInfo,
        payment: &Payment,
    ) -> Result<Effect, LedgerError> {
        let fence = i64::try_from(claim.fence.get())
            .map_err(|_| LedgerError::Unavailable("fence out of range".into()))?;
        let cents = i64::try_from(payment.cents)
            .map_err(|_| LedgerError::Unavailable("amount out of range".into()))?;
        let mut tx = pool.begin().await.map_err(unavailable)?;
        // The fence check and the insert of one key, one at a time (not a constraint: two
        // executions with increasing fences both get their row).
        let key_lock = format!(
            "{}:{namespace}{}:{}{}",
            namespace.len(),
            claim.scope.len(),
            claim.scope,
            claim.key
        );
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(&key_lock)
            .execute(&mut *tx)
            .await
            .map_err(unavailable)?;
        let newest: Option<i64> = sqlx::query_scalar(&format!(
            "SELECT max(fence) FROM {LEDGER_TABLE}
             WHERE namespace = $1 AND scope = $2 AND idempotency_key = $3"
        ))
        .bind(namespace)
        .bind(&claim.scope)
        .bind(&claim.key)
        .fetch_one(&mut *tx)
        .await
        .map_err(unavailable)?;
        if let Some(newer) = newest.filter(|newer| *newer > fence) {
            return Err(LedgerError::Superseded {
                newer: newer as u64,
            });
        }
        let row = sqlx::query(&format!(
            "INSERT INTO {LEDGER_TABLE}
               (namespace, scope, idempotency_key, fence, from_account, to_account, cents)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             RETURNING id, (extract(epoch FROM created_at) * 1000)::bigint AS created_ms"
        ))
        .bind(namespace)
        .bind(&claim.scope)
        .bind(&claim.key)
        .bind(fence)
        .bind(&payment.from)
        .bind(&payment.to)
        .bind(cents)
        .fetch_one(&mut *tx)
        .await
        .map_err(unavailable)?;
        tx.commit().await.map_err(unavailable)?;
        Ok(Effect {
            id: row.try_get::<i64, _>("id").map_err(unavailable)? as u64,
            scope: claim.scope.clone(),
            key: claim.key.clone(),
            fence: claim.fence.get(),
            from: payment.from.clone(),
            to: payment.to.clone(),
            cents: payment.cents,
            created_at_ms: row.try_get::<i64, _>("created_ms").map_err(unavailable)? as u64,
        })
    }

    pub(super) async fn effects(
        pool: &PgPool,
        namespace: &str,
    ) -> Result<Vec<Effect>, LedgerError> {
        let rows = sqlx::query(&format!(
            "SELECT id, scope, idempotency_key, fence, from_account, to_account, cents,
                    (extract(epoch FROM created_at) * 1000)::bigint AS created_ms
             FROM {LEDGER_TABLE} WHERE namespace = $1 ORDER BY id"
        ))
        .bind(namespace)
        .fetch_all(pool)
        .await
        .map_err(unavailable)?;
        rows.iter()
            .map(|row| {
                Ok(Effect {
                    id: row.try_get::<i64, _>("id")? as u64,
                    scope: row.try_get("scope")?,
                    key: row.try_get("idempotency_key")?,
                    fence: row.try_get::<i64, _>("fence")? as u64,
                    from: row.try_get("from_account")?,
                    to: row.try_get("to_account")?,
                    cents: row.try_get::<i64, _>("cents")? as u64,
                    created_at_ms: row.try_get::<i64, _>("created_ms")? as u64,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(unavailable)
    }
}
