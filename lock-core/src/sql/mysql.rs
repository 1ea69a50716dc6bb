//! The MySQL / MariaDB dialect: a short transaction per grant, serialized per name by the name's
//! fencing-counter row; waiters poll (see the [module docs](super)).

use std::sync::Arc;

use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions};
use sqlx::Executor;
use tokio::time::Instant;

use super::dialect::{Ask, Bind, Outcome, Sealed, Statement, Statements, Wake};
use super::sweep::SWEEP_BATCH;
use super::{owner_host, owner_pid, to_lock_error, SqlBackend};
use crate::Result;

impl Sealed for sqlx::MySql {
    type Grant = MyGrant;
    const BACKEND: &'static str = "mysql";
    const MIGRATION: &'static str = include_str!("../../migrations/mysql/0001_lock_core.sql");

    fn statements(t: &str) -> (Statements, MyGrant) {
        use Bind::{Fence, Key, Owner, Retention, Ttl};
        let held = "lock_key = ? AND owner = ? AND fence = ? AND expires_at > UTC_TIMESTAMP(6)";
        let left = "TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at)";
        let forget = format!("DELETE FROM {t} WHERE lock_key = ? AND owner = ?");
        let statements = Statements {
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
        let grant = MyGrant {
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
        for statement in SqlBackend::<Self>::schema_statements(table) {
            sqlx::raw_sql(&statement)
                .execute(pool)
                .await
                .map_err(|e| to_lock_error(Self::BACKEND, e))?;
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
                sqlx::query(&grant.take)
                    .bind(&ask.lock_key)
                    .bind(&ask.name)
                    .bind(&ask.owner)
                    .bind(counter)
                    .bind(owner_host())
                    .bind(owner_pid())
                    .bind(ask.ttl)
                    .execute(&mut *tx)
                    .await?;
                counter
            }
        };
        tx.commit().await?;
        // Counters start from the clock in microseconds: far below 2^63.
        let fence = i64::try_from(fence)
            .map_err(|_| sqlx::Error::Protocol(format!("fencing token {fence} past 2^63")))?;
        Ok(Outcome::Granted { fence, sent })
    }
}

/// MySQL's own statements for a grant transaction. Times are `UTC_TIMESTAMP(6)`, which does not
/// depend on the session's time zone.
pub struct MyGrant {
    lock_counter: String,
    read: String,
    extend: String,
    take: String,
}
