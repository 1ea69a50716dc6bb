//! The lock strategy's plain counter on PostgreSQL or MySQL (features `postgres`, `mysql`): a
//! separate read and a fenced write (`UPDATE ... WHERE fence <= $token`, the pattern of
//! `lock_core::sql::FencedUpdate`), so that only the lock keeps concurrent buyers from
//! overwriting each other's deductions, as with the memory and Redis counters.
//!
//! Tables `flash_counter` (a row per SKU: count, received, the largest fence written) and
//! `flash_counter_sales` (a row per order sold, with its fence), created when missing.

use lock_core::stock::StockLevel;
use lock_core::LockError;

use super::{CounterRead, WriteOutcome};

/// The counter's pool, on either database.
#[derive(Clone, Debug)]
pub enum SqlCounter {
    /// On PostgreSQL.
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
    /// On MySQL / MariaDB.
    #[cfg(feature = "mysql")]
    MySql(sqlx::MySqlPool),
}

/// The counter's statements in one database's words.
struct Sql {
    backend: &'static str,
    schema: [&'static str; 2],
    restock: &'static str,
    count: &'static str,
    sale: &'static str,
    fenced_write: &'static str,
    fence: &'static str,
    record_sale: &'static str,
    level: &'static str,
    sold: &'static str,
}

#[cfg(feature = "postgres")]
const POSTGRES: Sql = Sql {
    backend: "postgres",
    schema: [
        "CREATE TABLE IF NOT EXISTS flash_counter (sku text COLLATE \"C\" PRIMARY KEY, \
         count bigint NOT NULL, received bigint NOT NULL, fence bigint NOT NULL)",
        "CREATE TABLE IF NOT EXISTS flash_counter_sales (sku text COLLATE \"C\" NOT NULL, \
         order_id text COLLATE \"C\" NOT NULL, fence bigint NOT NULL, PRIMARY KEY (sku, order_id))",
    ],
    restock: "INSERT INTO flash_counter (sku, count, received, fence) VALUES ($1, $2, $2, 0) \
              ON CONFLICT (sku) DO UPDATE SET count = flash_counter.count + EXCLUDED.count, \
              received = flash_counter.received + EXCLUDED.received",
    count: "SELECT count FROM flash_counter WHERE sku = $1",
    sale: "SELECT fence FROM flash_counter_sales WHERE sku = $1 AND order_id = $2",
    fenced_write: "UPDATE flash_counter SET count = $1, fence = $2 WHERE sku = $3 AND fence <= $2",
    fence: "SELECT fence FROM flash_counter WHERE sku = $1",
    record_sale: "INSERT INTO flash_counter_sales (sku, order_id, fence) VALUES ($1, $2, $3)",
    level: "SELECT count, received FROM flash_counter WHERE sku = $1",
    sold: "SELECT COUNT(*) FROM flash_counter_sales WHERE sku = $1",
};

#[cfg(feature = "mysql")]
const MYSQL: Sql = Sql {
    backend: "mysql",
    schema: [
        "CREATE TABLE IF NOT EXISTS flash_counter (sku VARBINARY(600) NOT NULL PRIMARY KEY, \
         count BIGINT NOT NULL, received BIGINT NOT NULL, fence BIGINT NOT NULL) ENGINE=InnoDB",
        "CREATE TABLE IF NOT EXISTS flash_counter_sales (sku VARBINARY(600) NOT NULL, \
         order_id VARBINARY(256) NOT NULL, fence BIGINT NOT NULL, PRIMARY KEY (sku, order_id)) \
         ENGINE=InnoDB",
    ],
    restock: "INSERT INTO flash_counter (sku, count, received, fence) VALUES (?, ?, ?, 0) \
              ON DUPLICATE KEY UPDATE count = count + VALUES(count), \
              received = received + VALUES(received)",
    count: "SELECT count FROM flash_counter WHERE sku = ?",
    sale: "SELECT fence FROM flash_counter_sales WHERE sku = ? AND order_id = ?",
    fenced_write: "UPDATE flash_counter SET count = ?, fence = ? WHERE sku = ? AND fence <= ?",
    fence: "SELECT fence FROM flash_counter WHERE sku = ?",
    record_sale: "INSERT INTO flash_counter_sales (sku, order_id, fence) VALUES (?, ?, ?)",
    level: "SELECT count, received FROM flash_counter WHERE sku = ?",
    sold: "SELECT COUNT(*) FROM flash_counter_sales WHERE sku = ?",
};

/// A number as a column takes it (the counter's values are far below 2^63).
fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A number read back from a column (never negative here).
fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// The body of each operation, once for each database's pool (`$pool`) and statements
/// (`$sql`): only the types differ, and PostgreSQL binds a parameter used twice once.
macro_rules! on_database {
    ($self:expr, |$pool:ident, $sql:ident, $reuses:ident| $body:expr) => {
        match $self {
            #[cfg(feature = "postgres")]
            SqlCounter::Postgres($pool) => {
                let ($sql, $reuses) = (&POSTGRES, true);
                $body
            }
            #[cfg(feature = "mysql")]
            SqlCounter::MySql($pool) => {
                let ($sql, $reuses) = (&MYSQL, false);
                $body
            }
        }
    };
}

impl SqlCounter {
    /// Creates the counter's tables when missing.
    pub async fn ensure_schema(&self) -> Result<(), LockError> {
        on_database!(self, |pool, sql, _reuses| {
            for statement in sql.schema {
                sqlx::query(statement)
                    .execute(pool)
                    .await
                    .map_err(|e| LockError::unavailable(sql.backend, e))?;
            }
            Ok(())
        })
    }

    /// Adds `units` to `sku`'s count.
    pub async fn restock(&self, sku: &str, units: u64) -> Result<(), LockError> {
        on_database!(self, |pool, sql, reuses| {
            let query = sqlx::query(sql.restock).bind(sku).bind(signed(units));
            let query = if reuses {
                query
            } else {
                query.bind(signed(units))
            };
            query
                .execute(pool)
                .await
                .map(drop)
                .map_err(|e| LockError::unavailable(sql.backend, e))
        })
    }

    /// Reads the count and whether `order` was sold (one step; the write is another).
    pub async fn read(&self, sku: &str, order: &str) -> Result<CounterRead, LockError> {
        on_database!(self, |pool, sql, _reuses| {
            let failed = |e| LockError::unavailable(sql.backend, e);
            let count: Option<i64> = sqlx::query_scalar(sql.count)
                .bind(sku)
                .fetch_optional(pool)
                .await
                .map_err(failed)?;
            let sold_with: Option<i64> = sqlx::query_scalar(sql.sale)
                .bind(sku)
                .bind(order)
                .fetch_optional(pool)
                .await
                .map_err(failed)?;
            Ok(CounterRead {
                count: count.map_or(0, unsigned),
                sold_with: sold_with.map(unsigned),
            })
        })
    }

    /// Sets the count and records `order`'s sale under `fence`, in one transaction, unless a
    /// larger fence has written already; a retry of the same order's write is a no-op.
    pub async fn write(
        &self,
        sku: &str,
        count: u64,
        order: &str,
        fence: u64,
    ) -> Result<WriteOutcome, LockError> {
        on_database!(self, |pool, sql, reuses| {
            let failed = |e| LockError::unavailable(sql.backend, e);
            let mut tx = pool.begin().await.map_err(failed)?;
            let sold: Option<i64> = sqlx::query_scalar(sql.sale)
                .bind(sku)
                .bind(order)
                .fetch_optional(&mut *tx)
                .await
                .map_err(failed)?;
            if sold.is_some() {
                return Ok(WriteOutcome::Written);
            }
            let query = sqlx::query(sql.fenced_write)
                .bind(signed(count))
                .bind(signed(fence))
                .bind(sku);
            let query = if reuses {
                query
            } else {
                query.bind(signed(fence))
            };
            let written = query.execute(&mut *tx).await.map_err(failed)?;
            if written.rows_affected() == 0 {
                let last: Option<i64> = sqlx::query_scalar(sql.fence)
                    .bind(sku)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(failed)?;
                return Ok(WriteOutcome::Stale {
                    last: last.map_or(0, unsigned),
                });
            }
            let recorded = sqlx::query(sql.record_sale)
                .bind(sku)
                .bind(order)
                .bind(signed(fence))
                .execute(&mut *tx)
                .await;
            match recorded {
                Ok(_) => {}
                // Another write recorded this order's sale first: ours rolls back with `tx`.
                Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
                    return Ok(WriteOutcome::Written);
                }
                Err(error) => return Err(failed(error)),
            }
            tx.commit().await.map_err(failed)?;
            Ok(WriteOutcome::Written)
        })
    }

    /// The counter as a stock level (`reserved` is always 0).
    pub async fn level(&self, sku: &str) -> Result<StockLevel, LockError> {
        on_database!(self, |pool, sql, _reuses| {
            let failed = |e| LockError::unavailable(sql.backend, e);
            let row: Option<(i64, i64)> = sqlx::query_as(sql.level)
                .bind(sku)
                .fetch_optional(pool)
                .await
                .map_err(failed)?;
            let sold: i64 = sqlx::query_scalar(sql.sold)
                .bind(sku)
                .fetch_one(pool)
                .await
                .map_err(failed)?;
            let (available, received) = row.map_or((0, 0), |(c, r)| (unsigned(c), unsigned(r)));
            Ok(StockLevel {
                available,
                reserved: 0,
                sold: unsigned(sold),
                received,
            })
        })
    }
}
