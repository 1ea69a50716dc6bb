//! The settings shared by the SQL backends.

use std::marker::PhantomData;
use std::time::Duration;

#[cfg(feature = "mysql")]
use super::MySqlBackend;
#[cfg(feature = "postgres")]
use super::PostgresBackend;
use super::DEFAULT_TABLE;
use crate::breaker::BreakerOptions;
use crate::{LockError, Result};

/// Settings of a SQL backend; start from `PostgresBackend::builder` or `MySqlBackend::builder`
/// (a URL), or `builder_from_pool` (your sqlx pool).
#[must_use]
pub struct SqlBackendBuilder<B> {
    source: Source,
    config: SqlConfig,
    create_schema: bool,
    backend: PhantomData<fn() -> B>,
}

#[cfg(feature = "postgres")]
/// Settings of a [`PostgresBackend`].
pub type PostgresBackendBuilder = SqlBackendBuilder<PostgresBackend>;
#[cfg(feature = "mysql")]
/// Settings of a [`MySqlBackend`].
pub type MySqlBackendBuilder = SqlBackendBuilder<MySqlBackend>;

/// Where a builder's connections come from.
pub(crate) enum Source {
    Url(String),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
    #[cfg(feature = "mysql")]
    MySql(sqlx::MySqlPool),
}

#[derive(Clone, Debug)]
pub(crate) struct SqlConfig {
    pub(crate) table: String,
    pub(crate) response_timeout: Duration,
    pub(crate) poll_first: Duration,
    pub(crate) poll_cap: Duration,
    pub(crate) attempts: u32,
    pub(crate) max_connections: u32,
    pub(crate) breaker: BreakerOptions,
}

impl<B> SqlBackendBuilder<B> {
    pub(crate) fn new(source: Source, poll_first: Duration, poll_cap: Duration) -> Self {
        Self {
            source,
            config: SqlConfig {
                table: DEFAULT_TABLE.to_owned(),
                response_timeout: Duration::from_secs(2),
                poll_first,
                poll_cap,
                attempts: 3,
                max_connections: 10,
                breaker: BreakerOptions::new(),
            },
            create_schema: true,
            backend: PhantomData,
        }
    }

    /// The lock table (default `lock_core_locks`); its counter is `<table>_fence`. A plain
    /// identifier: ASCII letters, digits and `_`, not starting with a digit, at most 48 bytes.
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.config.table = table.into();
        self
    }

    /// Whether `connect` creates the table and counter when missing (default true; it runs
    /// the backend's `schema_statements`, which are idempotent). Turn it off when your
    /// migrations create them: the backend's `MIGRATION` const holds the statements for the
    /// default table, also shipped as `lock-core/migrations/<database>/0001_lock_core.sql`.
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
        self.config.poll_cap = cap;
        self.config.poll_first = self.config.poll_first.min(cap);
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

    /// Checks the settings, before connecting.
    pub(crate) fn checked(self) -> Result<(Source, SqlConfig, bool)> {
        let config = self.config;
        validate_table(&config.table)?;
        config.breaker.validate()?;
        if config.attempts == 0 || config.response_timeout.is_zero() || config.poll_cap.is_zero() {
            return Err(LockError::InvalidConfig(
                "SQL attempts, response timeout and poll cap must be positive".into(),
            ));
        }
        if config.max_connections == 0 {
            return Err(LockError::InvalidConfig(
                "SQL max_connections must be positive".into(),
            ));
        }
        Ok((self.source, config, self.create_schema))
    }
}

impl<B> std::fmt::Debug for SqlBackendBuilder<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a password: leave it out.
        let source = match self.source {
            Source::Url(_) => "url",
            #[cfg(feature = "postgres")]
            Source::Postgres(_) => "pool",
            #[cfg(feature = "mysql")]
            Source::MySql(_) => "pool",
        };
        f.debug_struct("SqlBackendBuilder")
            .field("source", &source)
            .field("config", &self.config)
            .field("create_schema", &self.create_schema)
            .finish_non_exhaustive()
    }
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
