//! What differs between PostgreSQL and MySQL for the stock tables, and running statements in a
//! transaction of either: every statement is written once with `?` placeholders
//! (`statements.rs`), numbered `$1, $2, ...` for PostgreSQL; every value bound is a text or a
//! 64-bit number, and every column read is a 64-bit number.

use std::future::Future;

use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Row, Type};

pub(super) use crate::sql::Arg;
use crate::sql::{arguments, RowsAffected};

/// The first column of the first row `rows` holds (a count, a level, the clock), or 0 when
/// there is none (a SKU never restocked).
pub(super) fn first_number(rows: &[Vec<i64>]) -> i64 {
    rows.first()
        .and_then(|row| row.first())
        .copied()
        .unwrap_or(0)
}

/// A database the stock tables live in: `sqlx::Postgres` (feature `postgres`) or `sqlx::MySql`
/// (feature `mysql`). Sealed.
pub trait StockDialect: sealed::Sealed {}

#[cfg(feature = "postgres")]
impl StockDialect for sqlx::Postgres {}
#[cfg(feature = "mysql")]
impl StockDialect for sqlx::MySql {}

pub(super) mod sealed {
    use super::Run;

    /// The dialect's side of the stock tables.
    pub trait Sealed: Run {
        /// The store's name in errors.
        const BACKEND: &'static str;
        /// The database's clock, in µs since the Unix epoch, as a 64-bit number.
        const NOW_US: &'static str;
        /// The migration creating the tables for the default prefix
        /// (`lock-core/migrations/<database>/0002_lock_core_stock.sql`).
        const MIGRATION: &'static str;
        /// `expr` as a 64-bit number.
        fn int(expr: &str) -> String;
        /// Adds a restock to the SKU's row, creating it when missing (`?`: sku, units, units).
        fn restock(prefix: &str) -> String;
        /// Removes one batch of the records of SKUs never restocked (`?`: retention µs).
        fn sweep_unknown(prefix: &str) -> String;
        /// Removes one batch (at most 1,000) of the orders table's rows that match
        /// `condition` (on the table's own columns).
        fn delete_batch(prefix: &str, condition: &str) -> String;
        /// A statement written with `?` placeholders, as this database numbers them.
        fn placeholders(sql: &str) -> String;
        /// The database chose this transaction as a deadlock or serialization victim.
        fn is_conflict(error: &sqlx::Error) -> bool;
    }
}

#[cfg(feature = "postgres")]
impl sealed::Sealed for sqlx::Postgres {
    const BACKEND: &'static str = "postgres";
    const NOW_US: &'static str = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)";

    const MIGRATION: &'static str =
        include_str!("../../../migrations/postgres/0002_lock_core_stock.sql");

    fn int(expr: &str) -> String {
        format!("CAST({expr} AS BIGINT)")
    }

    fn restock(prefix: &str) -> String {
        format!(
            "INSERT INTO {prefix}_levels (sku, available, reserved, sold, received, version) \
             VALUES (?, ?, 0, 0, ?, 1) ON CONFLICT (sku) DO UPDATE SET \
             available = {prefix}_levels.available + EXCLUDED.available, \
             received = {prefix}_levels.received + EXCLUDED.received, \
             version = {prefix}_levels.version + 1"
        )
    }

    fn sweep_unknown(prefix: &str) -> String {
        format!(
            "DELETE FROM {prefix}_orders WHERE ctid IN (SELECT o.ctid FROM {prefix}_orders o \
             WHERE o.recorded_at < {now} - ? AND NOT EXISTS \
             (SELECT 1 FROM {prefix}_levels l WHERE l.sku = o.sku) LIMIT 1000)",
            now = Self::NOW_US
        )
    }

    fn delete_batch(prefix: &str, condition: &str) -> String {
        format!(
            "DELETE FROM {prefix}_orders WHERE ctid IN (SELECT ctid FROM {prefix}_orders \
             WHERE {condition} LIMIT 1000)"
        )
    }

    fn placeholders(sql: &str) -> String {
        let mut out = String::with_capacity(sql.len() + 8);
        let mut n = 0;
        for ch in sql.chars() {
            if ch == '?' {
                n += 1;
                out.push('$');
                out.push_str(&n.to_string());
            } else {
                out.push(ch);
            }
        }
        out
    }

    fn is_conflict(error: &sqlx::Error) -> bool {
        matches!(error, sqlx::Error::Database(db)
            if db.code().is_some_and(|c| c == "40001" || c == "40P01"))
    }
}

#[cfg(feature = "mysql")]
impl sealed::Sealed for sqlx::MySql {
    const BACKEND: &'static str = "mysql";
    const NOW_US: &'static str = "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)";

    const MIGRATION: &'static str =
        include_str!("../../../migrations/mysql/0002_lock_core_stock.sql");

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

    fn placeholders(sql: &str) -> String {
        sql.to_owned()
    }

    fn is_conflict(error: &sqlx::Error) -> bool {
        let sqlx::Error::Database(db) = error else {
            return false;
        };
        // Deadlock victim, lock wait timeout.
        db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
            .is_some_and(|my| matches!(my.number(), 1205 | 1213))
    }
}

/// The statements creating the tables under `prefix`: the dialect's migration, its comments
/// dropped, statement by statement, the default prefix replaced.
pub(super) fn schema<D: StockDialect>(prefix: &str) -> Vec<String> {
    let text: String = D::MIGRATION
        .lines()
        .filter(|line| !line.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    text.split(';')
        .map(str::trim)
        .filter(|statement| !statement.is_empty())
        .map(|statement| statement.replace(super::DEFAULT_PREFIX, prefix))
        .collect()
}

/// Running statements on a connection (in a transaction or not) of a database whose values are
/// texts and 64-bit numbers.
pub trait Run: Database {
    /// Runs `sql`: the rows it changed.
    fn execute<'a>(
        conn: &'a mut Self::Connection,
        sql: &'a str,
        args: &'a [Arg<'a>],
    ) -> impl Future<Output = Result<u64, sqlx::Error>> + Send + 'a;

    /// Runs `sql`: its rows, each as its columns' numbers.
    fn fetch<'a>(
        conn: &'a mut Self::Connection,
        sql: &'a str,
        args: &'a [Arg<'a>],
    ) -> impl Future<Output = Result<Vec<Vec<i64>>, sqlx::Error>> + Send + 'a;
}

impl<DB> Run for DB
where
    DB: Database,
    DB::QueryResult: RowsAffected,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
{
    async fn execute<'a>(
        conn: &'a mut Self::Connection,
        sql: &'a str,
        args: &'a [Arg<'a>],
    ) -> Result<u64, sqlx::Error> {
        let arguments = arguments::<DB>(args.iter().copied())?;
        let done = sqlx::query_with(sql, arguments).execute(conn).await?;
        Ok(done.rows())
    }

    async fn fetch<'a>(
        conn: &'a mut Self::Connection,
        sql: &'a str,
        args: &'a [Arg<'a>],
    ) -> Result<Vec<Vec<i64>>, sqlx::Error> {
        let arguments = arguments::<DB>(args.iter().copied())?;
        let rows = sqlx::query_with(sql, arguments).fetch_all(conn).await?;
        rows.iter()
            .map(|row| {
                (0..row.len())
                    .map(|i| row.try_get::<i64, usize>(i))
                    .collect()
            })
            .collect()
    }
}

#[cfg(all(test, feature = "postgres"))]
mod tests {
    use super::sealed::Sealed;

    #[test]
    fn the_schema_is_the_migration_under_another_prefix() {
        let statements = super::schema::<sqlx::Postgres>("shop");
        assert_eq!(statements.len(), 4);
        assert!(statements.iter().all(|s| s.starts_with("CREATE")));
        assert!(statements
            .iter()
            .all(|s| s.contains("shop_") && !s.contains("lock_core")));
        assert_eq!(super::schema::<sqlx::Postgres>("lock_core_stock").len(), 4);
    }

    #[test]
    fn postgres_numbers_its_placeholders() {
        assert_eq!(
            sqlx::Postgres::placeholders("SELECT a FROM t WHERE b = ? AND c = ?"),
            "SELECT a FROM t WHERE b = $1 AND c = $2"
        );
    }
}
