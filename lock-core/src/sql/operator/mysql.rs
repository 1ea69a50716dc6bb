//! The operator's view of the MySQL / MariaDB lock table: its statements, and the forced
//! release's transaction, serialized with the name's grants by its fencing-counter row as a
//! grant is (the counter bumped first, so the token the release takes is past the holder's
//! and every later grant's past it).

use std::sync::Arc;

use sqlx::mysql::MySqlPool;
use sqlx::Executor;

use super::{text_of, AuditRow, ForceAsk, Forced, HeldRow, OperatorDialect, OperatorStatements};
use crate::sql::dialect::{arguments, Arg};

/// A live lease (a release deletes the row; an expired one may linger until the next grant).
const LIVE: &str = "expires_at > UTC_TIMESTAMP(6)";

/// µs since the Unix epoch of a `DATETIME(6)` written by `UTC_TIMESTAMP(6)`.
fn unix_us(column: &str) -> String {
    format!("TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {column})")
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

    type Force = MyForce;

    fn operator_statements(t: &str) -> (OperatorStatements, MyForce) {
        let held = format!(
            "lock_key, name, owner, fence, label, {}, \
             TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at)",
            unix_us("acquired_at")
        );
        // Names compared as bytes: `utf8mb4_bin` pads trailing spaces.
        let starts_with = "LEFT(CAST(name AS BINARY), LENGTH(?)) = CAST(? AS BINARY)";
        let list = |bounded: bool| {
            let high = if bounded { "AND lock_key < ? " } else { "" };
            format!(
                "(SELECT {held} FROM {t}
                  WHERE lock_key > ? AND lock_key >= ? {high}
                    AND NOT (lock_key >= ? AND lock_key < ?) AND {LIVE}
                  ORDER BY lock_key LIMIT ?)
                 UNION ALL
                 (SELECT {held} FROM {t}
                  WHERE lock_key > ? AND lock_key >= ? AND lock_key < ?
                    AND {starts_with} AND {LIVE}
                  ORDER BY lock_key LIMIT ?)
                 ORDER BY lock_key LIMIT ?"
            )
        };
        let audited = format!(
            "{}, name, primitive, operator, reason, old_owner, old_kind, old_label, old_token, \
             new_token",
            unix_us("at")
        );
        let statements = OperatorStatements {
            inspect: format!("SELECT {held} FROM {t} WHERE lock_key = ? AND {LIVE}"),
            list_bounded: list(true),
            list_open: list(false),
            audit_of_key: format!(
                "SELECT {audited} FROM {t}_audit \
                 WHERE lock_key = ? AND expires_at > UTC_TIMESTAMP(6) \
                 ORDER BY id DESC LIMIT ?"
            ),
            audit_under: format!(
                "SELECT {audited} FROM {t}_audit \
                 WHERE {starts_with} AND expires_at > UTC_TIMESTAMP(6) \
                 ORDER BY id DESC LIMIT ?"
            ),
        };
        let force = MyForce {
            lock_counter: format!(
                "INSERT INTO {t}_fence (lock_key, fence, touched_at) \
                 VALUES (?, FLOOR(UNIX_TIMESTAMP(NOW(6)) * 1000000), UTC_TIMESTAMP(6)) \
                 ON DUPLICATE KEY UPDATE fence = fence + 1, touched_at = UTC_TIMESTAMP(6)"
            ),
            read: format!(
                "SELECT f.fence, l.owner, l.fence, l.label, {} \
                 FROM {t}_fence f LEFT JOIN {t} l ON l.lock_key = f.lock_key AND l.{LIVE} \
                 WHERE f.lock_key = ?",
                unix_us("UTC_TIMESTAMP(6)")
            ),
            free: format!(
                "DELETE FROM {t} WHERE lock_key = ? AND owner = ? AND fence = ? AND {LIVE}"
            ),
            record: format!(
                "INSERT INTO {t}_audit (at, lock_key, name, primitive, operator, reason, \
                   old_owner, old_kind, old_label, old_token, new_token, expires_at) \
                 VALUES (CAST('1970-01-01 00:00:00' AS DATETIME(6)) + INTERVAL ? MICROSECOND, \
                   ?, ?, ?, ?, ?, ?, ?, ?, \
                   ?, ?, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)"
            ),
        };
        (statements, force)
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

    async fn held_rows<'a>(
        pool: &'a MySqlPool,
        sql: &'a str,
        args: Vec<Arg<'a>>,
    ) -> Result<Vec<HeldRow>, sqlx::Error> {
        type Row = (
            Vec<u8>,
            Vec<u8>,
            Vec<u8>,
            u64,
            Option<Vec<u8>>,
            Option<i64>,
            Option<i64>,
        );
        let rows: Vec<Row> = sqlx::query_as_with(sql, arguments::<Self>(args)?)
            .fetch_all(pool)
            .await?;
        Ok(rows
            .into_iter()
            .map(
                |(lock_key, name, owner, fence, label, acquired_us, left_us)| HeldRow {
                    lock_key: text_of(lock_key),
                    name: text_of(name),
                    owner: text_of(owner),
                    // Counters start from the clock in microseconds: far below 2^63.
                    fence: i64::try_from(fence).unwrap_or(-1),
                    label: label.map(text_of),
                    acquired_us,
                    left_us,
                },
            )
            .collect())
    }

    async fn audit_rows<'a>(
        pool: &'a MySqlPool,
        sql: &'a str,
        args: Vec<Arg<'a>>,
    ) -> Result<Vec<AuditRow>, sqlx::Error> {
        type Row = (
            i64,
            Vec<u8>,
            Vec<u8>,
            Vec<u8>,
            Vec<u8>,
            Vec<u8>,
            Vec<u8>,
            Option<Vec<u8>>,
            u64,
            u64,
        );
        let rows: Vec<Row> = sqlx::query_as_with(sql, arguments::<Self>(args)?)
            .fetch_all(pool)
            .await?;
        Ok(rows
            .into_iter()
            .map(
                |(
                    at_us,
                    name,
                    primitive,
                    operator,
                    reason,
                    old_owner,
                    old_kind,
                    old_label,
                    old_token,
                    new_token,
                )| AuditRow {
                    at_us,
                    name: text_of(name),
                    primitive: text_of(primitive),
                    operator: text_of(operator),
                    reason: text_of(reason),
                    old_owner: text_of(old_owner),
                    old_kind: text_of(old_kind),
                    old_label: old_label.map(text_of),
                    old_token: i64::try_from(old_token).unwrap_or(-1),
                    new_token: i64::try_from(new_token).unwrap_or(-1),
                },
            )
            .collect())
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
        if ask.owner.as_ref().is_some_and(|named| *named != owner) {
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
        sqlx::query(&force.record)
            .bind(now_us)
            .bind(&ask.lock_key)
            .bind(&ask.name)
            .bind(ask.primitive)
            .bind(&ask.operator)
            .bind(&ask.reason)
            .bind(&owner)
            .bind(ask.kind)
            .bind(&label)
            .bind(old)
            .bind(new)
            .bind(ask.retention_us)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Forced::Released(AuditRow {
            at_us: now_us,
            name: ask.name,
            primitive: ask.primitive.to_owned(),
            operator: ask.operator,
            reason: ask.reason,
            old_owner: owner,
            old_kind: ask.kind.to_owned(),
            old_label: label,
            old_token: old,
            new_token: new,
        }))
    }
}
