//! The settings of [`RecoveryPoints`].

use std::time::Duration;

use super::{Db, RecoveryPoints};
use crate::breaker::{Breaker, BreakerOptions};
use crate::sql::validate_table;
use crate::{LockError, Result};

/// The database the points go to.
pub(super) enum Source {
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
    #[cfg(feature = "mysql")]
    MySql(sqlx::MySqlPool),
}

/// Settings of [`RecoveryPoints`]; start from [`RecoveryPoints::postgres_builder`] or
/// [`RecoveryPoints::mysql_builder`].
///
/// ```no_run
/// use std::time::Duration;
/// use lock_core::sql::RecoveryPoints;
///
/// # async fn example(pool: sqlx::PgPool) -> Result<(), lock_core::LockError> {
/// let points = RecoveryPoints::postgres_builder(pool)
///     .table("payments_recovery")
///     .response_timeout(Duration::from_secs(1))
///     .build()
///     .await?;
/// # let _ = points; Ok(()) }
/// ```
#[must_use]
pub struct RecoveryPointsBuilder {
    source: Source,
    table: String,
    create_table: bool,
    response_timeout: Duration,
    breaker: Option<Breaker>,
}

impl RecoveryPointsBuilder {
    pub(super) fn new(source: Source) -> Self {
        Self {
            source,
            table: RecoveryPoints::DEFAULT_TABLE.to_owned(),
            create_table: true,
            response_timeout: Duration::from_secs(2),
            breaker: None,
        }
    }

    /// The [circuit breaker](crate::breaker) the reads of points go through. Give points on a
    /// lock backend's pool the backend's (`backend.breaker().clone()`), so that one outage
    /// opens one breaker; without it the points have one of their own.
    ///
    /// ```no_run
    /// use lock_core::sql::RecoveryPoints;
    /// use lock_core::PostgresBackend;
    ///
    /// # async fn example(backend: PostgresBackend) -> Result<(), lock_core::LockError> {
    /// let points = RecoveryPoints::postgres_builder(backend.pool().clone())
    ///     .breaker(backend.breaker().clone())
    ///     .build()
    ///     .await?;
    /// # let _ = points; Ok(()) }
    /// ```
    pub fn breaker(mut self, breaker: Breaker) -> Self {
        self.breaker = Some(breaker);
        self
    }

    /// The table (default `lock_core_recovery_points`): a plain identifier, ASCII letters,
    /// digits and `_`, not starting with a digit, at most 48 bytes.
    ///
    /// ```no_run
    /// # fn example(pool: sqlx::PgPool) {
    /// let builder = lock_core::sql::RecoveryPoints::postgres_builder(pool).table("payments_recovery");
    /// # let _ = builder; }
    /// ```
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.table = table.into();
        self
    }

    /// Whether `build` creates the table when it is missing (default true). Turn it off when
    /// migrations create it.
    ///
    /// ```no_run
    /// # fn example(pool: sqlx::PgPool) {
    /// let builder = lock_core::sql::RecoveryPoints::postgres_builder(pool).create_table(false);
    /// # let _ = builder; }
    /// ```
    pub fn create_table(mut self, create: bool) -> Self {
        self.create_table = create;
        self
    }

    /// How long a read of a point (with the wait for a pooled connection) may take before it
    /// fails with [`LockError::Timeout`] (default 2 s). Writes run on the application's
    /// transaction and take its timeouts.
    ///
    /// ```no_run
    /// # fn example(pool: sqlx::PgPool) {
    /// let builder = lock_core::sql::RecoveryPoints::postgres_builder(pool)
    ///     .response_timeout(std::time::Duration::from_millis(500));
    /// # let _ = builder; }
    /// ```
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// Checks the settings, creates the table unless turned off, and starts the hourly purge
    /// of expired points.
    ///
    /// ```no_run
    /// # async fn example(pool: sqlx::PgPool) -> Result<(), lock_core::LockError> {
    /// let points = lock_core::sql::RecoveryPoints::postgres_builder(pool).build().await?;
    /// # let _ = points; Ok(()) }
    /// ```
    pub async fn build(self) -> Result<RecoveryPoints> {
        validate_table(&self.table)?;
        if self.response_timeout.is_zero() {
            return Err(LockError::InvalidConfig(
                "the recovery points' response timeout must be positive".into(),
            ));
        }
        let db = match self.source {
            #[cfg(feature = "postgres")]
            Source::Postgres(pool) => Db::Postgres {
                pool,
                sql: super::postgres::statements(&self.table),
            },
            #[cfg(feature = "mysql")]
            Source::MySql(pool) => Db::MySql {
                pool,
                sql: super::mysql::statements(&self.table),
            },
        };
        let breaker = self
            .breaker
            .unwrap_or_else(|| Breaker::new(db.name(), BreakerOptions::new()));
        RecoveryPoints::start(
            db,
            self.table,
            self.create_table,
            self.response_timeout,
            breaker,
        )
        .await
    }
}

impl std::fmt::Debug for RecoveryPointsBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecoveryPointsBuilder")
            .field("table", &self.table)
            .field("create_table", &self.create_table)
            .field("response_timeout", &self.response_timeout)
            .finish_non_exhaustive()
    }
}
