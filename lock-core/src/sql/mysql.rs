//! The MySQL / MariaDB dialect, for every SQL store: `?` placeholders and `` `quoted` `` names;
//! the lock table's short transaction per grant, serialized per name by the name's
//! fencing-counter row, and waiters that poll (see the [module docs](super)); the stock's
//! clauses; the recovery points' table and statements.

use std::borrow::Cow;
use std::sync::Arc;

use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions};
use sqlx::{Executor, MySql, MySqlConnection};
use tokio::time::Instant;

use super::dialect::{Ask, Bind, Outcome, Sealed, Statement, Statements, Wake};
use super::recovery::{self, Point, PointsStatements};
use super::sweep::SWEEP_BATCH;
use super::{owner_host, owner_pid, storage_key, to_lock_error, SqlBackend};
use crate::Result;

impl Sealed for sqlx::MySql {
    // ---- Every store

    const BACKEND: &'static str = "mysql";

    fn is_conflict(error: &sqlx::Error) -> bool {
        let sqlx::Error::Database(db) = error else {
            return false;
        };
        // Deadlock victim, lock wait timeout.
        db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
            .is_some_and(|my| matches!(my.number(), 1205 | 1213))
    }

    fn placeholder(_n: usize) -> String {
        "?".to_owned()
    }

    fn placeholders(sql: &str) -> String {
        sql.to_owned()
    }

    fn quote(identifier: &str) -> String {
        format!("`{identifier}`")
    }

    // ---- Tables of entries by key

    fn live_entry(t: &str, key: &str) -> String {
        format!("SELECT entry FROM {t} WHERE {key} = ? AND expires_at > NOW(6)")
    }

    fn purge_expired(t: &str, _key: &str) -> String {
        format!("DELETE FROM {t} WHERE expires_at <= NOW(6) LIMIT {SWEEP_BATCH}")
    }

    async fn create_table(
        pool: &MySqlPool,
        migration: &str,
    ) -> std::result::Result<(), sqlx::Error> {
        sqlx::raw_sql(migration).execute(pool).await.map(drop)
    }

    // ---- The lock table

    type Grant = MyGrant;
    const MIGRATION: &'static str = include_str!("../../migrations/mysql/0001_lock_core.sql");

    fn statements(t: &str, operator: bool) -> (Statements, MyGrant) {
        use Bind::{Fence, Key, Owner, Retention, Ttl};
        let held = "lock_key = ? AND owner = ? AND fence = ? AND expires_at > UTC_TIMESTAMP(6)";
        let left = "TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at)";
        let forget = format!("DELETE FROM {t} WHERE lock_key = ? AND owner = ?");
        let mut statements = Statements {
            // `owner` is ascii_bin, which the driver reports as binary.
            peek: Some(Statement::new(
                format!("SELECT owner, {left} FROM {t} WHERE lock_key = ?"),
                &[Key],
            )),
            check: Statement::new(
                format!("SELECT COUNT(*) FROM {t} WHERE {held}"),
                &[Key, Owner, Fence],
            ),
            renew: Statement::new(
                format!(
                    "UPDATE {t} SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND \
                     WHERE {held}"
                ),
                &[Ttl, Key, Owner, Fence],
            ),
            release: Statement::new(
                format!("DELETE FROM {t} WHERE {held}"),
                &[Key, Owner, Fence],
            ),
            release_expired: Some(Statement::new(forget.clone(), &[Key, Owner])),
            forget: Statement::new(forget, &[Key, Owner]),
            sweeps: vec![
                // Rows of holders that never released (crashed) whose lease ended long ago.
                Statement::new(
                    format!(
                        "DELETE FROM {t} \
                         WHERE expires_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND \
                         LIMIT {SWEEP_BATCH}"
                    ),
                    &[Retention],
                ),
                // Counters of names not granted for as long, and not held now.
                Statement::new(
                    format!(
                        "DELETE FROM {t}_fence \
                         WHERE touched_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND \
                         AND lock_key NOT IN (SELECT lock_key FROM {t}) LIMIT {SWEEP_BATCH}"
                    ),
                    &[Retention],
                ),
            ],
        };
        if operator {
            // Audit records past their own retention.
            statements.sweeps.push(Statement::new(
                format!(
                    "DELETE FROM {t}_audit WHERE expires_at <= UTC_TIMESTAMP(6) \
                     LIMIT {SWEEP_BATCH}"
                ),
                &[],
            ));
        }
        // With the operator's schema a grant also writes the holder's label, in the same
        // statement. `REPLACE` writes the whole row: a grant by a client of an older version
        // leaves no label behind from the previous holder.
        let (label_column, label_value) = if operator {
            (", label", ", ?")
        } else {
            ("", "")
        };
        let grant = MyGrant {
            labels: operator,
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
                 acquired_at, expires_at{label_column}) VALUES (?, ?, ?, ?, 1, ?, ?, \
                 UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND{label_value})"
            ),
        };
        (statements, grant)
    }

    /// Grant transactions run at `READ COMMITTED`, so looking for a missing row takes no gap
    /// locks (the classic source of insert deadlocks).
    fn connecting(
        pool: MySqlPoolOptions,
        options: MySqlConnectOptions,
    ) -> (MySqlPoolOptions, MySqlConnectOptions) {
        let pool = pool.after_connect(|connection, _| {
            Box::pin(async move {
                connection
                    .execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
                    .await
                    .map(|_| ())
            })
        });
        (pool, options)
    }

    fn check_options(options: &MySqlConnectOptions) -> Result<()> {
        use sqlx::mysql::MySqlSslMode;
        let required = matches!(
            options.get_ssl_mode(),
            MySqlSslMode::Required | MySqlSslMode::VerifyCa | MySqlSslMode::VerifyIdentity
        );
        super::tls_available(required, "mysql-tls", "ssl-mode")
    }

    async fn create_schema(pool: &MySqlPool, table: &str) -> Result<()> {
        // One batch, so on one connection: the operator's migration adds its column through a
        // session variable and a prepared statement (MySQL has no `ADD COLUMN IF NOT EXISTS`).
        let batch = SqlBackend::<Self>::schema_statements(table).join(";\n");
        let mut outcome = sqlx::raw_sql(&batch).execute(pool).await.map(drop);
        if matches!(&outcome, Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42S21"))
        {
            // Another instance added the column between our look and our `ALTER`
            // (ER_DUP_FIELDNAME): it is there now, and the batch runs through.
            outcome = sqlx::raw_sql(&batch).execute(pool).await.map(drop);
        }
        outcome.map_err(|e| to_lock_error(Self::BACKEND, e))?;
        // Counter tables from before retention lack `touched_at`: add it (MySQL has no
        // `ADD COLUMN IF NOT EXISTS`, so look first).
        let has_column: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM information_schema.columns \
             WHERE table_schema = DATABASE() AND table_name = ? AND column_name = 'touched_at'",
        )
        .bind(format!("{table}_fence"))
        .fetch_one(pool)
        .await
        .map_err(|e| to_lock_error(Self::BACKEND, e))?;
        if has_column == 0 {
            let alter = format!(
                "ALTER TABLE {table}_fence \
                 ADD COLUMN touched_at DATETIME(6) NOT NULL DEFAULT '1970-01-01 00:00:00'"
            );
            match sqlx::raw_sql(&alter).execute(pool).await {
                // Another instance added it meanwhile (ER_DUP_FIELDNAME).
                Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42S21") => {}
                other => other
                    .map(drop)
                    .map_err(|e| to_lock_error(Self::BACKEND, e))?,
            }
        }
        Ok(())
    }

    /// MySQL has no server push to clients: waiters poll, and a release by this backend wakes
    /// its own.
    async fn listen(_pool: &MySqlPool, _table: &str, _wake: Wake) -> Result<bool> {
        Ok(false)
    }

    /// One grant attempt's transaction: take the key if it is free (or is already ours, a retry
    /// whose reply was lost), with the next fencing token; `Busy` with the holder's time left
    /// otherwise.
    async fn grant(
        pool: MySqlPool,
        grant: Arc<MyGrant>,
        ask: Ask,
    ) -> std::result::Result<Outcome, sqlx::Error> {
        // Set per transaction too, for pools the backend did not open.
        let mut tx = pool
            .begin_with("SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION")
            .await?;
        tx.execute(sqlx::query(&grant.lock_counter).bind(&ask.lock_key))
            .await?;
        let (counter, holder, fence, left): (u64, Option<Vec<u8>>, Option<u64>, Option<i64>) =
            sqlx::query_as(&grant.read)
                .bind(&ask.lock_key)
                .fetch_one(&mut *tx)
                .await?;
        let sent = Instant::now();
        let fence = match (holder, fence) {
            // A retry of our own grant whose reply was lost: the same lease again.
            (Some(holder), Some(fence)) if holder == ask.owner.as_bytes() => {
                sqlx::query(&grant.extend)
                    .bind(ask.ttl)
                    .bind(&ask.lock_key)
                    .bind(&ask.owner)
                    .execute(&mut *tx)
                    .await?;
                fence
            }
            (Some(_), _) if left.is_some_and(|us| us > 0) => {
                tx.rollback().await?;
                return Ok(Outcome::Busy(left));
            }
            _ => {
                let mut take = sqlx::query(&grant.take)
                    .bind(&ask.lock_key)
                    .bind(&ask.name)
                    .bind(&ask.owner)
                    .bind(counter)
                    .bind(owner_host())
                    .bind(owner_pid())
                    .bind(ask.ttl);
                if grant.labels {
                    take = take.bind(&ask.label);
                }
                take.execute(&mut *tx).await?;
                counter
            }
        };
        tx.commit().await?;
        // Counters start from the clock in microseconds: far below 2^63.
        let fence = i64::try_from(fence)
            .map_err(|_| sqlx::Error::Protocol(format!("fencing token {fence} past 2^63")))?;
        Ok(Outcome::Granted { fence, sent })
    }

    // ---- The stock tables

    const NOW_US: &'static str = "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)";

    const STOCK_MIGRATION: &'static str =
        include_str!("../../migrations/mysql/0002_lock_core_stock.sql");

    fn int(expr: &str) -> String {
        format!("CAST({expr} AS SIGNED)")
    }

    fn restock(prefix: &str) -> String {
        format!(
            "INSERT INTO {prefix}_levels (sku, available, reserved, sold, received, version) \
             VALUES (?, ?, 0, 0, ?, 1) ON DUPLICATE KEY UPDATE \
             available = available + VALUES(available), \
             received = received + VALUES(received), version = version + 1"
        )
    }

    fn sweep_unknown(prefix: &str) -> String {
        format!(
            "DELETE FROM {prefix}_orders WHERE recorded_at < {now} - ? AND NOT EXISTS \
             (SELECT 1 FROM {prefix}_levels l WHERE l.sku = {prefix}_orders.sku) LIMIT 1000",
            now = Self::NOW_US
        )
    }

    fn delete_batch(prefix: &str, condition: &str) -> String {
        format!("DELETE FROM {prefix}_orders WHERE {condition} LIMIT 1000")
    }

    // ---- The recovery points

    const POINTS_MIGRATION: &'static str = "CREATE TABLE IF NOT EXISTS lock_core_recovery_points (
  point_key  VARBINARY(128) NOT NULL PRIMARY KEY,
  entry      LONGBLOB NOT NULL,
  expires_at DATETIME(6) NOT NULL,
  INDEX lock_core_recovery_points_expires_at (expires_at)
) ENGINE=InnoDB";

    /// Each statement binds the stored key first (`record`: then the entry and the keep in
    /// µs); `record` is an `INSERT IGNORE` on the primary key, writing 1 row when no live
    /// point was there.
    fn points_statements(t: &str) -> PointsStatements {
        PointsStatements {
            find: Self::live_entry(t, "point_key"),
            clear_expired: Some(format!(
                "DELETE FROM {t} WHERE point_key = ? AND expires_at <= NOW(6)"
            )),
            // InnoDB checks the duplicate under a lock: a second execution's insert waits for
            // the first one's transaction, then is ignored if it committed, or inserts if it
            // rolled back.
            record: format!(
                "INSERT IGNORE INTO {t} (point_key, entry, expires_at)
             VALUES (?, ?, NOW(6) + INTERVAL ? MICROSECOND)"
            ),
            purge_batch: Statement::new(Self::purge_expired(t, "point_key"), &[]),
        }
    }

    /// Keys longer than the column (128 bytes) are stored as their SHA-256, as the lock
    /// table stores its names ([`storage_key`]).
    fn point_key(key: &str) -> Cow<'_, str> {
        Cow::Owned(storage_key(key))
    }

    async fn find_point(
        pool: &MySqlPool,
        find: &str,
        stored_key: &str,
    ) -> std::result::Result<Option<Vec<u8>>, sqlx::Error> {
        recovery::read_point(pool, find, stored_key).await
    }

    /// The insert comes first. A delete of a key that is not there would take a gap lock
    /// (InnoDB, repeatable read) that two transactions can both hold, and their inserts then
    /// wait for each other: a deadlock that rolls back the application's whole transaction,
    /// effect and all (seen with two payments of different keys committing at once). An
    /// expired point is cleared only when the insert found one: a lock on that row alone.
    async fn record_point(
        sql: &PointsStatements,
        connection: &mut MySqlConnection,
        point: Point<'_>,
    ) -> Result<Option<Option<Vec<u8>>>> {
        let stored_key = storage_key(point.key);
        if insert_point(sql, connection, &stored_key, &point).await? {
            return Ok(None);
        }
        if let Some(clear_expired) = &sql.clear_expired {
            let cleared = sqlx::query(clear_expired)
                .bind(&stored_key)
                .execute(&mut *connection)
                .await
                .map_err(|e| to_lock_error(Self::BACKEND, e))?
                .rows_affected();
            if cleared > 0 && insert_point(sql, connection, &stored_key, &point).await? {
                return Ok(None);
            }
        }
        let there = recovery::read_point(connection, &sql.find, &stored_key).await;
        Ok(Some(there.map_err(|e| to_lock_error(Self::BACKEND, e))?))
    }

    // ---- Completing a claim in the application's transaction

    /// Not one: the PostgreSQL result store's records cannot be completed in it.
    #[cfg(feature = "postgres")]
    fn postgres_connection(_connection: &mut MySqlConnection) -> Option<&mut sqlx::PgConnection> {
        None
    }
}

/// A recovery point's `INSERT IGNORE`: whether it wrote the point (no row had its key).
async fn insert_point(
    sql: &PointsStatements,
    connection: &mut MySqlConnection,
    stored_key: &str,
    point: &Point<'_>,
) -> Result<bool> {
    let written = sqlx::query(&sql.record)
        .bind(stored_key)
        .bind(point.entry)
        .bind(point.keep)
        .execute(connection)
        .await
        .map_err(|e| to_lock_error(<MySql as Sealed>::BACKEND, e))?
        .rows_affected();
    Ok(written > 0)
}

/// MySQL's own statements for a grant transaction. Times are `UTC_TIMESTAMP(6)`, which does not
/// depend on the session's time zone.
pub struct MyGrant {
    /// `take` binds the holder's label (the table has the operator's schema).
    labels: bool,
    lock_counter: String,
    read: String,
    extend: String,
    take: String,
}
