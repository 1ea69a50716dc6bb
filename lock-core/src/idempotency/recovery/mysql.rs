//! Recovery points in MySQL / MariaDB: the table's SQL, with its name put in once, and the
//! statements run on the pool or on the application's transaction.
//!
//! Keys longer than the column (128 bytes) are stored as their SHA-256, as the MySQL lock
//! backend stores its names ([`storage_key`]).

use std::time::Duration;

use sqlx::mysql::MySqlPool;
use sqlx::{MySql, Transaction};

use super::MAX_KEEP;
use crate::sql::{micros, storage_key, to_lock_error, SWEEP_BATCH};
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

/// The statements on one table.
#[derive(Debug)]
pub(super) struct Statements {
    find: String,
    /// Deletes this key's point if it expired, so that the insert after it can take its place.
    clear_expired: String,
    /// An `INSERT IGNORE` on the primary key: 1 row when written, 0 when a live point is there.
    record: String,
    purge_batch: String,
}

impl Statements {
    pub(super) fn new(t: &str) -> Self {
        Self {
            find: format!("SELECT entry FROM {t} WHERE point_key = ? AND expires_at > NOW(6)"),
            clear_expired: format!("DELETE FROM {t} WHERE point_key = ? AND expires_at <= NOW(6)"),
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
        &self,
        pool: &MySqlPool,
        key: &str,
    ) -> Result<Option<Vec<u8>>, sqlx::Error> {
        sqlx::query_scalar(&self.find)
            .bind(storage_key(key))
            .fetch_optional(pool)
            .await
    }

    /// `Ok(None)` when written; otherwise the live point there (committed by another
    /// execution), or `Ok(Some(None))` if it expired between the statements.
    pub(super) async fn record_in(
        &self,
        transaction: &mut Transaction<'_, MySql>,
        key: &str,
        entry: &[u8],
        keep: Duration,
    ) -> Result<Option<Option<Vec<u8>>>> {
        let stored_key = storage_key(key);
        sqlx::query(&self.clear_expired)
            .bind(&stored_key)
            .execute(&mut **transaction)
            .await
            .map_err(|e| to_lock_error(STORE, e))?;
        let written = sqlx::query(&self.record)
            .bind(&stored_key)
            .bind(entry)
            .bind(micros(keep.min(MAX_KEEP)))
            .execute(&mut **transaction)
            .await
            .map_err(|e| to_lock_error(STORE, e))?
            .rows_affected();
        if written > 0 {
            return Ok(None);
        }
        let there = sqlx::query_scalar(&self.find)
            .bind(&stored_key)
            .fetch_optional(&mut **transaction)
            .await
            .map_err(|e| to_lock_error(STORE, e))?;
        Ok(Some(there))
    }

    pub(super) async fn purge_batch(&self, pool: &MySqlPool) -> Result<u64, sqlx::Error> {
        sqlx::query(&self.purge_batch)
            .execute(pool)
            .await
            .map(|done| done.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_migration_of_the_default_table_is_the_constant() {
        assert_eq!(migration(super::super::DEFAULT_TABLE), MIGRATION);
        assert!(migration("points").contains("INDEX points_expires_at (expires_at)"));
    }
}
