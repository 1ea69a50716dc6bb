//! Running the stock's statements in a transaction of either database: every statement is
//! written once with `?` placeholders (`statements.rs`), numbered `$1, $2, ...` for PostgreSQL
//! ([`Dialect`]'s stock clauses are in `postgres.rs` and `mysql.rs`); every value bound is a
//! text or a 64-bit number, and every column read is a 64-bit number.

use std::future::Future;

use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Row, Type};

pub(super) use crate::sql::Arg;
use crate::sql::{arguments, Dialect, RowsAffected};

/// The first column of the first row `rows` holds (a count, a level, the clock), or 0 when
/// there is none (a SKU never restocked).
pub(super) fn first_number(rows: &[Vec<i64>]) -> i64 {
    rows.first()
        .and_then(|row| row.first())
        .copied()
        .unwrap_or(0)
}

/// The statements creating the tables under `prefix`: the dialect's migration, its comments
/// dropped, statement by statement, the default prefix replaced.
pub(super) fn schema<D: Dialect>(prefix: &str) -> Vec<String> {
    let text: String = D::STOCK_MIGRATION
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
    use crate::sql::dialect::Sealed;

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
