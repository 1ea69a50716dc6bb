//! The settings of a [`PostgresResultStore`].

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::{PostgresResultStore, STORE};
use crate::breaker::{Breaker, BreakerOptions};
use crate::sql::{to_lock_error, validate_table};
use crate::{LockError, Result};

/// Where the store's connections come from.
pub(super) enum Source {
    Url(String),
    Pool(PgPool),
}

/// Settings of a [`PostgresResultStore`]; start from [`PostgresResultStore::builder`] or
/// [`PostgresResultStore::builder_from_pool`].
///
/// ```no_run
/// use std::time::Duration;
/// use lock_core::sql::PostgresResultStore;
///
/// # async fn example() -> Result<(), lock_core::LockError> {
/// let store = PostgresResultStore::builder("postgres://app@127.0.0.1/app")
///     .table("shop_results")
///     .max_connections(4)
///     .response_timeout(Duration::from_secs(1))
///     .connect()
///     .await?;
/// # let _ = store; Ok(()) }
/// ```
#[must_use]
pub struct PostgresResultStoreBuilder {
    source: Source,
    table: String,
    create_table: bool,
    max_connections: u32,
    response_timeout: Duration,
    breaker: Option<Breaker>,
}

impl PostgresResultStoreBuilder {
    pub(super) fn new(source: Source) -> Self {
        Self {
            source,
            table: PostgresResultStore::DEFAULT_TABLE.to_owned(),
            create_table: true,
            max_connections: 10,
            response_timeout: Duration::from_secs(2),
            breaker: None,
        }
    }

    /// The [circuit breaker](crate::breaker) to send statements through. Give a store on the
    /// lock backend's pool the backend's breaker (`backend.breaker().clone()`), so that one
    /// outage opens one breaker; without it the store has one of its own (a sqlx pool has no
    /// place to keep one, and lock-core keeps no process-wide table of pools).
    ///
    /// ```no_run
    /// use lock_core::sql::PostgresResultStore;
    /// use lock_core::PostgresBackend;
    ///
    /// # async fn example(pool: sqlx::PgPool) -> Result<(), lock_core::LockError> {
    /// let backend = PostgresBackend::from_pool(pool.clone()).await?;
    /// let store = PostgresResultStore::builder_from_pool(pool)
    ///     .breaker(backend.breaker().clone())
    ///     .connect()
    ///     .await?;
    /// # let _ = store; Ok(()) }
    /// ```
    pub fn breaker(mut self, breaker: Breaker) -> Self {
        self.breaker = Some(breaker);
        self
    }

    /// The result table (default `lock_core_results`), also the name of the channel pushes go
    /// on. A plain identifier: ASCII letters, digits and `_`, not starting with a digit, at
    /// most 48 bytes.
    ///
    /// ```
    /// # let builder = lock_core::sql::PostgresResultStore::builder("postgres://app@127.0.0.1/app");
    /// let builder = builder.table("shop_results");
    /// # let _ = builder;
    /// ```
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.table = table.into();
        self
    }

    /// Whether `connect` creates the table when it is missing (default true). Turn it off when
    /// migrations create it (see [`PostgresResultStore::migration`]).
    ///
    /// ```
    /// # let builder = lock_core::sql::PostgresResultStore::builder("postgres://app@127.0.0.1/app");
    /// let builder = builder.create_table(false);
    /// # let _ = builder;
    /// ```
    pub fn create_table(mut self, create: bool) -> Self {
        self.create_table = create;
        self
    }

    /// The size of the pool a store connecting to a URL opens (default 10), plus one
    /// connection for listening. A store on a given pool leaves its size as it is.
    ///
    /// ```
    /// # let builder = lock_core::sql::PostgresResultStore::builder("postgres://app@127.0.0.1/app");
    /// let builder = builder.max_connections(4);
    /// # let _ = builder;
    /// ```
    pub fn max_connections(mut self, max: u32) -> Self {
        self.max_connections = max;
        self
    }

    /// How long one statement (with the wait for a pooled connection) may take before it
    /// fails with [`LockError::Timeout`] (default 2 s). A put that timed out may still have
    /// been stored.
    ///
    /// ```
    /// # let builder = lock_core::sql::PostgresResultStore::builder("postgres://app@127.0.0.1/app");
    /// let builder = builder.response_timeout(std::time::Duration::from_millis(500));
    /// # let _ = builder;
    /// ```
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// Checks the settings, connects (or takes the given pool), creates the table unless
    /// turned off, and starts listening for pushes.
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// let store = lock_core::sql::PostgresResultStore::builder("postgres://app@127.0.0.1/app")
    ///     .connect()
    ///     .await?;
    /// # let _ = store; Ok(()) }
    /// ```
    pub async fn connect(self) -> Result<PostgresResultStore> {
        validate_table(&self.table)?;
        if self.max_connections == 0 || self.response_timeout.is_zero() {
            return Err(LockError::InvalidConfig(
                "the PostgreSQL result store's max_connections and response timeout must be \
                 positive"
                    .into(),
            ));
        }
        let pool = match self.source {
            Source::Pool(pool) => pool,
            Source::Url(url) => {
                let options: PgConnectOptions = url
                    .parse()
                    .map_err(|e| LockError::InvalidConfig(format!("PostgreSQL URL: {e}")))?;
                PgPoolOptions::new()
                    // One more than asked for: the listening connection lives in the pool.
                    .max_connections(self.max_connections + 1)
                    .acquire_timeout(self.response_timeout)
                    .connect_with(options.application_name("lock-core"))
                    .await
                    .map_err(|e| to_lock_error(STORE, e))?
            }
        };
        let breaker = self
            .breaker
            .unwrap_or_else(|| Breaker::new(STORE, BreakerOptions::new()));
        PostgresResultStore::start(
            pool,
            self.table,
            self.create_table,
            self.response_timeout,
            breaker,
        )
        .await
    }
}

impl std::fmt::Debug for PostgresResultStoreBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a password: leave it out.
        f.debug_struct("PostgresResultStoreBuilder")
            .field("table", &self.table)
            .field("create_table", &self.create_table)
            .field("max_connections", &self.max_connections)
            .field("response_timeout", &self.response_timeout)
            .finish_non_exhaustive()
    }
}
