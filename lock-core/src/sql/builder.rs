//! Settings of a SQL backend, and connecting it: open (or take) the pool, create the schema,
//! start the wake-up listener and the sweeper. The dialect does the first three its own way.

use std::sync::Arc;
use std::time::Duration;

use sqlx::pool::PoolOptions;
use sqlx::Pool;
use tokio_util::sync::CancellationToken;

use super::dialect::{Options, Wake};
use super::leases::LeaseBook;
use super::wait::Polling;
use super::{
    sweep, to_lock_error, Dialect, OperatorStatements, Shared, SqlBackend, WaiterHub, DEFAULT_TABLE,
};
use crate::backend::in_flight::InFlight;
use crate::breaker::{Breaker, BreakerOptions};
use crate::{LockError, Result};

/// Settings of a SQL backend; start from `PostgresBackend::builder` or `MySqlBackend::builder`
/// (a URL), or `builder_from_pool` (your sqlx pool).
///
/// ```no_run
/// # #[cfg(feature = "postgres")]
/// # async fn example() -> Result<(), lock_core::LockError> {
/// use std::time::Duration;
/// use lock_core::{LockClient, PostgresBackend};
///
/// let backend = PostgresBackend::builder("postgres://app@db.internal/orders")
///     .table("order_locks")      // its fencing counter is order_locks_fence
///     .create_schema(false)      // the migrations in lock-core/migrations/postgres create it
///     .response_timeout(Duration::from_secs(1))
///     .max_connections(20)
///     .connect()
///     .await?;
/// let locks = LockClient::new(backend);
/// # Ok(()) }
/// ```
#[must_use]
pub struct SqlBackendBuilder<D: Dialect> {
    source: Source<D>,
    config: SqlConfig,
    /// `None`: the dialect's (see [`Polling::new`]).
    poll_cap: Option<Duration>,
    create_schema: bool,
}

#[cfg(feature = "postgres")]
/// Settings of a [`PostgresBackend`](super::PostgresBackend).
pub type PostgresBackendBuilder = SqlBackendBuilder<sqlx::Postgres>;
#[cfg(feature = "mysql")]
/// Settings of a [`MySqlBackend`](super::MySqlBackend).
pub type MySqlBackendBuilder = SqlBackendBuilder<sqlx::MySql>;

/// Where a builder's connections come from.
pub(crate) enum Source<D: Dialect> {
    Url(String),
    Pool(Pool<D>),
}

#[derive(Clone, Debug)]
pub(crate) struct SqlConfig {
    pub(crate) table: String,
    pub(crate) response_timeout: Duration,
    pub(crate) attempts: u32,
    pub(crate) max_connections: u32,
    pub(crate) breaker: BreakerOptions,
}

impl<D: Dialect> SqlBackendBuilder<D> {
    pub(crate) fn new(source: Source<D>) -> Self {
        Self {
            source,
            config: SqlConfig {
                table: DEFAULT_TABLE.to_owned(),
                response_timeout: Duration::from_secs(2),
                attempts: 3,
                max_connections: 10,
                breaker: BreakerOptions::new(),
            },
            poll_cap: None,
            create_schema: true,
        }
    }

    /// The lock table (default `lock_core_locks`); its counter is `<table>_fence`. A plain
    /// identifier: ASCII letters, digits and `_`, not starting with a digit, at most 48 bytes.
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.config.table = table.into();
        self
    }

    /// Whether `connect` creates the table and counter when missing (default true; it runs
    /// the backend's `schema_statements`, which are idempotent, and upgrade a table made by
    /// an earlier version). Turn it off when your migrations create them: the backend's
    /// `MIGRATION` and `OPERATOR_MIGRATION` consts hold the statements for the default table,
    /// also shipped as `lock-core/migrations/<database>/0001_lock_core.sql` and
    /// `0003_lock_core_operator.sql`. Without the second, the backend works as before but
    /// stores no holder labels and has no operator's view: `connect` looks at the table to
    /// know (one query).
    pub fn create_schema(mut self, create: bool) -> Self {
        self.create_schema = create;
        self
    }

    /// How long one statement (or a wait for a pooled connection) may take before it counts
    /// as lost (default 2 s).
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.config.response_timeout = timeout;
        self
    }

    /// The longest a waiter goes without re-checking the lock (PostgreSQL default 1 s, MySQL
    /// 100 ms). A waiter also re-checks when the holder's lease ends.
    pub fn poll_cap(mut self, cap: Duration) -> Self {
        self.poll_cap = Some(cap);
        self
    }

    /// How many times a statement whose reply was lost is sent again (default 3 in all).
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.config.attempts = attempts;
        self
    }

    /// The connection pool's size (default 10). Not used with `builder_from_pool`: the pool
    /// you pass keeps its own size and acquire timeout.
    pub fn max_connections(mut self, max: u32) -> Self {
        self.config.max_connections = max;
        self
    }

    /// When the pool's [circuit breaker](crate::breaker) opens and how it probes (default
    /// [`BreakerOptions::new`]: 3 failures in a row, a 0.5–5 s cool-down).
    /// `BreakerOptions::new().fail_fast(false)` makes every call wait for its own timeouts
    /// again, with the breaker only reporting.
    pub fn breaker(mut self, options: BreakerOptions) -> Self {
        self.config.breaker = options;
        self
    }

    /// Checks the settings, opens (or takes) the pool, creates the schema (unless turned off)
    /// and starts listening for wake-ups (PostgreSQL) and sweeping old rows.
    pub async fn connect(self) -> Result<SqlBackend<D>> {
        let config = self.config;
        validate_table(&config.table)?;
        config.breaker.validate()?;
        if config.attempts == 0
            || config.response_timeout.is_zero()
            || self.poll_cap.is_some_and(|cap| cap.is_zero())
        {
            return Err(LockError::InvalidConfig(
                "SQL attempts, response timeout and poll cap must be positive".into(),
            ));
        }
        if config.max_connections == 0 {
            return Err(LockError::InvalidConfig(
                "SQL max_connections must be positive".into(),
            ));
        }
        let pool = match self.source {
            Source::Url(url) => open(&url, &config).await?,
            Source::Pool(pool) => pool,
        };
        let operator = if self.create_schema {
            D::create_schema(&pool, &config.table).await?;
            true
        } else {
            // A table created by the application's migrations may predate the operator's.
            D::has_operator_schema(&pool, &config.table)
                .await
                .map_err(|e| to_lock_error(D::BACKEND, e))?
        };
        if !operator {
            tracing::info!(
                backend = D::BACKEND,
                table = %config.table,
                "the lock table has no operator's schema (OPERATOR_MIGRATION): holder labels \
                 are not stored and the operator's view is off"
            );
        }
        let hub = Arc::new(WaiterHub::default());
        let leases = Arc::new(LeaseBook::default());
        let breaker = Breaker::new(D::BACKEND, config.breaker);
        let stop = CancellationToken::new();
        let wake = Wake {
            hub: hub.clone(),
            leases: leases.clone(),
            revoked: super::leases::revoke_channel(&config.table),
            breaker: breaker.clone(),
            stop: stop.clone(),
        };
        let notifies = D::listen(&pool, &config.table, wake).await?;
        let polling = Polling::new(notifies, self.poll_cap);
        let (sql, grant) = D::statements(&config.table, operator);
        let operator_sql = OperatorStatements::new::<D>(&config.table);
        let force = D::force_statements(&config.table);
        let backend = SqlBackend {
            shared: Arc::new(Shared {
                pool,
                hub,
                in_flight: InFlight::default(),
                config,
                breaker,
                notifies,
                polling,
                sql,
                grant: Arc::new(grant),
                operator,
                operator_sql,
                force: Arc::new(force),
                leases,
                _stop_tasks: stop.clone().drop_guard(),
            }),
        };
        sweep::spawn_sweeper(
            D::BACKEND,
            "rows of locks unused for a day",
            stop,
            Arc::downgrade(&backend.shared),
            sweep::sweep_rows,
        );
        Ok(backend)
    }
}

impl<D: Dialect> std::fmt::Debug for SqlBackendBuilder<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a password: leave it out.
        let source = match self.source {
            Source::Url(_) => "url",
            Source::Pool(_) => "pool",
        };
        f.debug_struct("SqlBackendBuilder")
            .field("source", &source)
            .field("config", &self.config)
            .field("poll_cap", &self.poll_cap)
            .field("create_schema", &self.create_schema)
            .finish_non_exhaustive()
    }
}

/// Opens a pool for `url`, with the backend's size and acquire timeout and the dialect's own
/// settings.
async fn open<D: Dialect>(url: &str, config: &SqlConfig) -> Result<Pool<D>> {
    let options: Options<D> = url.parse().map_err(|e| {
        LockError::InvalidConfig(format!("{} URL: {e}", <D as sqlx::Database>::NAME))
    })?;
    D::check_options(&options)?;
    let pool = PoolOptions::<D>::new()
        .max_connections(config.max_connections)
        .acquire_timeout(config.response_timeout);
    let (pool, options) = D::connecting(pool, options);
    pool.connect_with(options)
        .await
        .map_err(|e| to_lock_error(D::BACKEND, e))
}

/// Checks that `table` is a plain identifier (it is put into statements as it is).
pub(crate) fn validate_table(table: &str) -> Result<()> {
    let plain = table.len() <= 48
        && table
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        Ok(())
    } else {
        Err(LockError::InvalidConfig(format!(
            "SQL table name {table:?} must be a plain identifier of at most 48 bytes"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_must_be_plain_identifiers() {
        assert!(validate_table("lock_core_locks").is_ok());
        assert!(validate_table("_t1").is_ok());
        for bad in ["", "1t", "t;drop", "t t", "\"t\"", &"t".repeat(49)] {
            assert!(validate_table(bad).is_err(), "{bad:?}");
        }
    }
}
