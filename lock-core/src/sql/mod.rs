//! The SQL backends: PostgreSQL (feature `postgres`) and MySQL / MariaDB (feature `mysql`), both
//! on [`sqlx`] pools.
//!
//! ```no_run
//! # #[cfg(feature = "postgres")]
//! # async fn example() -> Result<(), lock_core::LockError> {
//! use lock_core::{LockClient, PostgresBackend};
//!
//! let backend = PostgresBackend::connect("postgres://app@127.0.0.1/app").await?;
//! let locks = LockClient::builder(backend).namespace("shop").build()?;
//! let guard = locks.lock("sku:42").await?;
//! guard.release().await?;
//! # Ok(()) }
//! ```
//!
//! # Your own pool
//! `PostgresBackend::builder_from_pool` and `MySqlBackend::builder_from_pool` (or the
//! `from_pool` shortcuts) use a `sqlx` pool you already have instead of opening one; the
//! pool keeps its own size and timeouts.
//!
//! ```no_run
//! # #[cfg(feature = "postgres")]
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use lock_core::{LockClient, PostgresBackend};
//!
//! let pool = sqlx::PgPool::connect("postgres://app@127.0.0.1/app").await?;
//! // The tables come from the application's migrations (PostgresBackend::MIGRATION).
//! let backend = PostgresBackend::builder_from_pool(pool.clone())
//!     .create_schema(false)
//!     .connect()
//!     .await?;
//! let locks = LockClient::new(backend);
//! # Ok(()) }
//! ```
//!
//! # TLS
//! With the features `postgres-tls` and `mysql-tls` (sqlx's rustls with the `ring` crypto
//! provider and the Mozilla root certificates) the URL says how to connect:
//! `postgres://app:secret@db.internal/app?sslmode=verify-full&sslrootcert=/etc/ssl/db-ca.pem`,
//! `mysql://app:secret@db.internal/app?ssl-mode=VERIFY_IDENTITY&ssl-ca=/etc/ssl/db-ca.pem`
//! (`sslrootcert`/`ssl-ca`: a private CA, trusted beside the public roots; `sslcert`/`sslkey`,
//! `ssl-cert`/`ssl-key`: a client certificate). Without a mode sqlx *prefers* TLS but checks no
//! certificate: say `verify-full` / `VERIFY_IDENTITY` in production. A certificate that does
//! not verify, or a password the server refuses, is [`LockError::Unavailable`](crate::LockError::Unavailable) from `connect`;
//! a URL that requires TLS in a build without these features is
//! [`LockError::InvalidConfig`](crate::LockError::InvalidConfig), before any connection.
//!
//! # One backend, two dialects
//! [`PostgresBackend`] and [`MySqlBackend`] are one [`SqlBackend`] over a [`Dialect`]
//! (sqlx's `Database` model): the dialect has the statements and the order it binds their
//! parameters in, how it opens its pool, creates its schema, wakes waiters and runs a grant
//! attempt; waiting, retries, the breaker, renewal, release, the clean-up after an abandoned
//! acquire and the sweeps are written once.
//!
//! # The lock table
//! Both backends keep one row per held lock in a table (default `lock_core_locks`, created on
//! first use unless [`SqlBackendBuilder::create_schema`] turns that off; the statements are
//! also available to put into your own migrations: `schema_statements(table)`, and for the
//! default table the `MIGRATION` and `OPERATOR_MIGRATION` consts of each backend, the same
//! text as the files `lock-core/migrations/{postgres,mysql}/0001_lock_core.sql` and
//! `0003_lock_core_operator.sql`):
//!
//! | column | meaning |
//! |---|---|
//! | `lock_key` | primary key: the lock's full name (`namespace:key`), or `sha256:<hex>` of it when the name is longer than 128 bytes |
//! | `name` | the full name as given, for operators |
//! | `owner` | the holder's owner token (32 hex digits) |
//! | `fence` | the grant's fencing token |
//! | `entry_count` | always 1: reentrancy is counted per task by [`LockClient`](crate::LockClient), the store sees one acquisition per owner token |
//! | `owner_host`, `owner_pid` | which machine and process holds it, for operators |
//! | `acquired_at`, `expires_at` | set with the **database's** clock |
//! | `label` | the holder's [`HolderLabel`](crate::HolderLabel) as stored, written by the grant; `NULL` when it gave none |
//! | `label_owner` | PostgreSQL only: the owner that wrote `label` (a grant by an older version writes neither, and the previous holder's label is then not shown as the new holder's) |
//!
//! A row is taken only when it is absent or expired (`expires_at <=` the database's now), in one
//! atomic step, so a crashed holder's lock frees itself when its lease runs out, with no trust
//! in client clocks. Release and renewal are checked by owner and fence.
//!
//! Fencing tokens come from a sequence on PostgreSQL (`<table>_fence`) and from a per-name
//! counter row on MySQL (`<table>_fence`, seeded from the database clock in microseconds),
//! drawn while the grant holds the name's row lock, so tokens keep increasing per name across
//! holders, releases and expiries. On MySQL a release deletes the lock row (the counter row
//! stays). On PostgreSQL a release marks the row free (`owner = ''`, `expires_at = now()`) and
//! keeps it, so that every later grant of the name draws its token in `ON CONFLICT DO UPDATE`,
//! with the row locked; a token drawn for a fresh `INSERT` is drawn before the conflict check
//! and could be older than that of a holder who came and went meanwhile.
//!
//! # Retention
//! Rows do not live forever: each backend sweeps, every [`SWEEP_EVERY`] (an hour), the rows of
//! locks whose lease ended more than [`ROW_RETENTION`] (a day) ago, and on MySQL the counter
//! rows of names not granted for as long (`sweep_expired` runs one sweep now). On PostgreSQL a
//! client with a shorter [`fence_retention`](crate::LockClientBuilder::fence_retention) (the
//! response cache's, for keys that anonymous requests make up) has its released rows swept
//! that long after the release, at the next sweep, instead of a day after it. Tokens still
//! only increase: PostgreSQL's sequence is shared by every name, and a MySQL counter created
//! again starts from the clock, past every token the old one gave. A day is far longer than
//! any statement that could still be in flight for a swept name.
//!
//! Names and owner tokens reach the database only as bound parameters. The table name is
//! configuration, checked to be a plain identifier before it is put into statements.
//!
//! # The operator's view
//! Both backends are an [`OperatorBackend`](crate::backend::OperatorBackend) (see
//! [`LockAdmin`](crate::operator::LockAdmin)): inspecting a key reads its row (holder, token,
//! label, time of grant, lease left; no waiters, which wait in their own processes); listing
//! walks the primary key a bounded page at a time; a forced release is one transaction that
//! frees the holder's row, raises the key's fencing token past the holder's, appends an audit
//! row to `<table>_audit` (kept for the request's retention, then swept) and wakes the
//! waiters. The holder's `lost()` fires with
//! [`LostReason::Revoked`](crate::LostReason::Revoked): on PostgreSQL at once (the transaction
//! sends `NOTIFY <table>_revoked`, which the holder's backend listens for), on MySQL at its
//! next renewal (which finds the row gone and reads the audit record). The label column and
//! the audit table come from `OPERATOR_MIGRATION`, which `create_schema` runs (upgrading a
//! table made by an earlier version in place); a backend on a table without them stores no
//! labels and answers the operator's calls with an error that names the migration.
//!
//! # Waiting
//! - PostgreSQL: a release sends `NOTIFY <table>, '<lock_key>'`; each backend listens on one
//!   connection and wakes one local waiter of that key. Waiters also re-check when the holder's
//!   lease ends and at least every [`poll_cap`](SqlBackendBuilder::poll_cap) (1 s), in case a
//!   notification was lost (after a reconnect every waiter re-checks at once).
//! - MySQL has no server push to clients: waiters poll with a jittered interval that doubles
//!   from 10 ms up to the cap (100 ms), and never sleep past the holder's lease end. `GET_LOCK`
//!   would wait server-side but ties up one pooled connection per waiter, cannot be abandoned
//!   cleanly when the waiting future is dropped, and has no lease expiry. A release does wake
//!   waiters of the same backend in this process at once.
//! - Of one backend's waiters for a key, only one polls (on either database); the others wait
//!   for a wake-up, and the polling turn passes on when its waiter leaves. A crowd of waiters in
//!   one process costs the database one poll per key, not one per waiter.
//!
//! `PostgresAdvisoryBackend` (feature `postgres`) offers PostgreSQL session advisory locks
//! instead of the table, with their own trade-offs (see its docs).

mod acquire;
#[cfg(feature = "postgres")]
mod advisory;
mod builder;
mod commit;
mod dialect;
mod fenced;
mod leases;
#[cfg(feature = "mysql")]
mod mysql;
mod operator;
#[cfg(feature = "postgres")]
mod postgres;
mod recovery;
#[cfg(feature = "postgres")]
pub(crate) mod result_store;
mod stock;
mod sweep;
mod wait;
mod waiters;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use sha2::{Digest, Sha256};
use sqlx::Pool;
use tokio_util::sync::DropGuard;

#[cfg(feature = "postgres")]
pub use self::advisory::{PostgresAdvisoryBackend, PostgresAdvisoryLease};
pub(crate) use self::builder::validate_table;
#[cfg(feature = "mysql")]
pub use self::builder::MySqlBackendBuilder;
#[cfg(feature = "postgres")]
pub use self::builder::PostgresBackendBuilder;
pub use self::builder::SqlBackendBuilder;
pub(crate) use self::builder::{Source, SqlConfig};
pub use self::commit::EffectTransaction;
pub use self::dialect::Dialect;
use self::dialect::Statements;
pub(crate) use self::dialect::{arguments, Arg, RowsAffected};
pub use self::fenced::FencedUpdate;
use self::leases::{LeaseBook, Registration};
use self::operator::{OperatorDialect, OperatorStatements};
pub use self::recovery::{RecoveryPoints, RecoveryPointsBuilder};
#[cfg(feature = "postgres")]
pub use self::result_store::{PostgresResultStore, PostgresResultStoreBuilder};
#[cfg(feature = "mysql")]
pub use self::stock::MySqlStock;
#[cfg(feature = "postgres")]
pub use self::stock::PostgresStock;
pub use self::stock::{
    SqlStock, SqlStockBuilder, SqlStockStats, StockStrategy, DEFAULT_PREFIX, SWEEP_EVERY_CALLS,
};
pub(crate) use self::sweep::{spawn_sweeper, sweep};
pub use self::sweep::{ROW_RETENTION, SWEEP_EVERY};
#[cfg(feature = "postgres")]
pub(crate) use self::wait::protocol;
use self::wait::Polling;
pub(crate) use self::wait::{
    fence_from_i64, is_unreachable, run, to_lock_error, wait_for_grant, Attempt,
};
use self::waiters::WaiterHub;
use crate::backend::in_flight::InFlight;
use crate::breaker::Breaker;
use crate::Result;

/// The default lock table.
pub const DEFAULT_TABLE: &str = "lock_core_locks";

/// Names longer than this (in bytes) are stored under a hash; the row keeps the original.
const MAX_STORED_KEY: usize = 128;

/// The prefix of a hashed `lock_key`; short names starting with it are hashed too, so a stored
/// name can never be mistaken for another name's hash.
const HASH_PREFIX: &str = "sha256:";

/// Locks as rows of a SQL table, expiring by the database's clock: [`PostgresBackend`] or
/// [`MySqlBackend`], one backend over the database `D` (`sqlx::Postgres` or `sqlx::MySql`).
///
/// Cheap to clone: clones share one connection pool (and, on PostgreSQL, one `LISTEN`
/// connection). See the [module docs](self) for the table and the waiting strategy.
///
/// ```no_run
/// use lock_core::{LockClient, PostgresBackend};
///
/// # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
/// let backend = PostgresBackend::builder("postgres://app@127.0.0.1/app")
///     .table("app_locks")
///     .connect()
///     .await?;
/// let locks = LockClient::new(backend);
/// let guard = locks.lock("report:daily").await?;
/// guard.release().await?;
/// # Ok(()) }
/// ```
pub struct SqlBackend<D: Dialect> {
    pub(crate) shared: Arc<Shared<D>>,
}

impl<D: Dialect> Clone for SqlBackend<D> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

/// Locks as rows of a PostgreSQL table, expiring by the database's clock; waiters are woken by
/// `LISTEN`/`NOTIFY`.
///
/// Cheap to clone: clones share one connection pool and one `LISTEN` connection. See the
/// [module docs](self) for the table and the waiting strategy, and
/// [`advisory`](SqlBackend::advisory) for session advisory locks on the same pool.
///
/// ```no_run
/// use lock_core::{LockClient, PostgresBackend};
///
/// # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
/// let backend = PostgresBackend::connect("postgres://app@127.0.0.1/app").await?;
/// let locks = LockClient::new(backend);
/// let guard = locks.lock("report:daily").await?;
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[cfg(feature = "postgres")]
pub type PostgresBackend = SqlBackend<sqlx::Postgres>;

/// A lease held as a row of a [`PostgresBackend`]'s table.
#[cfg(feature = "postgres")]
pub type PostgresLease = SqlLease;

/// Locks as rows of a MySQL (8.0+) or MariaDB (10.3+) table, expiring by the database's clock;
/// waiters poll.
///
/// Cheap to clone: clones share one connection pool. Grant transactions run at `READ
/// COMMITTED`, so looking for a missing row takes no gap locks (the classic source of insert
/// deadlocks).
///
/// ```no_run
/// use lock_core::{LockClient, MySqlBackend};
///
/// # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
/// let backend = MySqlBackend::connect("mysql://app@127.0.0.1/app").await?;
/// let locks = LockClient::new(backend);
/// let guard = locks.lock("invoice:7").await?;
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[cfg(feature = "mysql")]
pub type MySqlBackend = SqlBackend<sqlx::MySql>;

/// A lease held as a row of a [`MySqlBackend`]'s table.
#[cfg(feature = "mysql")]
pub type MySqlLease = SqlLease;

/// What the clones of one backend share.
pub(crate) struct Shared<D: Dialect> {
    pub(crate) pool: Pool<D>,
    /// This backend's waiters by key (and, on PostgreSQL, its advisory twin's).
    pub(crate) hub: Arc<WaiterHub>,
    /// Grant statements in flight, which run to their end even if their caller goes away.
    in_flight: InFlight,
    pub(crate) config: SqlConfig,
    /// The pool's circuit breaker (shared with the advisory backend made from this one).
    pub(crate) breaker: Breaker,
    /// A release wakes waiters through the database, in every process (PostgreSQL's
    /// `NOTIFY`), so this process wakes none of its own.
    notifies: bool,
    /// How often its waiters re-check on their own.
    pub(crate) polling: Polling,
    sql: Statements,
    pub(crate) grant: Arc<D::Grant>,
    /// The table has the operator's schema (the label column, `<table>_audit`): grants store
    /// labels, and the operator's calls work.
    operator: bool,
    operator_sql: OperatorStatements,
    force: Arc<<D as OperatorDialect>::Force>,
    /// The leases granted here, whose lost signals a revocation fires (PostgreSQL).
    leases: Arc<LeaseBook>,
    /// Stops the sweeper and the wake-up listener with the last clone.
    _stop_tasks: DropGuard,
}

/// A lease held as a row of the lock table.
#[derive(Debug)]
pub struct SqlLease {
    lock_key: String,
    /// The owner token's hex form, as stored.
    owner: String,
    fence: i64,
    /// How far back the release dates the free row (µs): `ROW_RETENTION` less the grant's
    /// fence retention, 0 without one (PostgreSQL, which keeps released rows).
    backdate: i64,
    /// Where a forced release's revocation finds the lease's lost signal (PostgreSQL); the
    /// lease leaves the book with this.
    revocable: Option<Registration>,
}

impl<D: Dialect> SqlBackend<D> {
    /// Connects with default settings to `url` (`postgres://user:password@host:port/db` or
    /// `mysql://user:password@host:port/db`).
    pub async fn connect(url: &str) -> Result<Self> {
        Self::builder(url).connect().await
    }

    /// Starts configuring a backend for `url`.
    pub fn builder(url: impl Into<String>) -> SqlBackendBuilder<D> {
        SqlBackendBuilder::new(Source::Url(url.into()))
    }

    /// Builds a backend with default settings on an existing pool (see
    /// [`builder_from_pool`](Self::builder_from_pool)); creates the schema if missing.
    pub async fn from_pool(pool: Pool<D>) -> Result<Self> {
        Self::builder_from_pool(pool).connect().await
    }

    /// Starts configuring a backend on an existing pool (`sqlx::PgPool` or `sqlx::MySqlPool`,
    /// shared with the application). The pool keeps its size and acquire timeout
    /// ([`max_connections`](SqlBackendBuilder::max_connections) is not used). On PostgreSQL
    /// the backend's `LISTEN` connection is taken from it for as long as the backend lives
    /// (count one connection more), and advisory locks ([`advisory`](PostgresBackend::advisory))
    /// open their sessions with the pool's connect options. On MySQL the connections keep
    /// their session settings: the backend starts each grant transaction at `READ COMMITTED`
    /// itself.
    ///
    /// ```no_run
    /// use lock_core::{LockClient, MySqlBackend, PostgresBackend};
    /// use sqlx::postgres::PgPoolOptions;
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let pool = PgPoolOptions::new()
    ///     .max_connections(20)
    ///     .connect("postgres://app@127.0.0.1/app")
    ///     .await?;
    /// let backend = PostgresBackend::builder_from_pool(pool.clone())
    ///     // The application's migrations create the table (see `MIGRATION`).
    ///     .create_schema(false)
    ///     .connect()
    ///     .await?;
    /// let locks = LockClient::new(backend);
    ///
    /// let pool = sqlx::MySqlPool::connect("mysql://app@127.0.0.1/app").await?;
    /// let locks = LockClient::new(MySqlBackend::from_pool(pool).await?);
    /// # Ok(()) }
    /// ```
    pub fn builder_from_pool(pool: Pool<D>) -> SqlBackendBuilder<D> {
        SqlBackendBuilder::new(Source::Pool(pool))
    }

    /// The migration creating the default lock table (`lock_core_locks`) and its fencing
    /// counter: the first statements of [`schema_statements`](Self::schema_statements), as the
    /// file `lock-core/migrations/{postgres,mysql}/0001_lock_core.sql`. For `sqlx migrate` or
    /// any other migration tool, followed by
    /// [`OPERATOR_MIGRATION`](Self::OPERATOR_MIGRATION); then connect with
    /// [`create_schema(false)`](SqlBackendBuilder::create_schema).
    pub const MIGRATION: &'static str = D::MIGRATION;

    /// The migration that gives the default lock table the operator's view (after
    /// [`MIGRATION`](Self::MIGRATION)): a `label` column (and on PostgreSQL `label_owner`, whose
    /// label it is) beside each lease, and the audit table of forced releases
    /// (`lock_core_locks_audit`). The file
    /// `lock-core/migrations/{postgres,mysql}/0003_lock_core_operator.sql`; idempotent, and it
    /// upgrades a table made by an earlier version in place (the columns are added only where
    /// missing, without a table rewrite). A backend on a table without it keeps working and
    /// stores no labels; its [`OperatorBackend`](crate::backend::OperatorBackend) calls say
    /// what to run.
    pub const OPERATOR_MIGRATION: &'static str = <D as OperatorDialect>::OPERATOR_MIGRATION;

    /// The statements that create the lock table `table`, its fencing counter
    /// (`<table>_fence`: a sequence on PostgreSQL, a table of per-name counters on MySQL), its
    /// label column and its audit table (`<table>_audit`), for migrations:
    /// [`MIGRATION`](Self::MIGRATION)'s then
    /// [`OPERATOR_MIGRATION`](Self::OPERATOR_MIGRATION)'s, with `table` for the default table's
    /// name. All are idempotent (`IF NOT EXISTS`, or a look at the catalog first). Run them in
    /// order on one connection (MySQL's column is added through a session variable and a
    /// prepared statement). On MySQL a counter table made by an earlier version lacks
    /// `touched_at`; [`create_schema`](Self::create_schema) adds it. MySQL keys are
    /// `VARBINARY`, so names compare byte for byte (no case folding, no trailing-space rules).
    #[must_use]
    pub fn schema_statements(table: &str) -> Vec<String> {
        [D::MIGRATION, <D as OperatorDialect>::OPERATOR_MIGRATION]
            .into_iter()
            .flat_map(split_statements)
            .map(|statement| statement.replace(DEFAULT_TABLE, table))
            .collect()
    }

    /// Creates the table and counter if missing (what `connect` does unless
    /// [`create_schema(false)`](SqlBackendBuilder::create_schema) was set).
    pub async fn create_schema(&self) -> Result<()> {
        D::create_schema(&self.shared.pool, &self.shared.config.table).await
    }

    /// The [circuit breaker](crate::breaker) of this backend's pool: its calls (and, on
    /// PostgreSQL, the `LISTEN` connection's reconnects) go through it.
    #[must_use]
    pub fn breaker(&self) -> &Breaker {
        &self.shared.breaker
    }

    /// The connection pool, e.g. to write to a fenced resource on the same database.
    #[must_use]
    pub fn pool(&self) -> &Pool<D> {
        &self.shared.pool
    }

    /// The lock table's name.
    #[must_use]
    pub fn table(&self) -> &str {
        &self.shared.config.table
    }

    /// How many tasks of this backend (and, on PostgreSQL, its advisory twin) wait for the
    /// lock `full_key` (`namespace:key`). The database keeps no waiter entries; this is the
    /// local count.
    #[must_use]
    pub fn waiters(&self, full_key: &str) -> usize {
        self.shared.hub.count(&storage_key(full_key))
    }

    /// Deletes now the rows of locks whose lease ended (and, on MySQL, the counters of names
    /// not granted) more than [`ROW_RETENTION`] ago (the backend also does this every
    /// [`SWEEP_EVERY`]); returns how many rows.
    pub async fn sweep_expired(&self) -> Result<u64> {
        sweep::sweep_rows(self.shared.clone()).await
    }
}

impl<D: Dialect> std::fmt::Debug for SqlBackend<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlBackend")
            .field("dialect", &D::BACKEND)
            .field("table", &self.shared.config.table)
            .finish_non_exhaustive()
    }
}

/// The statements of a migration: its comment lines (`--`) dropped, split at the `;` that
/// are outside quotes ('...', "...") and dollar quotes (`$$...$$`, a PostgreSQL `DO` block's
/// body), each trimmed.
fn split_statements(migration: &str) -> Vec<String> {
    let code: String = migration
        .lines()
        .filter(|line| !line.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut statements = Vec::new();
    let mut current = String::new();
    let mut quote: Option<&str> = None;
    let mut rest = code.as_str();
    while let Some(c) = rest.chars().next() {
        let token = if rest.starts_with("$$") {
            "$$"
        } else {
            &rest[..c.len_utf8()]
        };
        match quote {
            Some(open) if open == token => quote = None,
            Some(_) => {}
            None if matches!(token, "$$" | "'" | "\"") => quote = Some(token),
            None if token == ";" => {
                statements.push(std::mem::take(&mut current));
                rest = &rest[1..];
                continue;
            }
            None => {}
        }
        current.push_str(token);
        rest = &rest[token.len()..];
    }
    statements.push(current);
    statements
        .into_iter()
        .map(|statement| statement.trim().to_owned())
        .filter(|statement| !statement.is_empty())
        .collect()
}

/// The primary key a lock named `full_key` is stored under: the name itself, or its SHA-256
/// (`sha256:<64 hex digits>`) when it is long or could be mistaken for a hash.
#[must_use]
pub fn storage_key(full_key: &str) -> String {
    if full_key.len() <= MAX_STORED_KEY && !full_key.starts_with(HASH_PREFIX) {
        return full_key.to_owned();
    }
    let digest = Sha256::digest(full_key.as_bytes());
    let mut key = String::with_capacity(HASH_PREFIX.len() + 64);
    key.push_str(HASH_PREFIX);
    crate::hex::push(&mut key, &digest);
    key
}

/// `Ok` unless `required` (the URL requires TLS) in a build whose sqlx speaks no TLS: then
/// the URL's `setting` asks for what only the feature `feature` brings.
pub(crate) fn tls_available(required: bool, feature: &str, setting: &str) -> Result<()> {
    if required && !cfg!(any(feature = "postgres-tls", feature = "mysql-tls")) {
        return Err(crate::LockError::InvalidConfig(format!(
            "the URL's {setting} requires TLS, which this build cannot speak: enable \
             lock-core's `{feature}` feature"
        )));
    }
    Ok(())
}

/// Who holds a row, for operators: this machine's host name (cut to 255 bytes) and pid.
pub(crate) fn owner_host() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        let host = ["/proc/sys/kernel/hostname", "/etc/hostname"]
            .iter()
            .find_map(|path| std::fs::read_to_string(path).ok())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_default();
        let host = host.trim();
        let mut end = host.len().min(255);
        while !host.is_char_boundary(end) {
            end -= 1;
        }
        host[..end].to_owned()
    })
}

pub(crate) fn owner_pid() -> i32 {
    i32::try_from(std::process::id()).unwrap_or(i32::MAX)
}

/// Microseconds of `duration` for `INTERVAL` arithmetic, at least 1.
pub(crate) fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros())
        .unwrap_or(i64::MAX)
        .max(1)
}

/// A remaining lease in microseconds (as the database computed it), if positive.
pub(crate) fn remaining(micros: Option<i64>) -> Option<Duration> {
    micros
        .and_then(|us| u64::try_from(us).ok())
        .map(Duration::from_micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A migration's statements, whitespace runs collapsed.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    fn normalized(statements: &[String]) -> Vec<String> {
        statements
            .iter()
            .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    }

    /// The migrations run as `create_schema` runs them (the lock table's, then the
    /// operator's), and another table's statements name that table throughout.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    fn migration_is_what_create_schema_runs<D: Dialect>(counter: &str, operator: &[&str]) {
        let statements = SqlBackend::<D>::schema_statements(DEFAULT_TABLE);
        let mut shipped = split_statements(SqlBackend::<D>::MIGRATION);
        assert_eq!(shipped.len(), 2);
        shipped.extend(split_statements(SqlBackend::<D>::OPERATOR_MIGRATION));
        assert_eq!(normalized(&shipped), normalized(&statements));
        let other = SqlBackend::<D>::schema_statements("app_locks");
        assert_eq!(other.len(), 2 + operator.len(), "{other:#?}");
        assert!(other[0].starts_with("CREATE TABLE IF NOT EXISTS app_locks ("));
        assert!(other[1].starts_with(counter), "{}", other[1]);
        for (statement, start) in other[2..].iter().zip(operator) {
            assert!(statement.starts_with(start), "{statement}");
        }
        assert!(other.iter().any(|s| s.contains("app_locks_audit (")));
        assert!(other
            .iter()
            .all(|s| !s.contains(DEFAULT_TABLE) && !s.contains("--")));
    }

    #[test]
    fn statements_split_outside_quotes_and_dollar_quotes() {
        let migration = "-- a comment; with a semicolon\nCREATE x ('a;b', \"c;d\");\n\
                         DO $$ BEGIN x; y; END $$;\n  SET @v = 'it''s; fine';;\nLAST";
        assert_eq!(
            split_statements(migration),
            [
                "CREATE x ('a;b', \"c;d\")",
                "DO $$ BEGIN x; y; END $$",
                "SET @v = 'it''s; fine'",
                "LAST"
            ]
        );
    }

    /// A URL that requires TLS is refused as a configuration error before any connection in a
    /// build whose sqlx speaks no TLS, naming the feature; with TLS it is tried (nothing
    /// listens on port 1: unavailable).
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    async fn a_url_requiring_tls<D: Dialect>(url: &str, feature: &str) {
        let error = SqlBackend::<D>::builder(url)
            .response_timeout(Duration::from_millis(500))
            .connect()
            .await
            .expect_err("nothing listens on port 1");
        if cfg!(any(feature = "postgres-tls", feature = "mysql-tls")) {
            assert!(
                matches!(error, crate::LockError::Unavailable { .. }),
                "{error:?}"
            );
        } else {
            assert!(
                matches!(&error, crate::LockError::InvalidConfig(why) if why.contains(feature)),
                "{error:?}"
            );
        }
    }

    #[cfg(feature = "postgres")]
    #[tokio::test]
    async fn postgres_url_requiring_tls_needs_the_feature() {
        for mode in ["require", "verify-ca", "verify-full"] {
            let url = format!("postgres://app@127.0.0.1:1/app?sslmode={mode}");
            a_url_requiring_tls::<sqlx::Postgres>(&url, "postgres-tls").await;
        }
    }

    #[cfg(feature = "mysql")]
    #[tokio::test]
    async fn mysql_url_requiring_tls_needs_the_feature() {
        for mode in ["REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"] {
            let url = format!("mysql://app@127.0.0.1:1/app?ssl-mode={mode}");
            a_url_requiring_tls::<sqlx::MySql>(&url, "mysql-tls").await;
        }
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn postgres_migration_is_what_create_schema_runs() {
        migration_is_what_create_schema_runs::<sqlx::Postgres>(
            "CREATE SEQUENCE IF NOT EXISTS app_locks_fence AS bigint",
            &[
                "DO $$",
                "CREATE TABLE IF NOT EXISTS app_locks_audit (",
                "CREATE INDEX IF NOT EXISTS app_locks_audit_key ON app_locks_audit",
                "CREATE INDEX IF NOT EXISTS app_locks_audit_exp ON app_locks_audit",
            ],
        );
    }

    #[cfg(feature = "mysql")]
    #[test]
    fn mysql_migration_is_what_create_schema_runs() {
        migration_is_what_create_schema_runs::<sqlx::MySql>(
            "CREATE TABLE IF NOT EXISTS app_locks_fence (",
            &[
                "SET @lock_core_ddl = IF(",
                "PREPARE lock_core_ddl FROM @lock_core_ddl",
                "EXECUTE lock_core_ddl",
                "DEALLOCATE PREPARE lock_core_ddl",
                "CREATE TABLE IF NOT EXISTS app_locks_audit (",
            ],
        );
    }

    #[test]
    fn short_names_are_kept_and_long_or_hash_like_ones_hashed() {
        assert_eq!(storage_key("ns:order:1"), "ns:order:1");
        let long = format!("ns:{}", "k".repeat(200));
        let hashed = storage_key(&long);
        assert!(hashed.starts_with(HASH_PREFIX) && hashed.len() == HASH_PREFIX.len() + 64);
        assert_eq!(storage_key(&long), hashed, "stable");
        assert_ne!(
            storage_key(&hashed),
            hashed,
            "a name that looks like a hash is hashed"
        );
    }
}
