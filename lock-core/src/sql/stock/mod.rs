//! Stock in PostgreSQL and MySQL: [`SqlStock`], its tables, strategies and guarantees.

mod dialect;
mod settle;
mod statements;
mod strategy;
mod take;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sqlx::pool::PoolOptions;
use sqlx::Pool;

pub(crate) use self::dialect::Run;
use self::statements::Statements;
pub use self::strategy::StockStrategy;
use crate::sql::{to_lock_error, validate_table, Dialect};
use crate::{LockError, Result};

/// The default table prefix: the tables `lock_core_stock_levels` and `lock_core_stock_orders`.
pub const DEFAULT_PREFIX: &str = "lock_core_stock";

/// How many operations between two sweeps of the records past their retention (a sweep also
/// runs at the first operation a sixteenth of the retention, an hour at most, after the last).
pub const SWEEP_EVERY_CALLS: u64 = 4096;

/// The longest time between two sweeps while operations run.
const SWEEP_INTERVAL_MAX: Duration = Duration::from_secs(60 * 60);

/// Tries of one operation, by default: a lost compare-and-set (optimistic) or a transaction the
/// database aborted (deadlock, serialization) is run again up to this many times in all.
const DEFAULT_ATTEMPTS: u32 = 64;

/// Stock in PostgreSQL (feature `postgres`) or MySQL / MariaDB (feature `mysql`), `SqlStock<D>`
/// for `D` = `sqlx::Postgres` ([`PostgresStock`]) or `sqlx::MySql` ([`MySqlStock`]): the same
/// operations and guarantees as the memory and Redis stores, on two tables, with a choice of
/// how units are taken ([`StockStrategy`]).
///
/// ```no_run
/// # #[cfg(feature = "postgres")]
/// # async fn example() -> Result<(), lock_core::LockError> {
/// use lock_core::stock::Stock;
/// use lock_core::sql::{PostgresStock, StockStrategy};
///
/// let store = PostgresStock::builder("postgres://app@127.0.0.1/app")
///     .strategy(StockStrategy::ForUpdate)
///     .connect()
///     .await?;
/// let stock = Stock::builder(store).namespace("shop").build()?;
/// stock.restock("sku-1", 100, "delivery-1").await?; // a retry of delivery-1 adds nothing
/// let sale = stock.deduct("sku-1", 1, "order-42").await?; // a retry of order-42 deducts nothing
/// assert!(stock.audit("sku-1").await?.is_balanced());
/// # let _ = sale; Ok(()) }
/// ```
///
/// # The tables
/// `<prefix>_levels` (one row per SKU restocked) and `<prefix>_orders` (one row per order id
/// and kind, primary key `(sku, kind, order_id)`), default prefix [`DEFAULT_PREFIX`]. The
/// store creates them on first use unless [`SqlStockBuilder::create_schema`] says no; the
/// statements are [`SqlStock::schema_statements`], for your own migrations. The levels row's
/// `CHECK (available >= 0 ...)` makes a negative stock impossible whatever the code does.
///
/// # Guarantees
/// - Every deduction and reservation records its order in the transaction that takes its
///   units, every restock its restock id in the transaction that adds them: a retried order
///   (or restock) id finds its first outcome (the primary key refuses a second record), a
///   crash before the commit takes (or adds) nothing and records nothing.
/// - Reservations expire by the database's clock: a confirm after `expires_at` is refused and
///   returns the units; expired reservations go back to stock when the SKU is next confirmed,
///   cancelled or read, and before a deduction or reservation would be refused for want of
///   units (an order's first outcome is final). Until then a sale's `remaining` does not count
///   them.
/// - Each order's (and restock's) row is kept for the [retention](SqlStockBuilder::retention)
///   ([`DEFAULT_RETENTION`](crate::stock::DEFAULT_RETENTION), a week, by default) from the moment it
///   is final (a deduction or a refused reservation when recorded; a reservation when
///   confirmed, cancelled or run out, never while it holds units): a retry inside that window
///   gets the first outcome. A sweep removes the rows past it, in batches of 1,000, in the
///   background every [`SWEEP_EVERY_CALLS`] operations and at the first operation a sixteenth
///   of the retention (an hour at most) after the last sweep ([`SqlStock::sweep`] runs one
///   now). The rows of SKUs never restocked (orders naming SKUs that do not exist) go
///   [`UNKNOWN_SKU_RETENTION`](crate::stock::UNKNOWN_SKU_RETENTION) after they were written when the
///   retention is longer.
/// - A transaction the database aborts as a deadlock or serialization victim is run again
///   (up to [`SqlStockBuilder::attempts`] times); the count is in [`SqlStock::stats`].
///
/// Cheap to clone: clones share the pool and the counters.
pub struct SqlStock<D: Dialect> {
    shared: Arc<Shared<D>>,
}

impl<D: Dialect> Clone for SqlStock<D> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

/// Stock in PostgreSQL.
#[cfg(feature = "postgres")]
pub type PostgresStock = SqlStock<sqlx::Postgres>;

/// Stock in MySQL or MariaDB.
#[cfg(feature = "mysql")]
pub type MySqlStock = SqlStock<sqlx::MySql>;

struct Shared<D: Dialect> {
    pool: Pool<D>,
    statements: Statements,
    strategy: StockStrategy,
    attempts: u32,
    retention: Duration,
    /// Since when `last_sweep_ms` counts.
    started: std::time::Instant,
    /// When the last sweep started, ms after `started`.
    last_sweep_ms: AtomicU64,
    calls: AtomicU64,
    retries: AtomicU64,
    conflicts: AtomicU64,
}

/// What a [`SqlStock`] has had to do again, since it was built.
///
/// ```
/// use lock_core::sql::SqlStockStats;
///
/// assert_eq!(SqlStockStats::default().retries, 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqlStockStats {
    /// Optimistic tries lost to another buyer's update (read again and retried).
    pub retries: u64,
    /// Transactions the database aborted as deadlock or serialization victims (run again).
    pub conflicts: u64,
}

/// Settings of a [`SqlStock`] before it connects.
pub struct SqlStockBuilder<D: Dialect> {
    source: Source<D>,
    prefix: String,
    strategy: StockStrategy,
    create_schema: bool,
    attempts: u32,
    max_connections: u32,
    retention: Duration,
}

enum Source<D: Dialect> {
    Url(String),
    Pool(Pool<D>),
}

impl<D: Dialect> SqlStock<D> {
    /// A builder for stock in the database at `url`.
    ///
    /// ```no_run
    /// # #[cfg(feature = "mysql")]
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// use lock_core::sql::{MySqlStock, StockStrategy};
    ///
    /// let store = MySqlStock::builder("mysql://app@127.0.0.1/app")
    ///     .strategy(StockStrategy::ForUpdate)
    ///     .connect()
    ///     .await?;
    /// # let _ = store; Ok(()) }
    /// ```
    #[must_use]
    pub fn builder(url: &str) -> SqlStockBuilder<D> {
        SqlStockBuilder::new(Source::Url(url.to_owned()))
    }

    /// A builder for stock on a pool you already have (it keeps its own size and timeouts).
    ///
    /// ```no_run
    /// # #[cfg(feature = "postgres")]
    /// # async fn example(pool: sqlx::PgPool) -> Result<(), lock_core::LockError> {
    /// use lock_core::sql::PostgresStock;
    ///
    /// let store = PostgresStock::builder_from_pool(pool)
    ///     .table_prefix("shop_stock")
    ///     .connect()
    ///     .await?;
    /// # let _ = store; Ok(()) }
    /// ```
    #[must_use]
    pub fn builder_from_pool(pool: Pool<D>) -> SqlStockBuilder<D> {
        SqlStockBuilder::new(Source::Pool(pool))
    }

    /// Stock in the database at `url`, default settings (conditional updates).
    ///
    /// ```no_run
    /// # #[cfg(feature = "postgres")]
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// let store = lock_core::sql::PostgresStock::connect("postgres://app@127.0.0.1/app").await?;
    /// # let _ = store; Ok(()) }
    /// ```
    pub async fn connect(url: &str) -> Result<Self> {
        Self::builder(url).connect().await
    }

    /// Stock on a pool you already have, default settings (see
    /// [`builder_from_pool`](Self::builder_from_pool)).
    ///
    /// ```no_run
    /// # #[cfg(feature = "postgres")]
    /// # async fn example(pool: sqlx::PgPool) -> Result<(), lock_core::LockError> {
    /// let store = lock_core::sql::PostgresStock::from_pool(pool).await?;
    /// # let _ = store; Ok(()) }
    /// ```
    pub async fn from_pool(pool: Pool<D>) -> Result<Self> {
        Self::builder_from_pool(pool).connect().await
    }

    /// The migration creating the tables for the default prefix ([`DEFAULT_PREFIX`]), the
    /// text of `lock-core/migrations/<database>/0002_lock_core_stock.sql`: for `sqlx migrate`
    /// or any other migration tool (then connect with
    /// [`create_schema(false)`](SqlStockBuilder::create_schema)).
    pub const MIGRATION: &'static str = D::STOCK_MIGRATION;

    /// The statements creating the tables under `prefix` (a plain identifier), for your own
    /// migrations.
    ///
    /// ```
    /// # #[cfg(feature = "postgres")] {
    /// use lock_core::sql::PostgresStock;
    ///
    /// let statements = PostgresStock::schema_statements("shop_stock")?;
    /// assert!(statements[0].starts_with("CREATE TABLE IF NOT EXISTS shop_stock_levels"));
    /// assert!(PostgresStock::schema_statements("shop; DROP TABLE x").is_err());
    /// # }
    /// # Ok::<(), lock_core::LockError>(())
    /// ```
    pub fn schema_statements(prefix: &str) -> Result<Vec<String>> {
        validate_table(&format!("{prefix}_levels"))?;
        Ok(dialect::schema::<D>(prefix))
    }

    /// How units are taken.
    #[must_use]
    pub fn strategy(&self) -> StockStrategy {
        self.shared.strategy
    }

    /// How long each order's row is kept once final.
    #[must_use]
    pub fn retention(&self) -> Duration {
        self.shared.retention
    }

    /// Retries and database conflicts so far.
    #[must_use]
    pub fn stats(&self) -> SqlStockStats {
        SqlStockStats {
            retries: self.shared.retries.load(Ordering::Relaxed),
            conflicts: self.shared.conflicts.load(Ordering::Relaxed),
        }
    }

    /// The pool the store runs on.
    #[must_use]
    pub fn pool(&self) -> &Pool<D> {
        &self.shared.pool
    }

    fn error(error: sqlx::Error) -> LockError {
        to_lock_error(D::BACKEND, error)
    }
}

impl<D: Dialect> SqlStockBuilder<D> {
    fn new(source: Source<D>) -> Self {
        Self {
            source,
            prefix: DEFAULT_PREFIX.to_owned(),
            strategy: StockStrategy::default(),
            create_schema: true,
            attempts: DEFAULT_ATTEMPTS,
            max_connections: 16,
            retention: crate::stock::DEFAULT_RETENTION,
        }
    }

    /// The tables' prefix (a plain identifier; default [`DEFAULT_PREFIX`]).
    #[must_use]
    pub fn table_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How units are taken (default [`StockStrategy::Conditional`]).
    #[must_use]
    pub fn strategy(mut self, strategy: StockStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Whether to create the tables when missing (default true).
    #[must_use]
    pub fn create_schema(mut self, create: bool) -> Self {
        self.create_schema = create;
        self
    }

    /// Tries of one operation before it gives up: lost optimistic compare-and-sets end in
    /// [`LockError::Busy`], repeated deadlocks in the database's error (default 64, at least 1).
    #[must_use]
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }

    /// How long each order's row is kept once final (default
    /// [`DEFAULT_RETENTION`](crate::stock::DEFAULT_RETENTION), a week): the window in which a retry is
    /// recognised (see [`SqlStock`]'s guarantees). `connect` refuses one outside
    /// 1 ms..=[`MAX_RETENTION`](crate::stock::MAX_RETENTION).
    #[must_use]
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// The pool's size when the store opens it (default 16).
    #[must_use]
    pub fn max_connections(mut self, max: u32) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Opens the pool (unless given one) and creates the tables (unless told not to).
    pub async fn connect(self) -> Result<SqlStock<D>> {
        validate_table(&format!("{}_levels", self.prefix))?;
        crate::stock::check_retention(self.retention)?;
        let pool = match self.source {
            Source::Pool(pool) => pool,
            Source::Url(url) => PoolOptions::<D>::new()
                .max_connections(self.max_connections)
                .acquire_timeout(Duration::from_secs(10))
                .connect(&url)
                .await
                .map_err(SqlStock::<D>::error)?,
        };
        let stock = SqlStock {
            shared: Arc::new(Shared {
                statements: Statements::new::<D>(&self.prefix),
                pool,
                strategy: self.strategy,
                attempts: self.attempts,
                retention: self.retention,
                started: std::time::Instant::now(),
                last_sweep_ms: AtomicU64::new(0),
                calls: AtomicU64::new(0),
                retries: AtomicU64::new(0),
                conflicts: AtomicU64::new(0),
            }),
        };
        if self.create_schema {
            stock.ensure_schema().await?;
        }
        Ok(stock)
    }
}
