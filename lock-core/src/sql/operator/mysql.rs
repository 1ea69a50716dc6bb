//! The operator's view of the MySQL / MariaDB lock table: the clauses its statements differ in,
//! the types its driver reads their columns as, and the forced release's statements and
//! transaction, serialized with the name's grants by its fencing-counter row as a
//! grant is (the counter bumped first, so the token the release takes is past the holder's
//! and every later grant's past it).

use std::sync::Arc;

use sqlx::mysql::MySqlPool;
use sqlx::Executor;

use super::force::RECORD_COLUMNS;
use super::{ForceAsk, Forced, OperatorDialect};

/// A live lease (a release deletes the row; an expired one may linger until the next grant).
const LIVE: &str = "expires_at > UTC_TIMESTAMP(6)";

/// Text a MySQL driver may hand over as bytes (`_bin` collations), as text.
fn text_of(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// MySQL's statements for a forced release.
pub struct MyForce {
    /// Bumps (creating if needed) the name's counter, which locks it until the end of the
    /// transaction, as a grant does: binds the `lock_key`.
    lock_counter: String,
    /// The counter, the live lease's owner, token and label, and the database's now (µs):
    /// binds the `lock_key`.
    read: String,
    /// Deletes the holder's live row: binds the `lock_key`, the owner and its token.
    free: String,
    /// Appends the audit row: binds the record's fields.
    record: String,
}

impl OperatorDialect for sqlx::MySql {
    const OPERATOR_MIGRATION: &'static str =
        include_str!("../../../migrations/mysql/0003_lock_core_operator.sql");

    const LIVE: &'static str = LIVE;
    const LABEL: &'static str = "label";
    const LEASE_LEFT_US: &'static str = "TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at)";
    const NOW: &'static str = "UTC_TIMESTAMP(6)";
    // Names compared as bytes: `utf8mb4_bin` pads trailing spaces.
    const NAME_STARTS_WITH: &'static str =
        "LEFT(CAST(name AS BINARY), LENGTH(?)) = CAST(? AS BINARY)";

    /// µs since the Unix epoch of a `DATETIME(6)` written by `UTC_TIMESTAMP(6)`.
    fn unix_us(column: &str) -> String {
        format!("TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {column})")
    }

    type Text = Vec<u8>;
    type Token = u64;

    fn text(column: Vec<u8>) -> String {
        text_of(column)
    }

    fn token(column: u64) -> i64 {
        // Counters start from the clock in microseconds: far below 2^63.
        i64::try_from(column).unwrap_or(-1)
    }

    type Force = MyForce;

    fn force_statements(t: &str) -> MyForce {
        MyForce {
            lock_counter: format!(
                "INSERT INTO {t}_fence (lock_key, fence, touched_at) \
                 VALUES (?, FLOOR(UNIX_TIMESTAMP(NOW(6)) * 1000000), UTC_TIMESTAMP(6)) \
                 ON DUPLICATE KEY UPDATE fence = fence + 1, touched_at = UTC_TIMESTAMP(6)"
            ),
            read: format!(
                "SELECT f.fence, l.owner, l.fence, l.label, {} \
                 FROM {t}_fence f LEFT JOIN {t} l ON l.lock_key = f.lock_key AND l.{LIVE} \
                 WHERE f.lock_key = ?",
                Self::unix_us("UTC_TIMESTAMP(6)")
            ),
            free: format!(
                "DELETE FROM {t} WHERE lock_key = ? AND owner = ? AND fence = ? AND {LIVE}"
            ),
            record: format!(
                "INSERT INTO {t}_audit ({RECORD_COLUMNS}) \
                 VALUES (CAST('1970-01-01 00:00:00' AS DATETIME(6)) + INTERVAL ? MICROSECOND, \
                   ?, ?, ?, ?, ?, ?, ?, ?, \
                   ?, ?, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)"
            ),
        }
    }

    async fn has_operator_schema(pool: &MySqlPool, table: &str) -> Result<bool, sqlx::Error> {
        let found: i64 = sqlx::query_scalar(
            "SELECT (SELECT COUNT(*) FROM information_schema.columns \
                     WHERE table_schema = DATABASE() AND table_name = ? \
                       AND column_name = 'label') \
                  + (SELECT COUNT(*) FROM information_schema.tables \
                     WHERE table_schema = DATABASE() AND table_name = ?)",
        )
        .bind(table)
        .bind(format!("{table}_audit"))
        .fetch_one(pool)
        .await?;
        Ok(found == 2)
    }

    async fn force_release(
        pool: MySqlPool,
        force: Arc<MyForce>,
        ask: ForceAsk,
    ) -> Result<Forced, sqlx::Error> {
        // At READ COMMITTED, as a grant: set per transaction too, for pools the backend did
        // not open.
        let mut tx = pool
            .begin_with("SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION")
            .await?;
        tx.execute(sqlx::query(&force.lock_counter).bind(&ask.lock_key))
            .await?;
        type Read = (u64, Option<Vec<u8>>, Option<u64>, Option<Vec<u8>>, i64);
        let (counter, owner, old_token, label, now_us): Read = sqlx::query_as(&force.read)
            .bind(&ask.lock_key)
            .fetch_one(&mut *tx)
            .await?;
        let (Some(owner), Some(old_token)) = (owner.map(text_of), old_token) else {
            tx.rollback().await?;
            return Ok(Forced::Free);
        };
        if ask.names_another(&owner) {
            tx.rollback().await?;
            return Ok(Forced::NotOwner);
        }
        let freed = sqlx::query(&force.free)
            .bind(&ask.lock_key)
            .bind(&owner)
            .bind(old_token)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if freed != 1 {
            // Released or expired since the read.
            tx.rollback().await?;
            return Ok(Forced::Free);
        }
        let too_large =
            |token: u64| sqlx::Error::Protocol(format!("fencing token {token} past 2^63"));
        let old = i64::try_from(old_token).map_err(|_| too_large(old_token))?;
        let new = i64::try_from(counter).map_err(|_| too_large(counter))?;
        if new <= old {
            // Dropping the transaction rolls it back.
            return Err(sqlx::Error::Protocol(format!(
                "the fencing counter is at {new}, not past the holder's {old}"
            )));
        }
        let label = label.map(text_of);
        let record = sqlx::query(&force.record).bind(now_us);
        ask.bind_record(record, &owner, label.as_deref(), old, new)
            .bind(ask.retention_us)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(ask.released(now_us, owner, label, old, new))
    }
}
