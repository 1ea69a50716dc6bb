//! Recovery points (feature `postgres` or `mysql`): where an idempotent request's effect
//! records its answer when the idempotency records are kept elsewhere (on Redis, say). See
//! [`RecoveryPoints`].

mod builder;

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use sqlx::Pool;
use tokio_util::sync::{CancellationToken, DropGuard};

pub use self::builder::RecoveryPointsBuilder;
use super::dialect::{Exec, Statement, Values};
use crate::backend::BoxFuture;
use crate::breaker::Breaker;
use crate::results::{CommitPlace, CommitPlaceSealed};
use crate::sql::{is_unreachable, sweep, to_lock_error, validate_table, Dialect};
use crate::{LockError, Result};

/// The default table.
const DEFAULT_TABLE: &str = "lock_core_recovery_points";

/// The longest a point is kept (a century), as the databases' timestamps end not far after.
const MAX_KEEP: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Recovery points in the database your effects are written to: the one thing that makes a
/// request **exactly once** when its idempotency record lives in another store.
///
/// An idempotency record on Redis cannot commit together with a payment written to
/// PostgreSQL or MySQL: a process that dies after the payment committed and before its record
/// was completed leaves a record that says "in flight", its claim expires, and the retry runs
/// the payment again (a fencing token cannot stop it: the retry's token is the newer one). A
/// recovery point closes that gap. The handler writes it in its own transaction with
/// [`ClaimInfo::commit_in`](crate::idempotency::ClaimInfo::commit_in): one row per (scope, key), holding
/// the answer, committed with the effect or not at all. A retry whose claim finds a recovery
/// point replays its answer (and completes the record with it) instead of running; two
/// executions that overlap (a holder paused past its lease) cannot both commit, as the
/// second one's insert waits for the first one's transaction and then finds its row.
///
/// ```no_run
/// use lock_core::idempotency::Idempotency;
/// use lock_core::sql::RecoveryPoints;
/// use lock_core::redis::RedisResultStore;
/// use lock_core::RedisBackend;
///
/// # async fn example(pool: sqlx::PgPool) -> Result<(), lock_core::LockError> {
/// // `pool` is the database the handlers write their effects to.
/// let backend = RedisBackend::connect("redis://127.0.0.1:6379/").await?;
/// let payments = Idempotency::builder(RedisResultStore::from_backend(&backend).await?, backend)
///     .namespace("payments")
///     .recovery_points(RecoveryPoints::from_pool(pool).await?)
///     .build()?;
/// # let _ = payments; Ok(()) }
/// ```
///
/// # The table
/// `lock_core_recovery_points` by default, created when missing unless
/// [`create_table(false)`](RecoveryPointsBuilder::create_table); its migration
/// ([`migration::<D>(table)`](Self::migration), `D` the database) is there for teams that
/// create tables in migrations.
///
/// | column | meaning |
/// |---|---|
/// | `key` (PostgreSQL) / `point_key` (MySQL, SHA-256 past 128 bytes) | primary key: the idempotency record's key (namespace, scope and key) |
/// | `entry` | the completed record: fencing token, request fingerprint, response |
/// | `expires_at` | the record's retention, by the **database's** clock |
///
/// Points live as long as the records (the [`Idempotency`](crate::idempotency::Idempotency)'s
/// retention). Expired ones are never read; a task per `RecoveryPoints` deletes them every
/// hour (in batches), and [`purge_expired`](Self::purge_expired) does it on demand.
#[derive(Clone)]
pub struct RecoveryPoints {
    shared: Arc<Shared>,
}

impl CommitPlaceSealed for RecoveryPoints {}

/// Claims look for a point beside their in-flight write.
impl CommitPlace for RecoveryPoints {
    fn find_point<'a>(&'a self, key: &'a str) -> Option<BoxFuture<'a, Result<Option<Vec<u8>>>>> {
        Some(Box::pin(self.find(key)))
    }
}

struct Shared {
    db: Box<dyn Db>,
    table: String,
    timeout: Duration,
    /// Reads and purges go through it (the writes run on the application's transaction).
    breaker: Breaker,
    _stop: DropGuard,
}

/// The points' database, whichever it is: its pool and statements.
trait Db: Any + Send + Sync {
    /// `"postgres"` or `"mysql"`.
    fn name(&self) -> &'static str;
    /// Creates the table `table` if missing.
    fn create<'a>(&'a self, table: &'a str) -> BoxFuture<'a, Result<(), sqlx::Error>>;
    /// The live point of `key` (the record's full key), if any.
    fn find<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, sqlx::Error>>;
    /// Deletes one batch of expired points: how many.
    fn purge_batch(&self) -> BoxFuture<'_, Result<u64, sqlx::Error>>;
}

/// The points in database `D`.
struct Points<D: Dialect> {
    pool: Pool<D>,
    sql: PointsStatements,
}

impl<D: Dialect> Db for Points<D> {
    fn name(&self) -> &'static str {
        D::BACKEND
    }

    fn create<'a>(&'a self, table: &'a str) -> BoxFuture<'a, Result<(), sqlx::Error>> {
        Box::pin(async move { D::create_table(&self.pool, &migration::<D>(table)).await })
    }

    fn find<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, sqlx::Error>> {
        Box::pin(async move {
            let stored_key = D::point_key(key);
            D::find_point(&self.pool, &self.sql.find, &stored_key).await
        })
    }

    fn purge_batch(&self) -> BoxFuture<'_, Result<u64, sqlx::Error>> {
        Box::pin(<D as Exec>::rows(
            &self.pool,
            &self.sql.purge_batch,
            Values::default(),
        ))
    }
}

/// One point to write: the record's full key, its entry, and how long to keep it (µs).
#[derive(Clone, Copy, Debug)]
pub struct Point<'a> {
    pub(crate) key: &'a str,
    pub(crate) entry: &'a [u8],
    pub(crate) keep: i64,
}

/// One dialect's statements on the points table, with its name put in once.
#[derive(Debug)]
pub struct PointsStatements {
    /// The stored key → the live entry, if any.
    pub(crate) find: String,
    /// Before `record`, where the dialect needs it (MySQL): deletes the key's point if it
    /// expired, so that the insert after it can take its place.
    #[cfg_attr(not(feature = "mysql"), allow(dead_code))]
    pub(crate) clear_expired: Option<String>,
    /// Writes the point unless a live one is there.
    pub(crate) record: String,
    /// Deletes up to [`SWEEP_BATCH`](crate::sql::sweep::SWEEP_BATCH) expired rows.
    pub(crate) purge_batch: Statement,
}

/// The migration of a points table named `table` (checked beforehand) in database `D`.
fn migration<D: Dialect>(table: &str) -> String {
    D::POINTS_MIGRATION.replace(DEFAULT_TABLE, table)
}

impl RecoveryPoints {
    /// The default table, `lock_core_recovery_points`.
    ///
    /// ```
    /// use lock_core::sql::RecoveryPoints;
    ///
    /// assert_eq!(RecoveryPoints::DEFAULT_TABLE, "lock_core_recovery_points");
    /// ```
    pub const DEFAULT_TABLE: &'static str = DEFAULT_TABLE;

    /// Recovery points in the default table of `pool`'s database (PostgreSQL or MySQL /
    /// MariaDB), created when missing.
    ///
    /// ```no_run
    /// # async fn example(pool: sqlx::PgPool) -> Result<(), lock_core::LockError> {
    /// let points = lock_core::sql::RecoveryPoints::from_pool(pool).await?;
    /// # let _ = points; Ok(()) }
    /// ```
    pub async fn from_pool<D: Dialect>(pool: Pool<D>) -> Result<Self> {
        Self::builder_from_pool(pool).connect().await
    }

    /// Starts configuring recovery points in `pool`'s database (PostgreSQL or MySQL /
    /// MariaDB).
    ///
    /// ```no_run
    /// # #[cfg(feature = "mysql")]
    /// # async fn example(pool: sqlx::MySqlPool) -> Result<(), lock_core::LockError> {
    /// let points = lock_core::sql::RecoveryPoints::builder_from_pool(pool)
    ///     .table("payments_recovery")
    ///     .create_table(false)
    ///     .connect()
    ///     .await?;
    /// # let _ = points; Ok(()) }
    /// ```
    pub fn builder_from_pool<D: Dialect>(pool: Pool<D>) -> RecoveryPointsBuilder<D> {
        RecoveryPointsBuilder::new(pool)
    }

    /// The migration (`CREATE TABLE IF NOT EXISTS`, and its index) of a recovery-point table
    /// named `table` in database `D` (`sqlx::Postgres` or `sqlx::MySql`), for teams that
    /// create tables in migrations; an error when `table` is not a plain identifier (ASCII
    /// letters, digits and `_`, not starting with a digit, at most 48 bytes).
    ///
    /// ```
    /// # #[cfg(all(feature = "postgres", feature = "mysql"))] {
    /// use lock_core::sql::RecoveryPoints;
    ///
    /// let sql = RecoveryPoints::migration::<sqlx::Postgres>("payments_recovery")?;
    /// assert!(sql.starts_with("CREATE TABLE IF NOT EXISTS payments_recovery ("));
    /// let default = RecoveryPoints::migration::<sqlx::MySql>(RecoveryPoints::DEFAULT_TABLE)?;
    /// assert!(default.contains("point_key  VARBINARY(128) NOT NULL PRIMARY KEY"));
    /// assert!(RecoveryPoints::migration::<sqlx::Postgres>("x; DROP TABLE y").is_err());
    /// # }
    /// # Ok::<(), lock_core::LockError>(())
    /// ```
    pub fn migration<D: Dialect>(table: &str) -> Result<String> {
        validate_table(table)?;
        Ok(migration::<D>(table))
    }

    /// Deletes the expired points (in batches of 1,000) and returns how many.
    ///
    /// ```no_run
    /// # async fn example(points: lock_core::sql::RecoveryPoints) -> Result<(), lock_core::LockError> {
    /// let deleted = points.purge_expired().await?;
    /// # let _ = deleted; Ok(()) }
    /// ```
    pub async fn purge_expired(&self) -> Result<u64> {
        purge(self.shared.clone()).await
    }

    /// The table's name.
    ///
    /// ```no_run
    /// # fn example(points: lock_core::sql::RecoveryPoints) {
    /// assert_eq!(points.table(), "lock_core_recovery_points");
    /// # }
    /// ```
    #[must_use]
    pub fn table(&self) -> &str {
        &self.shared.table
    }

    /// The [circuit breaker](crate::breaker) the reads of points go through: the lock
    /// backend's when the points were given it
    /// ([`RecoveryPointsBuilder::breaker`]), else their own.
    ///
    /// ```no_run
    /// # fn example(points: lock_core::sql::RecoveryPoints) {
    /// let state = points.breaker().state();
    /// # let _ = state; }
    /// ```
    #[must_use]
    pub fn breaker(&self) -> &Breaker {
        &self.shared.breaker
    }

    /// `"postgres"` or `"mysql"`.
    ///
    /// ```no_run
    /// # fn example(points: lock_core::sql::RecoveryPoints) {
    /// assert_eq!(points.database(), "postgres");
    /// # }
    /// ```
    #[must_use]
    pub fn database(&self) -> &'static str {
        self.shared.db.name()
    }

    /// Creates the table if asked and starts the hourly purge.
    async fn start(
        db: Box<dyn Db>,
        table: String,
        create: bool,
        timeout: Duration,
        breaker: Breaker,
    ) -> Result<Self> {
        if create {
            let created = db.create(&table);
            through(&breaker, timeout, db.name(), "create table", created).await?;
        }
        let stop = CancellationToken::new();
        let backend = db.name();
        let shared = Arc::new(Shared {
            db,
            table,
            timeout,
            breaker,
            _stop: stop.clone().drop_guard(),
        });
        crate::sql::spawn_sweeper(
            backend,
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
        let found = shared.db.find(key);
        let name = shared.db.name();
        through(
            &shared.breaker,
            shared.timeout,
            name,
            "read recovery point",
            found,
        )
        .await
    }

    /// Writes `entry` as the point of `key` on `connection`, in the application's transaction:
    /// `Ok(None)` when written, `Ok(Some(there))` when another execution's point is there
    /// (committed), in which case
    /// the transaction must not commit this execution's effect. No time limit of its own: the
    /// statements run on the application's transaction, under the application's timeouts.
    pub(crate) async fn record_in<D: Dialect>(
        &self,
        connection: &mut D::Connection,
        key: &str,
        entry: &[u8],
        keep: Duration,
    ) -> Result<Option<Vec<u8>>> {
        let point = Point {
            key,
            entry,
            keep: crate::sql::micros(keep.min(MAX_KEEP)),
        };
        let db: &dyn Any = self.shared.db.as_ref();
        let Some(points) = db.downcast_ref::<Points<D>>() else {
            return Err(LockError::InvalidConfig(format!(
                "the recovery points are in {}, the transaction is on {}: they must be in the \
                 database the effect is written to",
                self.shared.db.name(),
                D::BACKEND
            )));
        };
        let there = D::record_point(&points.sql, connection, point).await?;
        match there {
            None => Ok(None),
            Some(Some(point)) => Ok(Some(point)),
            // Gone between the statements (it expired just then): no other point stands in
            // the way, but this execution's was not written either; it must not commit.
            Some(None) => Err(LockError::Protocol {
                backend: self.shared.db.name(),
                detail: "a recovery point expired while this one was written; retry the request"
                    .into(),
            }),
        }
    }
}

impl std::fmt::Debug for RecoveryPoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecoveryPoints")
            .field("database", &self.shared.db.name())
            .field("table", &self.shared.table)
            .finish_non_exhaustive()
    }
}

/// Deletes expired points in bounded batches.
async fn purge(shared: Arc<Shared>) -> Result<u64> {
    sweep(|| async {
        let batch = shared.db.purge_batch();
        // A purge is a batch of deletes, not a request: it gets the time it needs.
        let generous = shared.timeout.max(Duration::from_secs(60));
        through(&shared.breaker, generous, shared.db.name(), "purge", batch).await
    })
    .await
}

/// The live point a dialect's `find` statement (one parameter: the stored key) reads, on the
/// pool or in the application's transaction.
pub(crate) async fn read_point<'a, DB, E>(
    executor: E,
    find: &'a str,
    stored_key: &'a str,
) -> Result<Option<Vec<u8>>, sqlx::Error>
where
    DB: sqlx::Database,
    E: sqlx::Executor<'a, Database = DB> + 'a,
    for<'q> DB::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    for<'q> &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    for<'r> Vec<u8>: sqlx::Decode<'r, DB> + sqlx::Type<DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    sqlx::query_scalar(find)
        .bind(stored_key)
        .fetch_optional(executor)
        .await
}

/// Runs `statement` through `breaker` (refused at once while the database is known to be
/// down), giving up after `timeout`.
async fn through<T>(
    breaker: &Breaker,
    timeout: Duration,
    backend: &'static str,
    operation: &'static str,
    statement: impl std::future::Future<Output = Result<T, sqlx::Error>>,
) -> Result<T> {
    let admission = breaker.admit()?;
    match tokio::time::timeout(timeout, statement).await {
        Ok(done) => {
            match &done {
                Err(error) if is_unreachable(error) => admission.unavailable(error),
                _ => admission.answered(),
            }
            done.map_err(|e| to_lock_error(backend, e))
        }
        Err(_elapsed) => {
            admission.unavailable(format!("no reply within {timeout:?}"));
            Err(LockError::Timeout {
                backend,
                operation,
                after: timeout,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{RecoveryPoints, DEFAULT_TABLE};
    use crate::sql::Dialect;

    /// The migration of the default table is the dialect's, and another table's names that
    /// table throughout (`index`: how its index is declared).
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    fn the_migration_names_its_table<D: Dialect>(index: &str) {
        assert_eq!(
            RecoveryPoints::migration::<D>(DEFAULT_TABLE).unwrap(),
            D::POINTS_MIGRATION
        );
        let other = RecoveryPoints::migration::<D>("points").unwrap();
        assert!(other.starts_with("CREATE TABLE IF NOT EXISTS points ("));
        assert!(other.contains(index), "{other}");
        assert!(RecoveryPoints::migration::<D>("x; DROP TABLE y").is_err());
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn the_postgres_migration_names_its_table() {
        the_migration_names_its_table::<sqlx::Postgres>("points_expires_at ON points (expires_at)");
    }

    #[cfg(feature = "mysql")]
    #[test]
    fn the_mysql_migration_names_its_table() {
        the_migration_names_its_table::<sqlx::MySql>("INDEX points_expires_at (expires_at)");
    }
}
