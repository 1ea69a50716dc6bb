//! Recovery points in PostgreSQL: the table's SQL, with its name put in once, and the
//! statements run on the pool or on the application's transaction.

use sqlx::postgres::PgPool;
use sqlx::{Postgres, Transaction};

use super::{Point, Statements};
use crate::sql::{to_lock_error, SWEEP_BATCH};
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

/// The statements on the table `t`: `find` and `record` bind the key (`record`: then the
/// entry and the keep in µs) and `record` returns a row when it wrote.
pub(super) fn statements(t: &str) -> Statements {
    Statements {
        find: format!("SELECT entry FROM {t} WHERE key = $1 AND expires_at > now()"),
        // The insert's conflict clause takes an expired point's place.
        clear_expired: None,
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
        crate::sql::result_store::SCHEMA_LOCK,
        migration(table)
    );
    // One simple-protocol batch: one transaction, holding the advisory lock.
    sqlx::raw_sql(&batch).execute(pool).await.map(drop)
}

pub(super) async fn find(
    sql: &Statements,
    pool: &PgPool,
    key: &str,
) -> Result<Option<Vec<u8>>, sqlx::Error> {
    super::read_point(pool, &sql.find, key).await
}

/// `Ok(None)` when written; otherwise the live point there (committed by another
/// execution), or `Ok(Some(empty))` if it expired between the two statements.
pub(super) async fn record_in(
    sql: &Statements,
    transaction: &mut Transaction<'_, Postgres>,
    point: Point<'_>,
) -> Result<Option<Option<Vec<u8>>>> {
    let written: Option<i32> = sqlx::query_scalar(&sql.record)
        .bind(point.key)
        .bind(point.entry)
        .bind(point.keep)
        .fetch_optional(&mut **transaction)
        .await
        .map_err(|e| to_lock_error(STORE, e))?;
    if written.is_some() {
        return Ok(None);
    }
    let there = super::read_point(&mut **transaction, &sql.find, point.key).await;
    Ok(Some(there.map_err(|e| to_lock_error(STORE, e))?))
}
