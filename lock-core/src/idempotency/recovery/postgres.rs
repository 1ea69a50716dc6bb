//! Recovery points in PostgreSQL: the table's SQL, with its name put in once, and the
//! statements run on the pool or on the application's transaction.

use std::time::Duration;

use sqlx::postgres::PgPool;
use sqlx::{Postgres, Transaction};

use super::MAX_KEEP;
use crate::sql::{micros, to_lock_error, SWEEP_BATCH};
use crate::Result;

const STORE: &str = "postgres";

/// The default table's migration.
pub(super) const MIGRATION: &str = "CREATE TABLE IF NOT EXISTS lock_core_recovery_points (
  key        text COLLATE \"C\" PRIMARY KEY,
  entry      bytea NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS lock_core_recovery_points_expires_at ON lock_core_recovery_points (expires_at)";

/// The migration of a table named `table` (checked beforehand).
pub(super) fn migration(table: &str) -> String {
    MIGRATION.replace(super::DEFAULT_TABLE, table)
}

/// The statements on one table.
#[derive(Debug)]
pub(super) struct Statements {
    /// `$1` key → the live entry, if any.
    find: String,
    /// `$1` key, `$2` entry, `$3` keep in µs → a row when written (no live point was there).
    record: String,
    /// Deletes up to [`SWEEP_BATCH`] expired rows.
    purge_batch: String,
}

impl Statements {
    pub(super) fn new(t: &str) -> Self {
        Self {
            find: format!("SELECT entry FROM {t} WHERE key = $1 AND expires_at > now()"),
            // An insert on the primary key: a second execution's insert waits for the first
            // one's transaction, then finds its row (and writes nothing) if it committed, or
            // writes its own if it rolled back. An expired point gives way.
            record: format!(
                "INSERT INTO {t} AS r (key, entry, expires_at)
                 VALUES ($1, $2, now() + $3::float8 * interval '1 microsecond')
                 ON CONFLICT (key) DO UPDATE SET entry = EXCLUDED.entry, expires_at = EXCLUDED.expires_at
                 WHERE r.expires_at <= now()
                 RETURNING 1"
            ),
            purge_batch: format!(
                "DELETE FROM {t} WHERE key IN (
                   SELECT key FROM {t} WHERE expires_at <= now() LIMIT {SWEEP_BATCH}
                   FOR UPDATE SKIP LOCKED)"
            ),
        }
    }

    pub(super) async fn create(pool: &PgPool, table: &str) -> Result<(), sqlx::Error> {
        let batch = format!(
            "SELECT pg_advisory_xact_lock({}); {};",
            crate::results::postgres::SCHEMA_LOCK,
            migration(table)
        );
        // One simple-protocol batch: one transaction, holding the advisory lock.
        sqlx::raw_sql(&batch).execute(pool).await.map(drop)
    }

    pub(super) async fn find(
        &self,
        pool: &PgPool,
        key: &str,
    ) -> Result<Option<Vec<u8>>, sqlx::Error> {
        sqlx::query_scalar(&self.find)
            .bind(key)
            .fetch_optional(pool)
            .await
    }

    /// `Ok(None)` when written; otherwise the live point there (committed by another
    /// execution), or `Ok(Some(empty))` if it expired between the two statements.
    pub(super) async fn record_in(
        &self,
        transaction: &mut Transaction<'_, Postgres>,
        key: &str,
        entry: &[u8],
        keep: Duration,
    ) -> Result<Option<Option<Vec<u8>>>> {
        let written: Option<i32> = sqlx::query_scalar(&self.record)
            .bind(key)
            .bind(entry)
            .bind(micros(keep.min(MAX_KEEP)))
            .fetch_optional(&mut **transaction)
            .await
            .map_err(|e| to_lock_error(STORE, e))?;
        if written.is_some() {
            return Ok(None);
        }
        let there = sqlx::query_scalar(&self.find)
            .bind(key)
            .fetch_optional(&mut **transaction)
            .await
            .map_err(|e| to_lock_error(STORE, e))?;
        Ok(Some(there))
    }

    pub(super) async fn purge_batch(&self, pool: &PgPool) -> Result<u64, sqlx::Error> {
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
        assert!(migration("points").starts_with("CREATE TABLE IF NOT EXISTS points ("));
        assert!(migration("points").contains("points_expires_at ON points (expires_at)"));
    }
}
