//! The settings of [`RecoveryPoints`].

use std::time::Duration;

use sqlx::Pool;

use super::{Points, RecoveryPoints};
use crate::breaker::{Breaker, BreakerOptions};
use crate::sql::{validate_table, Dialect};
use crate::{LockError, Result};

/// Settings of [`RecoveryPoints`] in database `D` (`sqlx::Postgres` or `sqlx::MySql`); start
/// from [`RecoveryPoints::builder_from_pool`].
///
/// ```no_run
/// use std::time::Duration;
/// use lock_core::sql::RecoveryPoints;
///
/// # async fn example(pool: sqlx::PgPool) -> Result<(), lock_core::LockError> {
/// let points = RecoveryPoints::builder_from_pool(pool)
///     .table("payments_recovery")
///     .response_timeout(Duration::from_secs(1))
///     .connect()
///     .await?;
/// # let _ = points; Ok(()) }
/// ```
#[must_use]
pub struct RecoveryPointsBuilder<D: Dialect> {
    pool: Pool<D>,
    table: String,
    create_table: bool,
    response_timeout: Duration,
    breaker: Option<Breaker>,
}

impl<D: Dialect> RecoveryPointsBuilder<D> {
    pub(super) fn new(pool: Pool<D>) -> Self {
        Self {
            pool,
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
    /// let points = RecoveryPoints::builder_from_pool(backend.pool().clone())
    ///     .breaker(backend.breaker().clone())
    ///     .connect()
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
    /// let builder = lock_core::sql::RecoveryPoints::builder_from_pool(pool).table("payments_recovery");
    /// # let _ = builder; }
    /// ```
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.table = table.into();
        self
    }

    /// Whether `connect` creates the table when it is missing (default true). Turn it off when
    /// migrations create it.
    ///
    /// ```no_run
    /// # fn example(pool: sqlx::PgPool) {
    /// let builder = lock_core::sql::RecoveryPoints::builder_from_pool(pool).create_table(false);
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
    /// let builder = lock_core::sql::RecoveryPoints::builder_from_pool(pool)
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
    /// let points = lock_core::sql::RecoveryPoints::builder_from_pool(pool).connect().await?;
    /// # let _ = points; Ok(()) }
    /// ```
    pub async fn connect(self) -> Result<RecoveryPoints> {
        validate_table(&self.table)?;
        if self.response_timeout.is_zero() {
            return Err(LockError::InvalidConfig(
                "the recovery points' response timeout must be positive".into(),
            ));
        }
        let db = Points {
            pool: self.pool,
            sql: D::points_statements(&self.table),
        };
        let breaker = self
            .breaker
            .unwrap_or_else(|| Breaker::new(D::BACKEND, BreakerOptions::new()));
        RecoveryPoints::start(
            Box::new(db),
            self.table,
            self.create_table,
            self.response_timeout,
            breaker,
        )
        .await
    }
}

impl<D: Dialect> std::fmt::Debug for RecoveryPointsBuilder<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecoveryPointsBuilder")
            .field("database", &D::BACKEND)
            .field("table", &self.table)
            .field("create_table", &self.create_table)
            .field("response_timeout", &self.response_timeout)
            .finish_non_exhaustive()
    }
}
