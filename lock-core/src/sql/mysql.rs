//! The MySQL / MariaDB lock-table backend: a short transaction per grant, serialized per name
//! by the name's fencing-counter row; waiters poll (see the [module docs](super)).

use std::sync::Arc;
use std::time::Duration;

use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions};
use sqlx::Executor;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::sweep::{spawn_sweeper, sweep, SWEEP_BATCH};
use super::waiters::WaiterHub;
use super::{
    micros, owner_host, owner_pid, remaining, run, storage_key, to_lock_error, wait_for_grant,
    Attempt, Source, SqlBackendBuilder, SqlConfig,
};
use crate::backend::in_flight::InFlight;
use crate::backend::{AcquireRequest, Capabilities, Grant, LeaseKind, LockBackend};
use crate::breaker::Breaker;
use crate::{FencingToken, LockError, LockKey, OwnerToken, Result};

const BACKEND: &str = "mysql";

/// Locks as rows of a MySQL (8.0+) or MariaDB (10.3+) table, expiring by the database's clock.
///
/// Cheap to clone: clones share one connection pool. Grant transactions run at `READ
/// COMMITTED`, so looking for a missing row takes no gap locks (the classic source of insert deadlocks).
///
/// ```no_run
/// use lock_core::{LockClient, MySqlBackend};
///
/// # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
/// let backend = MySqlBackend::connect("mysql://app@127.0.0.1/app").await?;
/// let locks = LockClient::new(backend);
/// let guard = locks.lock("invoice:7").await?;
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct MySqlBackend {
    shared: Arc<MyShared>,
}

struct MyShared {
    pool: MySqlPool,
    hub: WaiterHub,
    /// Grant transactions in flight, which run to their end even if their caller goes away.
    in_flight: InFlight,
    config: SqlConfig,
    /// The pool's circuit breaker.
    breaker: Breaker,
    sql: Statements,
    _stop_sweeper: DropGuard,
}

/// The statements, with the table's name put in once. Times are `UTC_TIMESTAMP(6)`, which does
/// not depend on the session's time zone.
struct Statements {
    peek: String,
    lock_counter: String,
    read: String,
    extend: String,
    take: String,
    check: String,
    renew: String,
    release: String,
    forget: String,
    sweep_locks: String,
    sweep_counters: String,
}

impl Statements {
    fn new(t: &str) -> Self {
        let held = "lock_key = ? AND owner = ? AND fence = ? AND expires_at > UTC_TIMESTAMP(6)";
        let left = "TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at)";
        Self {
            peek: format!("SELECT owner, {left} FROM {t} WHERE lock_key = ?"),
            // Creates the name's counter row if needed and bumps it, which also locks it until
            // the transaction ends: grants of one name run one at a time. A busy attempt rolls
            // back, so only grants (and retried grants) use up numbers.
            // A new counter starts from the clock in microseconds (see `sweep.rs`).
            lock_counter: format!(
                "INSERT INTO {t}_fence (lock_key, fence, touched_at) \
                 VALUES (?, FLOOR(UNIX_TIMESTAMP(NOW(6)) * 1000000), UTC_TIMESTAMP(6)) \
                 ON DUPLICATE KEY UPDATE fence = fence + 1, touched_at = UTC_TIMESTAMP(6)"
            ),
            read: format!(
                "SELECT f.fence, l.owner, l.fence, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), l.expires_at) \
                 FROM {t}_fence f LEFT JOIN {t} l ON l.lock_key = f.lock_key WHERE f.lock_key = ?"
            ),
            extend: format!(
                "UPDATE {t} SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND \
                 WHERE lock_key = ? AND owner = ?"
            ),
            take: format!(
                "REPLACE INTO {t} (lock_key, name, owner, fence, entry_count, owner_host, owner_pid, \
                 acquired_at, expires_at) VALUES (?, ?, ?, ?, 1, ?, ?, UTC_TIMESTAMP(6), \
                 UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)"
            ),
            check: format!("SELECT COUNT(*) FROM {t} WHERE {held}"),
            renew: format!(
                "UPDATE {t} SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND WHERE {held}"
            ),
            release: format!("DELETE FROM {t} WHERE {held}"),
            forget: format!("DELETE FROM {t} WHERE lock_key = ? AND owner = ?"),
            // Rows of holders that never released (crashed) whose lease ended long ago.
            sweep_locks: format!(
                "DELETE FROM {t} WHERE expires_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND \
                 LIMIT {SWEEP_BATCH}"
            ),
            // Counters of names not granted for as long, and not held now.
            sweep_counters: format!(
                "DELETE FROM {t}_fence \
                 WHERE touched_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND \
                 AND lock_key NOT IN (SELECT lock_key FROM {t}) LIMIT {SWEEP_BATCH}"
            ),
        }
    }
}

/// A lease held as a row of the lock table.
#[derive(Debug)]
pub struct MySqlLease {
    lock_key: String,
    owner: String,
    fence: u64,
}

/// What one grant transaction found.
enum Outcome {
    Granted { fence: u64, sent: Instant },
    Busy(Option<i64>),
}

impl SqlBackendBuilder<MySqlBackend> {
    /// Connects and creates the schema (unless turned off).
    pub async fn connect(self) -> Result<MySqlBackend> {
        let (source, config, create) = self.checked()?;
        let url = match source {
            Source::Url(url) => url,
            Source::MySql(pool) => {
                return Self::finish(pool, config, create).await;
            }
            #[cfg(feature = "postgres")]
            Source::Postgres(_) => unreachable!("a PostgreSQL pool in a MySQL builder"),
        };
        let options: MySqlConnectOptions = url
            .parse()
            .map_err(|e| LockError::InvalidConfig(format!("MySQL URL: {e}")))?;
        let pool = MySqlPoolOptions::new()
            .max_connections(config.max_connections)
            .acquire_timeout(config.response_timeout)
            .after_connect(|connection, _| {
                Box::pin(async move {
                    connection
                        .execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
                        .await
                        .map(|_| ())
                })
            })
            .connect_with(options)
            .await
            .map_err(|e| to_lock_error(BACKEND, e))?;
        Self::finish(pool, config, create).await
    }

    async fn finish(pool: MySqlPool, config: SqlConfig, create: bool) -> Result<MySqlBackend> {
        if create {
            create_schema(&pool, &config.table).await?;
        }
        let stop = CancellationToken::new();
        let backend = MySqlBackend {
            shared: Arc::new(MyShared {
                pool,
                hub: WaiterHub::default(),
                in_flight: InFlight::default(),
                sql: Statements::new(&config.table),
                breaker: Breaker::new(BACKEND, config.breaker),
                config,
                _stop_sweeper: stop.clone().drop_guard(),
            }),
        };
        spawn_sweeper(
            BACKEND,
            "rows of locks unused for a day",
            stop,
            Arc::downgrade(&backend.shared),
            sweep_rows,
        );
        Ok(backend)
    }
}

impl MySqlBackend {
    /// Connects with default settings to `url` (`mysql://user:password@host:port/db`).
    pub async fn connect(url: &str) -> Result<Self> {
        Self::builder(url).connect().await
    }

    /// Starts configuring a backend for `url`.
    pub fn builder(url: impl Into<String>) -> SqlBackendBuilder<Self> {
        Self::builder_with(Source::Url(url.into()))
    }

    /// Builds a backend with default settings on an existing pool (see
    /// [`builder_from_pool`](Self::builder_from_pool)); creates the schema if missing.
    pub async fn from_pool(pool: MySqlPool) -> Result<Self> {
        Self::builder_from_pool(pool).connect().await
    }

    /// Starts configuring a backend on an existing pool (shared with the application). The
    /// pool keeps its size and acquire timeout
    /// ([`max_connections`](SqlBackendBuilder::max_connections) is not used) and its
    /// connections their session settings: the backend starts each grant transaction at
    /// `READ COMMITTED` itself.
    ///
    /// ```no_run
    /// use lock_core::{LockClient, MySqlBackend};
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let pool = sqlx::MySqlPool::connect("mysql://app@127.0.0.1/app").await?;
    /// let backend = MySqlBackend::builder_from_pool(pool.clone())
    ///     // The application's migrations create the tables (see `MIGRATION`).
    ///     .create_schema(false)
    ///     .connect()
    ///     .await?;
    /// let locks = LockClient::new(backend);
    /// # Ok(()) }
    /// ```
    pub fn builder_from_pool(pool: MySqlPool) -> SqlBackendBuilder<Self> {
        Self::builder_with(Source::MySql(pool))
    }

    /// The migration creating the default lock table (`lock_core_locks`) and its counters:
    /// the statements of [`schema_statements`](Self::schema_statements), as the file
    /// `lock-core/migrations/mysql/0001_lock_core.sql`. For `sqlx migrate` or any other
    /// migration tool; then connect with
    /// [`create_schema(false)`](SqlBackendBuilder::create_schema).
    pub const MIGRATION: &'static str = include_str!("../../migrations/mysql/0001_lock_core.sql");

    fn builder_with(source: Source) -> SqlBackendBuilder<Self> {
        SqlBackendBuilder::new(
            source,
            Duration::from_millis(10),
            Duration::from_millis(100),
        )
    }

    /// The statements that create the lock table `table` and its per-name fencing counters
    /// (`<table>_fence`), for migrations; both are idempotent (`IF NOT EXISTS`). A counter
    /// table made by an earlier version lacks `touched_at`; [`create_schema`](Self::create_schema)
    /// adds it. Keys are
    /// `VARBINARY`, so names compare byte for byte (no case folding, no trailing-space rules).
    #[must_use]
    pub fn schema_statements(table: &str) -> Vec<String> {
        vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {table} (
                   lock_key    VARBINARY(128) NOT NULL PRIMARY KEY,
                   name        VARCHAR(600) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
                   owner       CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
                   fence       BIGINT UNSIGNED NOT NULL,
                   entry_count INT NOT NULL DEFAULT 1,
                   owner_host  VARCHAR(255) NOT NULL DEFAULT '',
                   owner_pid   INT NOT NULL DEFAULT 0,
                   acquired_at DATETIME(6) NOT NULL,
                   expires_at  DATETIME(6) NOT NULL
                 ) ENGINE=InnoDB"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {table}_fence (
                   lock_key   VARBINARY(128) NOT NULL PRIMARY KEY,
                   fence      BIGINT UNSIGNED NOT NULL,
                   touched_at DATETIME(6) NOT NULL DEFAULT '1970-01-01 00:00:00'
                 ) ENGINE=InnoDB"
            ),
        ]
    }

    /// Creates the tables if missing (what `connect` does unless
    /// [`create_schema(false)`](SqlBackendBuilder::create_schema) was set).
    pub async fn create_schema(&self) -> Result<()> {
        create_schema(&self.shared.pool, &self.shared.config.table).await
    }

    /// The [circuit breaker](crate::breaker) of this backend's pool: its calls go through it.
    #[must_use]
    pub fn breaker(&self) -> &Breaker {
        &self.shared.breaker
    }

    /// The connection pool, e.g. to write to a fenced resource on the same database.
    #[must_use]
    pub fn pool(&self) -> &MySqlPool {
        &self.shared.pool
    }

    /// The lock table's name.
    #[must_use]
    pub fn table(&self) -> &str {
        &self.shared.config.table
    }

    /// How many tasks of this backend wait for the lock `full_key` (`namespace:key`). The
    /// database keeps no waiter entries; this is the local count.
    #[must_use]
    pub fn waiters(&self, full_key: &str) -> usize {
        self.shared.hub.count(&storage_key(full_key))
    }

    async fn attempt(
        &self,
        lock_key: &str,
        name: &str,
        (token, owner): (OwnerToken, &str),
        ttl: i64,
        recheck: bool,
    ) -> Result<Attempt<MySqlLease>> {
        let shared = &*self.shared;
        if recheck {
            // A waiter's re-check: one read, and no transaction while the holder is alive.
            // `owner` is ascii_bin, which the driver reports as binary.
            let row: Option<(Vec<u8>, i64)> =
                run(BACKEND, &shared.config, &shared.breaker, "acquire", || {
                    sqlx::query_as(&shared.sql.peek)
                        .bind(lock_key)
                        .fetch_optional(&shared.pool)
                })
                .await?;
            if let Some((holder, left)) = row {
                if holder != owner.as_bytes() && left > 0 {
                    return Ok(Attempt::Busy(remaining(Some(left))));
                }
            }
        }
        // The transaction runs in a task of its own: a caller that goes away (or a response
        // timeout) must not cut it off between `START TRANSACTION` and its end, which would
        // hand the pooled connection on with a transaction open and its row locks held.
        let outcome = run(BACKEND, &shared.config, &shared.breaker, "acquire", || {
            let shared = self.shared.clone();
            let (lock_key, name, owner) = (lock_key.to_owned(), name.to_owned(), owner.to_owned());
            let transaction =
                async move { grant_transaction(&shared, &lock_key, &name, &owner, ttl).await };
            let in_flight = self.shared.in_flight.clone();
            async move {
                in_flight
                    .run(token, transaction)
                    .await
                    .unwrap_or_else(|failed| {
                        Err(sqlx::Error::Protocol(format!(
                            "the grant transaction's task failed: {failed}"
                        )))
                    })
            }
        })
        .await?;
        Ok(match outcome {
            Outcome::Busy(left) => Attempt::Busy(remaining(left)),
            Outcome::Granted { fence, sent } => {
                let lease = MySqlLease {
                    lock_key: lock_key.to_owned(),
                    owner: owner.to_owned(),
                    fence,
                };
                Attempt::Granted(Grant::new(lease, FencingToken::new(fence), sent))
            }
        })
    }

    /// Deletes now the rows of locks whose lease ended, and the counters of names not granted,
    /// more than [`ROW_RETENTION`](super::ROW_RETENTION) ago (the backend also does this every
    /// [`SWEEP_EVERY`](super::SWEEP_EVERY)); returns how many rows.
    pub async fn sweep_expired(&self) -> Result<u64> {
        sweep_rows(self.shared.clone()).await
    }

    /// Deletes the row under `owner` (a token's hex form), waking a local waiter; true when
    /// found.
    async fn forget(&self, lock_key: &str, owner: &str) -> Result<bool> {
        let shared = &*self.shared;
        let done = run(
            BACKEND,
            &shared.config,
            &shared.breaker,
            "release",
            || async {
                sqlx::query(&shared.sql.forget)
                    .bind(lock_key)
                    .bind(owner)
                    .execute(&shared.pool)
                    .await
            },
        )
        .await?;
        let found = done.rows_affected() > 0;
        if found {
            shared.hub.wake_one(lock_key);
        }
        Ok(found)
    }
}

impl LockBackend for MySqlBackend {
    type Lease = MySqlLease;

    fn capabilities(&self) -> Capabilities {
        Capabilities::new(BACKEND)
    }

    fn breaker(&self) -> Option<&Breaker> {
        Some(&self.shared.breaker)
    }

    async fn acquire(&self, request: AcquireRequest<'_>) -> Result<Option<Grant<MySqlLease>>> {
        if request.kind != LeaseKind::Exclusive {
            return Err(request.kind.unsupported(BACKEND));
        }
        let name = request.key.full();
        let lock_key = storage_key(name);
        let owner = request.owner.to_hex();
        let ttl = micros(request.ttl);
        let shared = &*self.shared;
        wait_for_grant(
            &shared.hub,
            &lock_key,
            &request,
            &shared.config,
            |recheck| self.attempt(&lock_key, name, (request.owner, &owner), ttl, recheck),
        )
        .await
    }

    async fn renew(&self, lease: &MySqlLease, ttl: Option<Duration>) -> Result<bool> {
        let shared = &*self.shared;
        run(
            BACKEND,
            &shared.config,
            &shared.breaker,
            "renew",
            || async {
                // The connection reports matched rows (CLIENT_FOUND_ROWS), not changed ones.
                let held = match ttl {
                    Some(ttl) => sqlx::query(&shared.sql.renew)
                        .bind(micros(ttl))
                        .bind(&lease.lock_key)
                        .bind(&lease.owner)
                        .bind(lease.fence)
                        .execute(&shared.pool)
                        .await?
                        .rows_affected(),
                    None => {
                        let count: i64 = sqlx::query_scalar(&shared.sql.check)
                            .bind(&lease.lock_key)
                            .bind(&lease.owner)
                            .bind(lease.fence)
                            .fetch_one(&shared.pool)
                            .await?;
                        u64::try_from(count).unwrap_or(0)
                    }
                };
                Ok(held == 1)
            },
        )
        .await
    }

    async fn release(&self, lease: &MySqlLease) -> Result<bool> {
        let shared = &*self.shared;
        let released = run(
            BACKEND,
            &shared.config,
            &shared.breaker,
            "release",
            || async {
                let live = sqlx::query(&shared.sql.release)
                    .bind(&lease.lock_key)
                    .bind(&lease.owner)
                    .bind(lease.fence)
                    .execute(&shared.pool)
                    .await?
                    .rows_affected();
                if live == 0 {
                    // Our row may still be there, expired: drop it rather than leave it behind.
                    sqlx::query(&shared.sql.forget)
                        .bind(&lease.lock_key)
                        .bind(&lease.owner)
                        .execute(&shared.pool)
                        .await?;
                }
                Ok(live == 1)
            },
        )
        .await?;
        // Waiters in this process need not wait for their next poll.
        shared.hub.wake_one(&lease.lock_key);
        Ok(released)
    }

    async fn release_abandoned(
        &self,
        key: &LockKey,
        kind: LeaseKind,
        owner: OwnerToken,
    ) -> Result<bool> {
        if kind != LeaseKind::Exclusive {
            // Nothing of another kind is ever stored here (`acquire` refuses it).
            return Ok(false);
        }
        self.shared.in_flight.settled(owner).await;
        self.forget(&storage_key(key.full()), &owner.to_hex()).await
    }
}

impl std::fmt::Debug for MySqlBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MySqlBackend")
            .field("table", &self.shared.config.table)
            .finish_non_exhaustive()
    }
}

/// One sweep of lock rows and counters unused for [`ROW_RETENTION`](super::ROW_RETENTION).
async fn sweep_rows(shared: Arc<MyShared>) -> Result<u64> {
    let retention = micros(super::ROW_RETENTION);
    let mut deleted = 0;
    for statement in [&shared.sql.sweep_locks, &shared.sql.sweep_counters] {
        deleted += sweep(|| async {
            let done = run(BACKEND, &shared.config, &shared.breaker, "sweep", || {
                sqlx::query(statement).bind(retention).execute(&shared.pool)
            })
            .await?;
            Ok(done.rows_affected())
        })
        .await?;
    }
    Ok(deleted)
}

/// One grant attempt's transaction: take the key if it is free (or is already ours, a retry
/// whose reply was lost), with the next fencing token; `Busy` with the holder's time left
/// otherwise.
async fn grant_transaction(
    shared: &MyShared,
    lock_key: &str,
    name: &str,
    owner: &str,
    ttl: i64,
) -> Result<Outcome, sqlx::Error> {
    // Set per transaction too, for pools the backend did not open.
    let mut tx = shared
        .pool
        .begin_with("SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION")
        .await?;
    tx.execute(sqlx::query(&shared.sql.lock_counter).bind(lock_key))
        .await?;
    let (counter, holder, fence, left): (u64, Option<Vec<u8>>, Option<u64>, Option<i64>) =
        sqlx::query_as(&shared.sql.read)
            .bind(lock_key)
            .fetch_one(&mut *tx)
            .await?;
    let sent = Instant::now();
    let outcome = match (holder, fence) {
        // A retry of our own grant whose reply was lost: the same lease again.
        (Some(holder), Some(fence)) if holder == owner.as_bytes() => {
            sqlx::query(&shared.sql.extend)
                .bind(ttl)
                .bind(lock_key)
                .bind(owner)
                .execute(&mut *tx)
                .await?;
            Outcome::Granted { fence, sent }
        }
        (Some(_), _) if left.is_some_and(|us| us > 0) => {
            tx.rollback().await?;
            return Ok(Outcome::Busy(left));
        }
        _ => {
            sqlx::query(&shared.sql.take)
                .bind(lock_key)
                .bind(name)
                .bind(owner)
                .bind(counter)
                .bind(owner_host())
                .bind(owner_pid())
                .bind(ttl)
                .execute(&mut *tx)
                .await?;
            Outcome::Granted {
                fence: counter,
                sent,
            }
        }
    };
    tx.commit().await?;
    Ok(outcome)
}

async fn create_schema(pool: &MySqlPool, table: &str) -> Result<()> {
    for statement in MySqlBackend::schema_statements(table) {
        sqlx::raw_sql(&statement)
            .execute(pool)
            .await
            .map_err(|e| to_lock_error(BACKEND, e))?;
    }
    // Counter tables from before retention lack `touched_at`: add it (MySQL has no
    // `ADD COLUMN IF NOT EXISTS`, so look first).
    let has_column: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.columns \
         WHERE table_schema = DATABASE() AND table_name = ? AND column_name = 'touched_at'",
    )
    .bind(format!("{table}_fence"))
    .fetch_one(pool)
    .await
    .map_err(|e| to_lock_error(BACKEND, e))?;
    if has_column == 0 {
        let alter = format!(
            "ALTER TABLE {table}_fence \
             ADD COLUMN touched_at DATETIME(6) NOT NULL DEFAULT '1970-01-01 00:00:00'"
        );
        match sqlx::raw_sql(&alter).execute(pool).await {
            // Another instance added it meanwhile (ER_DUP_FIELDNAME).
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42S21") => {}
            other => other.map(drop).map_err(|e| to_lock_error(BACKEND, e))?,
        }
    }
    Ok(())
}
