//! Recovery points in MySQL / MariaDB: the table's SQL, with its name put in once, and the
//! statements run on the pool or on the application's transaction.
//!
//! Keys longer than the column (128 bytes) are stored as their SHA-256, as the MySQL lock
//! backend stores its names ([`storage_key`]).

use sqlx::mysql::MySqlPool;
use sqlx::{MySql, Transaction};

use super::{Point, Statements};
use crate::sql::{storage_key, to_lock_error, SWEEP_BATCH};
use crate::Result;

const STORE: &str = "mysql";

/// The default table's migration.
pub(super) const MIGRATION: &str = "CREATE TABLE IF NOT EXISTS lock_core_recovery_points (
  point_key  VARBINARY(128) NOT NULL PRIMARY KEY,
  entry      LONGBLOB NOT NULL,
  expires_at DATETIME(6) NOT NULL,
  INDEX lock_core_recovery_points_expires_at (expires_at)
) ENGINE=InnoDB";

/// The migration of a table named `table` (checked beforehand).
pub(super) fn migration(table: &str) -> String {
    MIGRATION.replace(super::DEFAULT_TABLE, table)
}

/// The statements on the table `t`, each binding the stored key first (`record`: then the
/// entry and the keep in µs); `record` is an `INSERT IGNORE` on the primary key, writing 1 row
/// when no live point was there.
pub(super) fn statements(t: &str) -> Statements {
    Statements {
        find: format!("SELECT entry FROM {t} WHERE point_key = ? AND expires_at > NOW(6)"),
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
        purge_batch: format!("DELETE FROM {t} WHERE expires_at <= NOW(6) LIMIT {SWEEP_BATCH}"),
    }
}

pub(super) async fn create(pool: &MySqlPool, table: &str) -> Result<(), sqlx::Error> {
    sqlx::raw_sql(&migration(table))
        .execute(pool)
        .await
        .map(drop)
}

pub(super) async fn find(
    sql: &Statements,
    pool: &MySqlPool,
    key: &str,
) -> Result<Option<Vec<u8>>, sqlx::Error> {
    super::read_point(pool, &sql.find, &storage_key(key)).await
}

/// `Ok(None)` when written; otherwise the live point there (committed by another
/// execution), or `Ok(Some(None))` if it expired between the statements.
///
/// The insert comes first. A delete of a key that is not there would take a gap lock (InnoDB,
/// repeatable read) that two transactions can both hold, and their inserts then wait for each
/// other: a deadlock that rolls back the application's whole transaction, effect and all
/// (seen with two payments of different keys committing at once). An expired point is cleared
/// only when the insert found one: a lock on that row alone.
pub(super) async fn record_in(
    sql: &Statements,
    transaction: &mut Transaction<'_, MySql>,
    point: Point<'_>,
) -> Result<Option<Option<Vec<u8>>>> {
    let stored_key = storage_key(point.key);
    if insert(sql, transaction, &stored_key, &point).await? {
        return Ok(None);
    }
    if let Some(clear_expired) = &sql.clear_expired {
        let cleared = sqlx::query(clear_expired)
            .bind(&stored_key)
            .execute(&mut **transaction)
            .await
            .map_err(|e| to_lock_error(STORE, e))?
            .rows_affected();
        if cleared > 0 && insert(sql, transaction, &stored_key, &point).await? {
            return Ok(None);
        }
    }
    let there = super::read_point(&mut **transaction, &sql.find, &stored_key).await;
    Ok(Some(there.map_err(|e| to_lock_error(STORE, e))?))
}

/// The `INSERT IGNORE`: whether it wrote the point (no row had its key).
async fn insert(
    sql: &Statements,
    transaction: &mut Transaction<'_, MySql>,
    stored_key: &str,
    point: &Point<'_>,
) -> Result<bool> {
    let written = sqlx::query(&sql.record)
        .bind(stored_key)
        .bind(point.entry)
        .bind(point.keep)
        .execute(&mut **transaction)
        .await
        .map_err(|e| to_lock_error(STORE, e))?
        .rows_affected();
    Ok(written > 0)
}
