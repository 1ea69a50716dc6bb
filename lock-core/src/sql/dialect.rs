//! What differs between PostgreSQL and MySQL, and nothing else (sqlx's `Database` model, on
//! sqlx's own database types), for every SQL store: [`Dialect`] and its sealed side, grouped
//! by store. For the lock table: each dialect's statements with the order it binds their
//! parameters in, its pool and connection settings, how it creates its schema, wakes waiters
//! and runs one grant attempt; everything else (waiting, retries, the breaker, renewal,
//! release, the clean-up after an abandoned acquire, sweeps) is written once over [`Dialect`]
//! (`acquire.rs`, `builder.rs`, `sweep.rs`). For the stock tables, the recovery points, the
//! result table and the fenced update: the statements and clauses that differ, written once
//! each in `postgres.rs` and `mysql.rs`.
//!
//! A statement names its parameters by what they are ([`Bind`]); the shared code fills in the
//! values ([`Values`]) and the dialect's list says which go where, so PostgreSQL's `$n` and
//! MySQL's `?` need no code of their own.

use std::future::Future;
use std::sync::Arc;

use sqlx::pool::PoolOptions;
use sqlx::{Arguments, ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Type};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::leases::LeaseBook;
use super::operator::{OperatorDialect, OperatorRows};
use super::stock::Run;
use super::waiters::WaiterHub;
use crate::breaker::Breaker;
use crate::Result;

/// A SQL database lock-core speaks: `sqlx::Postgres` (feature `postgres`) or `sqlx::MySql`
/// (feature `mysql`), as in sqlx's own `Pool<DB>`. Every SQL store is written once over it
/// and takes its database as a type parameter where it runs on both: the lock table
/// ([`SqlBackend<D>`](super::SqlBackend)), the stock ([`SqlStock<D>`](super::SqlStock)), the
/// recovery points ([`RecoveryPoints::from_pool`](super::RecoveryPoints::from_pool)), the
/// fenced update ([`FencedUpdate<D>`](super::FencedUpdate)) and the transaction a claim
/// commits in ([`EffectTransaction`](super::EffectTransaction)). Sealed: the two are all
/// there are, and what differs between them (statements, placeholders, quoting, errors) is
/// lock-core's own.
///
/// ```
/// # #[cfg(feature = "postgres")] {
/// use lock_core::sql::{Dialect, FencedUpdate};
///
/// /// The fenced write of a stock row, on either database.
/// fn stock_update<D: Dialect>() -> String {
///     FencedUpdate::<D>::new("stock", "sku", "fence").set("available").build().unwrap()
/// }
/// assert!(stock_update::<sqlx::Postgres>().ends_with(r#"WHERE "sku" = $3 AND "fence" <= $2"#));
/// # }
/// ```
pub trait Dialect: Sealed {}

#[cfg(feature = "postgres")]
impl Dialect for sqlx::Postgres {}
#[cfg(feature = "mysql")]
impl Dialect for sqlx::MySql {}

#[cfg(feature = "postgres")]
impl RowsAffected for sqlx::postgres::PgQueryResult {
    fn rows(&self) -> u64 {
        self.rows_affected()
    }
}

#[cfg(feature = "mysql")]
impl RowsAffected for sqlx::mysql::MySqlQueryResult {
    fn rows(&self) -> u64 {
        self.rows_affected()
    }
}

/// A connection's settings on database `DB`.
pub(crate) type Options<DB> = <<DB as Database>::Connection as sqlx::Connection>::Options;

pub(crate) mod sealed {
    use super::*;
    use crate::sql::recovery::{Point, PointsStatements};

    /// The dialect's side of every SQL store, by store (see the [module docs](super)); the
    /// implementations are `postgres.rs` and `mysql.rs`, one per database (and, for the
    /// operator's view of the lock table, `operator/postgres.rs` and `operator/mysql.rs`).
    pub trait Sealed: Exec + Run + OperatorDialect + OperatorRows + Send + Sync + 'static {
        // ---- Every store

        /// The database's name in errors and metrics (`"postgres"`, `"mysql"`).
        const BACKEND: &'static str;

        /// The database chose this transaction as a deadlock or serialization victim.
        fn is_conflict(error: &sqlx::Error) -> bool;

        /// The `n`th (from 1) parameter of a statement: `$n`, or `?`.
        fn placeholder(n: usize) -> String;

        /// A statement written with `?` placeholders, as this database numbers them.
        fn placeholders(sql: &str) -> String;

        /// A checked identifier (letters, digits, `_`), quoted.
        fn quote(identifier: &str) -> String;

        // ---- Tables of entries by key, with an expiry (the recovery points; the result store)

        /// The live entry of the key (the one parameter) in `table`, by its `key` column.
        fn live_entry(table: &str, key: &str) -> String;

        /// Deletes one batch ([`SWEEP_BATCH`](crate::sql::sweep::SWEEP_BATCH)) of `table`'s expired
        /// rows, by its `key` column.
        fn purge_expired(table: &str, key: &str) -> String;

        /// Runs a store's `migration` (its `CREATE ... IF NOT EXISTS`), serialized with other
        /// creators where the database needs it.
        fn create_table<'a>(
            pool: &'a Pool<Self>,
            migration: &'a str,
        ) -> impl Future<Output = std::result::Result<(), sqlx::Error>> + Send + 'a;

        // ---- The lock table (`SqlBackend`)

        /// The dialect's own statements for a grant attempt.
        type Grant: Send + Sync + 'static;
        /// The migration creating the default table (`lock_core_locks`); for another table,
        /// its name is replaced throughout.
        const MIGRATION: &'static str;

        /// The statements on `table`; with `operator`, the table has the operator's schema
        /// (`OPERATOR_MIGRATION`): grants store the holder's label, and the sweep also
        /// deletes the audit records past their retention.
        fn statements(table: &str, operator: bool) -> (Statements, Self::Grant);

        /// The dialect's own pool and connection settings, on top of the backend's.
        fn connecting(
            pool: PoolOptions<Self>,
            options: Options<Self>,
        ) -> (PoolOptions<Self>, Options<Self>);

        /// Refuses, before any connection, what this build cannot do: a URL that requires TLS
        /// (`sslmode=require`/`verify-*`, `ssl-mode=REQUIRED`/`VERIFY_*`) in a build without
        /// the dialect's TLS feature, which sqlx would only refuse at every connection.
        fn check_options(options: &Options<Self>) -> Result<()>;

        /// Creates the schema if missing.
        fn create_schema(pool: &Pool<Self>, table: &str)
            -> impl Future<Output = Result<()>> + Send;

        /// Starts routing the database's wake-ups to the backend's waiters until `wake.stop`;
        /// false when the database has none to send (waiters poll).
        fn listen(
            pool: &Pool<Self>,
            table: &str,
            wake: Wake,
        ) -> impl Future<Output = Result<bool>> + Send;

        /// One grant attempt's statements, run to their end whatever happens to the caller.
        fn grant(
            pool: Pool<Self>,
            grant: Arc<Self::Grant>,
            ask: Ask,
        ) -> impl Future<Output = std::result::Result<Outcome, sqlx::Error>> + Send + 'static;

        // ---- The stock tables (`SqlStock`)

        /// The database's clock, in µs since the Unix epoch, as a 64-bit number.
        const NOW_US: &'static str;
        /// The migration creating the stock tables for the default prefix
        /// (`lock-core/migrations/<database>/0002_lock_core_stock.sql`).
        const STOCK_MIGRATION: &'static str;
        /// `expr` as a 64-bit number.
        fn int(expr: &str) -> String;
        /// Adds a restock to the SKU's row, creating it when missing (`?`: sku, units, units).
        fn restock(prefix: &str) -> String;
        /// Removes one batch of the records of SKUs never restocked (`?`: retention µs).
        fn sweep_unknown(prefix: &str) -> String;
        /// Removes one batch (at most 1,000) of the orders table's rows that match
        /// `condition` (on the table's own columns).
        fn delete_batch(prefix: &str, condition: &str) -> String;

        // ---- The recovery points (`RecoveryPoints`)

        /// The migration creating the default table (`lock_core_recovery_points`).
        const POINTS_MIGRATION: &'static str;
        /// The statements on the points table `table`.
        fn points_statements(table: &str) -> PointsStatements;
        /// The key a point is stored under (MySQL: SHA-256 past the column's 128 bytes).
        fn point_key(key: &str) -> std::borrow::Cow<'_, str>;
        /// The live point stored under `stored_key`, read with `find` on the pool.
        fn find_point<'a>(
            pool: &'a Pool<Self>,
            find: &'a str,
            stored_key: &'a str,
        ) -> impl Future<Output = std::result::Result<Option<Vec<u8>>, sqlx::Error>> + Send + 'a;
        /// Writes `point` on `connection`, in the application's transaction: `Ok(None)`
        /// when written; otherwise the live point there (committed by another execution), or
        /// `Some(None)` if it expired between the statements.
        fn record_point<'a>(
            sql: &'a PointsStatements,
            connection: &'a mut Self::Connection,
            point: Point<'a>,
        ) -> impl Future<Output = Result<Option<Option<Vec<u8>>>>> + Send + 'a;

        // ---- Completing a claim in the application's transaction (`ClaimInfo::commit_in`)

        /// The application's transaction's connection as a PostgreSQL one, where it is (the
        /// PostgreSQL result store's records are completed in it).
        #[cfg(feature = "postgres")]
        fn postgres_connection(
            connection: &mut Self::Connection,
        ) -> Option<&mut sqlx::PgConnection>;
    }
}

pub(crate) use self::sealed::Sealed;

/// What [`Sealed::listen`] routes wake-ups with (PostgreSQL's notifications; MySQL has none).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub struct Wake {
    pub(crate) hub: Arc<WaiterHub>,
    /// The leases granted in this process, whose lost signals a revocation fires.
    pub(crate) leases: Arc<LeaseBook>,
    /// The channel revocations come on (`<table>_revoked`).
    pub(crate) revoked: String,
    pub(crate) breaker: Breaker,
    pub(crate) stop: CancellationToken,
}

/// One grant attempt, as the dialect's statements need it.
pub struct Ask {
    pub(crate) lock_key: String,
    pub(crate) name: String,
    pub(crate) owner: String,
    /// The lease in µs.
    pub(crate) ttl: i64,
    /// The holder's label as stored ([`HolderLabel::as_stored`](crate::HolderLabel::as_stored)),
    /// if it gave one.
    pub(crate) label: Option<String>,
}

/// What one grant attempt found.
pub enum Outcome {
    /// Granted with this fencing token; the lease counts from `sent`.
    Granted { fence: i64, sent: Instant },
    /// Held by another owner, with this much left (µs, by the database's clock).
    Busy(Option<i64>),
}

/// A parameter of a statement, by what it is.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // `Channel`, `Backdate`: PostgreSQL's
pub(crate) enum Bind {
    /// The lock's storage key.
    Key,
    /// The owner token's hex form.
    Owner,
    /// The lease's fencing token.
    Fence,
    /// A lease length in µs.
    Ttl,
    /// The `NOTIFY` channel: the table's name.
    Channel,
    /// How far back a release dates a free row, in µs.
    Backdate,
    /// How long rows are kept after their lease ended, in µs.
    Retention,
}

/// A statement and its parameters, in the order it binds them.
#[derive(Debug)]
pub struct Statement {
    pub(crate) sql: String,
    pub(crate) binds: &'static [Bind],
}

impl Statement {
    pub(crate) fn new(sql: String, binds: &'static [Bind]) -> Self {
        Self { sql, binds }
    }
}

/// The statements every dialect has, with the table's name put in once.
#[derive(Debug)]
pub struct Statements {
    /// A waiter's re-check before it tries again: the holder's owner token and time left (µs),
    /// if the dialect reads first (MySQL, whose grant is a transaction).
    pub(crate) peek: Option<Statement>,
    /// The lease is held: a count of 0 or 1.
    pub(crate) check: Statement,
    /// Extends a held lease: 1 row when held.
    pub(crate) renew: Statement,
    /// Frees a held lease: 1 row when it was held.
    pub(crate) release: Statement,
    /// After a release that found no live lease: drops the owner's expired row, if the
    /// dialect keeps none.
    pub(crate) release_expired: Option<Statement>,
    /// Frees whatever row the owner has, live or not: the rows freed.
    pub(crate) forget: Statement,
    /// One batch of the retention sweep each: the rows deleted.
    pub(crate) sweeps: Vec<Statement>,
}

/// The values a statement's parameters take.
#[derive(Clone, Copy, Debug, Default)]
pub struct Values<'a> {
    pub(crate) key: &'a str,
    pub(crate) owner: &'a str,
    pub(crate) fence: i64,
    pub(crate) ttl: i64,
    pub(crate) channel: &'a str,
    pub(crate) backdate: i64,
    pub(crate) retention: i64,
}

/// A parameter's value: every statement of the SQL backends and the SQL stock binds texts and
/// 64-bit numbers only.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    /// A text.
    Text(&'a str),
    /// A 64-bit number.
    Int(i64),
}

impl<'a> Values<'a> {
    fn value(&self, bind: Bind) -> Arg<'a> {
        match bind {
            Bind::Key => Arg::Text(self.key),
            Bind::Owner => Arg::Text(self.owner),
            Bind::Channel => Arg::Text(self.channel),
            Bind::Fence => Arg::Int(self.fence),
            Bind::Ttl => Arg::Int(self.ttl),
            Bind::Backdate => Arg::Int(self.backdate),
            Bind::Retention => Arg::Int(self.retention),
        }
    }

    /// The values in the order `binds` (a statement's) names them.
    fn bound(self, binds: &'static [Bind]) -> impl Iterator<Item = Arg<'a>> {
        binds.iter().map(move |&bind| self.value(bind))
    }
}

/// The rows a statement changed (or, for a `SELECT`, returned), whatever the database.
pub trait RowsAffected {
    /// The number of rows.
    fn rows(&self) -> u64;
}

/// Running the shared statements on a pool of any database that can bind their parameters.
pub trait Exec: Database {
    /// Runs `statement`: the rows it changed.
    fn rows<'a>(
        pool: &'a Pool<Self>,
        statement: &'a Statement,
        values: Values<'a>,
    ) -> impl Future<Output = std::result::Result<u64, sqlx::Error>> + Send + 'a;

    /// Runs `statement`, which returns one number.
    fn number<'a>(
        pool: &'a Pool<Self>,
        statement: &'a Statement,
        values: Values<'a>,
    ) -> impl Future<Output = std::result::Result<i64, sqlx::Error>> + Send + 'a;

    /// Runs `statement`, which returns an owner token and a number, or nothing.
    fn holder<'a>(
        pool: &'a Pool<Self>,
        statement: &'a Statement,
        values: Values<'a>,
    ) -> impl Future<Output = std::result::Result<Option<(Vec<u8>, i64)>, sqlx::Error>> + Send + 'a;
}

impl<DB> Exec for DB
where
    DB: Database,
    DB::QueryResult: RowsAffected,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'r> Vec<u8>: Decode<'r, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
{
    async fn rows<'a>(
        pool: &'a Pool<Self>,
        statement: &'a Statement,
        values: Values<'a>,
    ) -> std::result::Result<u64, sqlx::Error> {
        let arguments = arguments::<DB>(values.bound(statement.binds))?;
        let done = sqlx::query_with(&statement.sql, arguments)
            .execute(pool)
            .await?;
        Ok(done.rows())
    }

    async fn number<'a>(
        pool: &'a Pool<Self>,
        statement: &'a Statement,
        values: Values<'a>,
    ) -> std::result::Result<i64, sqlx::Error> {
        let arguments = arguments::<DB>(values.bound(statement.binds))?;
        sqlx::query_scalar_with(&statement.sql, arguments)
            .fetch_one(pool)
            .await
    }

    async fn holder<'a>(
        pool: &'a Pool<Self>,
        statement: &'a Statement,
        values: Values<'a>,
    ) -> std::result::Result<Option<(Vec<u8>, i64)>, sqlx::Error> {
        let arguments = arguments::<DB>(values.bound(statement.binds))?;
        sqlx::query_as_with(&statement.sql, arguments)
            .fetch_optional(pool)
            .await
    }
}

/// `args`, in order, as database `DB` takes a statement's parameters.
pub(crate) fn arguments<'a, DB>(
    args: impl IntoIterator<Item = Arg<'a>>,
) -> std::result::Result<DB::Arguments<'a>, sqlx::Error>
where
    DB: Database,
    &'a str: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut arguments = DB::Arguments::default();
    for arg in args {
        match arg {
            Arg::Text(text) => arguments.add(text),
            Arg::Int(number) => arguments.add(number),
        }
        .map_err(sqlx::Error::Encode)?;
    }
    Ok(arguments)
}
