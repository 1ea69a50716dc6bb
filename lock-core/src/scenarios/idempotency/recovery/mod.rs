//! Recovery points (feature `postgres`): where an idempotent request's effect records its
//! answer when the idempotency records are kept elsewhere (on Redis, say). See
//! [`RecoveryPoints`].

mod builder;
mod statements;

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgPool;
use sqlx::{Postgres, Transaction};
use tokio_util::sync::{CancellationToken, DropGuard};

pub use self::builder::RecoveryPointsBuilder;
use self::statements::Statements;
use crate::backends::sql::{micros, sweep, to_lock_error, validate_table};
use crate::{LockError, Result};

const STORE: &str = "postgres";

/// The longest a point is kept (a century), as the database's timestamps end in 294276.
const MAX_KEEP: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Recovery points in the database your effects are written to: the one thing that makes a
/// request **exactly once** when its idempotency record lives in another store.
///
/// An idempotency record on Redis cannot commit together with a payment written to
/// PostgreSQL: a process that dies after the payment committed and before its record was
/// completed leaves a record that says "in flight", its claim expires, and the retry runs the
/// payment again (a fencing token cannot stop it: the retry's token is the newer one). A
/// recovery point closes that gap. The handler writes it in its own transaction with
/// [`ClaimInfo::commit_in`](super::ClaimInfo::commit_in): one row per (scope, key), holding
/// the answer, committed with the effect or not at all. A retry whose claim finds a recovery
/// point replays its answer (and completes the record with it) instead of running; two
/// executions that overlap (a holder paused past its lease) cannot both commit, as the
/// second one's insert waits for the first one's transaction and then finds its row.
///
/// ```no_run
/// use lock_core::idempotency::{Idempotency, RecoveryPoints};
/// use lock_core::results::RedisResultStore;
/// use lock_core::RedisBackend;
///
/// # async fn example(pool: sqlx::PgPool) -> Result<(), lock_core::LockError> {
/// // `pool` is the database the handlers write their effects to.
/// let backend = RedisBackend::connect("redis://127.0.0.1:6379/").await?;
/// let payments = Idempotency::builder(RedisResultStore::connect(&backend).await?, backend)
///     .namespace("payments")
///     .recovery_points(RecoveryPoints::postgres(pool).await?)
///     .build()?;
/// # let _ = payments; Ok(()) }
/// ```
///
/// # The table
/// `lock_core_recovery_points` by default, created when missing unless
/// [`create_table(false)`](RecoveryPointsBuilder::create_table); its
/// [`MIGRATION`](Self::MIGRATION) (or [`migration`](Self::migration) for another name) is
/// there for teams that create tables in migrations.
///
/// | column | meaning |
/// |---|---|
/// | `key` | primary key: the idempotency record's key (namespace, scope and key) |
/// | `entry` | the completed record: fencing token, request fingerprint, response |
/// | `expires_at` | the record's retention, by the **database's** clock |
///
/// Points live as long as the records (the [`Idempotency`](super::Idempotency)'s
/// retention). Expired ones are never read; a task per `RecoveryPoints` deletes them every
/// hour (in batches), and [`purge_expired`](Self::purge_expired) does it on demand.
#[derive(Clone)]
pub struct RecoveryPoints {
    shared: Arc<Shared>,
}

struct Shared {
    pool: PgPool,
    table: String,
    sql: Statements,
    timeout: Duration,
    _stop: DropGuard,
}

impl RecoveryPoints {
    /// The default table, `lock_core_recovery_points`.
    ///
    /// ```
    /// use lock_core::idempotency::RecoveryPoints;
    ///
    /// assert_eq!(RecoveryPoints::DEFAULT_TABLE, "lock_core_recovery_points");
    /// ```
    pub const DEFAULT_TABLE: &'static str = statements::DEFAULT_TABLE;

    /// The `CREATE TABLE IF NOT EXISTS` (and its index) of the default table, for migrations.
    ///
    /// ```
    /// use lock_core::idempotency::RecoveryPoints;
    ///
    /// assert!(RecoveryPoints::MIGRATION.starts_with("CREATE TABLE IF NOT EXISTS lock_core_recovery_points ("));
    /// ```
    pub const MIGRATION: &'static str = statements::MIGRATION;

    /// Recovery points in the default table of `pool`'s database, created when missing.
    ///
    /// ```no_run
    /// # async fn example(pool: sqlx::PgPool) -> Result<(), lock_core::LockError> {
    /// let points = lock_core::idempotency::RecoveryPoints::postgres(pool).await?;
    /// # let _ = points; Ok(()) }
    /// ```
    pub async fn postgres(pool: PgPool) -> Result<Self> {
        Self::postgres_builder(pool).build().await
    }

    /// Starts configuring recovery points in `pool`'s database.
    ///
    /// ```no_run
    /// # async fn example(pool: sqlx::PgPool) -> Result<(), lock_core::LockError> {
    /// let points = lock_core::idempotency::RecoveryPoints::postgres_builder(pool)
    ///     .table("payments_recovery")
    ///     .create_table(false)
    ///     .build()
    ///     .await?;
    /// # let _ = points; Ok(()) }
    /// ```
    pub fn postgres_builder(pool: PgPool) -> RecoveryPointsBuilder {
        RecoveryPointsBuilder::new(pool)
    }

    /// The migration of a recovery-point table named `table`; an error when `table` is not a
    /// plain identifier (ASCII letters, digits and `_`, not starting with a digit, at most 48
    /// bytes).
    ///
    /// ```
    /// use lock_core::idempotency::RecoveryPoints;
    ///
    /// let sql = RecoveryPoints::migration("payments_recovery")?;
    /// assert!(sql.starts_with("CREATE TABLE IF NOT EXISTS payments_recovery ("));
    /// assert!(RecoveryPoints::migration("x; DROP TABLE y").is_err());
    /// # Ok::<(), lock_core::LockError>(())
    /// ```
    pub fn migration(table: &str) -> Result<String> {
        validate_table(table)?;
        Ok(statements::migration(table))
    }

    /// Deletes the expired points (in batches of 1,000) and returns how many.
    ///
    /// ```no_run
    /// # async fn example(points: lock_core::idempotency::RecoveryPoints) -> Result<(), lock_core::LockError> {
    /// let deleted = points.purge_expired().await?;
    /// # let _ = deleted; Ok(()) }
    /// ```
    pub async fn purge_expired(&self) -> Result<u64> {
        purge(self.shared.clone()).await
    }

    /// The table's name.
    ///
    /// ```no_run
    /// # fn example(points: lock_core::idempotency::RecoveryPoints) {
    /// assert_eq!(points.table(), "lock_core_recovery_points");
    /// # }
    /// ```
    #[must_use]
    pub fn table(&self) -> &str {
        &self.shared.table
    }

    /// The pool the points are read with (the one they were built on).
    ///
    /// ```no_run
    /// # async fn example(points: lock_core::idempotency::RecoveryPoints) -> Result<(), sqlx::Error> {
    /// let mut transaction = points.pool().begin().await?;
    /// # let _ = &mut transaction; Ok(()) }
    /// ```
    #[must_use]
    pub fn pool(&self) -> &PgPool {
        &self.shared.pool
    }

    /// Creates the table if asked and starts the hourly purge.
    async fn start(pool: PgPool, table: String, create: bool, timeout: Duration) -> Result<Self> {
        if create {
            let batch = format!(
                "SELECT pg_advisory_xact_lock({}); {};",
                crate::results::postgres::SCHEMA_LOCK,
                statements::migration(&table)
            );
            // One simple-protocol batch: one transaction, holding the advisory lock.
            timed(
                timeout,
                "create table",
                sqlx::raw_sql(&batch).execute(&pool),
            )
            .await?;
        }
        let stop = CancellationToken::new();
        let shared = Arc::new(Shared {
            sql: Statements::new(&table),
            pool,
            table,
            timeout,
            _stop: stop.clone().drop_guard(),
        });
        crate::backends::sql::spawn_sweeper(
            STORE,
            "expired recovery points",
            stop,
            Arc::downgrade(&shared),
            purge,
        );
        Ok(Self { shared })
    }

    /// The live point of `key` (the record's full key), if any.
    pub(crate) async fn find(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let shared = &self.shared;
        let read = sqlx::query_scalar(&shared.sql.find)
            .bind(key)
            .fetch_optional(&shared.pool);
        timed(shared.timeout, "read recovery point", read).await
    }

    /// Writes `entry` as the point of `key` inside `transaction`; `Ok(None)` when written,
    /// `Ok(Some(there))` when another execution's point is there (committed), in which case
    /// the transaction must not commit this execution's effect. No time limit of its own: the
    /// statement runs on the application's transaction, under the application's timeouts.
    pub(crate) async fn record_in(
        &self,
        transaction: &mut Transaction<'_, Postgres>,
        key: &str,
        entry: &[u8],
        keep: Duration,
    ) -> Result<Option<Vec<u8>>> {
        let sql = &self.shared.sql;
        let written: Option<i32> = sqlx::query_scalar(&sql.record)
            .bind(key)
            .bind(entry)
            .bind(micros(keep.min(MAX_KEEP)))
            .fetch_optional(&mut **transaction)
            .await
            .map_err(|e| to_lock_error(STORE, e))?;
        if written.is_some() {
            return Ok(None);
        }
        let there: Option<Vec<u8>> = sqlx::query_scalar(&sql.find)
            .bind(key)
            .fetch_optional(&mut **transaction)
            .await
            .map_err(|e| to_lock_error(STORE, e))?;
        // Gone between the two statements (it expired just then): no other point stands in the
        // way, but this execution's was not written either; the caller must not commit.
        there.map(Some).ok_or_else(|| LockError::Protocol {
            backend: STORE,
            detail: "a recovery point expired while this one was written; retry the request".into(),
        })
    }
}

impl std::fmt::Debug for RecoveryPoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecoveryPoints")
            .field("table", &self.shared.table)
            .finish_non_exhaustive()
    }
}

/// Deletes expired points in bounded batches.
async fn purge(shared: Arc<Shared>) -> Result<u64> {
    sweep(|| async {
        sqlx::query(&shared.sql.purge_batch)
            .execute(&shared.pool)
            .await
            .map(|done| done.rows_affected())
            .map_err(|e| to_lock_error(STORE, e))
    })
    .await
}

/// Runs `statement`, giving up after `timeout`.
async fn timed<T>(
    timeout: Duration,
    operation: &'static str,
    statement: impl std::future::Future<Output = Result<T, sqlx::Error>>,
) -> Result<T> {
    match tokio::time::timeout(timeout, statement).await {
        Ok(done) => done.map_err(|e| to_lock_error(STORE, e)),
        Err(_elapsed) => Err(LockError::Timeout {
            backend: STORE,
            operation,
            after: timeout,
        }),
    }
}
