//! The PostgreSQL lock-table backend: one upsert per acquire attempt, `NOTIFY` on release, one
//! `LISTEN` connection per backend routing wake-ups to the waiting tasks.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::sweep::{spawn_sweeper, sweep, SWEEP_BATCH};
use super::waiters::WaiterHub;
use super::{
    fence_from_i64, micros, owner_host, owner_pid, remaining, run, storage_key, to_lock_error,
    wait_for_grant, Attempt, Source, SqlBackendBuilder, SqlConfig,
};
use crate::backend::in_flight::InFlight;
use crate::backend::{AcquireRequest, Capabilities, Grant, LeaseKind, LockBackend};
use crate::breaker::Breaker;
use crate::{LockError, LockKey, OwnerToken, Result};

pub(super) const BACKEND: &str = "postgres";

/// Serializes concurrent schema creation (`CREATE ... IF NOT EXISTS` can still collide).
const SCHEMA_LOCK: i64 = 0x6c6f_636b_636f_7265; // "lockcore"

/// Locks as rows of a PostgreSQL table, expiring by the database's clock.
///
/// Cheap to clone: clones share one connection pool and one `LISTEN` connection. See the
/// [module docs](crate::sql) for the table and the waiting strategy, and
/// [`advisory`](Self::advisory) for session advisory locks on the same pool.
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
#[derive(Clone)]
pub struct PostgresBackend {
    pub(super) shared: Arc<PgShared>,
}

pub(super) struct PgShared {
    pub(super) pool: PgPool,
    /// For the advisory backend's own sessions.
    pub(super) options: PgConnectOptions,
    pub(super) hub: Arc<WaiterHub>,
    /// Grant statements in flight, which run to their end even if their caller goes away.
    in_flight: InFlight,
    pub(super) config: SqlConfig,
    /// The pool's circuit breaker, shared with the advisory backend made from this one.
    pub(super) breaker: Breaker,
    pub(super) sql: Statements,
    _stop_tasks: DropGuard,
}

/// The statements, with the table's name put in once.
pub(super) struct Statements {
    acquire: String,
    check: String,
    renew: String,
    release: String,
    cleanup: String,
    sweep: String,
    pub(super) advisory_try: String,
}

impl Statements {
    fn new(t: &str) -> Self {
        // Every column reference on the right of `DO UPDATE SET` sees the row as it was. The
        // fence is drawn there, with the row locked: the one drawn in VALUES (used only when
        // the name has no row yet) is drawn before the conflict check, and could be older
        // than that of a holder who came and went meanwhile. Release therefore keeps the row
        // (free, expired) instead of deleting it, so every later grant takes the update path.
        let acquire = format!(
            "WITH attempt AS (
               INSERT INTO {t} AS l (lock_key, name, owner, fence, entry_count, owner_host,
                                     owner_pid, acquired_at, expires_at)
               VALUES ($1, $2, $3, nextval('{t}_fence'), 1, $4, $5, now(),
                       now() + $6::float8 * interval '1 microsecond')
               ON CONFLICT (lock_key) DO UPDATE SET
                 name = EXCLUDED.name,
                 fence = CASE WHEN l.owner = EXCLUDED.owner THEN l.fence
                              ELSE nextval('{t}_fence') END,
                 acquired_at = CASE WHEN l.owner = EXCLUDED.owner THEN l.acquired_at
                                    ELSE EXCLUDED.acquired_at END,
                 owner = EXCLUDED.owner,
                 entry_count = 1,
                 owner_host = EXCLUDED.owner_host,
                 owner_pid = EXCLUDED.owner_pid,
                 expires_at = EXCLUDED.expires_at
               WHERE l.owner = EXCLUDED.owner OR l.expires_at <= now()
               RETURNING l.fence
             )
             SELECT (SELECT fence FROM attempt) AS fence,
                    (SELECT (extract(epoch FROM expires_at - now()) * 1000000)::bigint
                       FROM {t} WHERE lock_key = $1) AS remaining_us"
        );
        let held = "lock_key = $1 AND owner = $2 AND fence = $3 AND expires_at > now()";
        Self {
            acquire,
            check: format!("SELECT count(*) FROM {t} WHERE {held}"),
            renew: format!(
                "UPDATE {t} SET expires_at = now() + $4::float8 * interval '1 microsecond' \
                 WHERE {held}"
            ),
            // $5: how far back to date the free row (µs), so the sweep takes it after the
            // grant's fence retention rather than after ROW_RETENTION.
            release: format!(
                "WITH freed AS (
                   UPDATE {t} SET owner = '',
                     expires_at = now() - $5::float8 * interval '1 microsecond'
                   WHERE {held}
                   RETURNING 1 AS one
                 )
                 SELECT count(*) FROM freed f,
                   LATERAL (SELECT pg_notify($4, $1) WHERE f.one = 1) AS wake"
            ),
            cleanup: format!(
                "WITH freed AS (
                   UPDATE {t} SET owner = '', expires_at = now()
                   WHERE lock_key = $1 AND owner = $2 RETURNING 1 AS one
                 )
                 SELECT count(*) FROM freed f,
                   LATERAL (SELECT pg_notify($3, $1) WHERE f.one = 1) AS wake"
            ),
            sweep: format!(
                "WITH gone AS (
                   DELETE FROM {t} WHERE lock_key IN (
                     SELECT lock_key FROM {t}
                     WHERE expires_at < now() - $1::float8 * interval '1 microsecond'
                     LIMIT {SWEEP_BATCH})
                   AND expires_at < now() - $1::float8 * interval '1 microsecond'
                   RETURNING 1
                 )
                 SELECT count(*) FROM gone"
            ),
            advisory_try: format!(
                "SELECT CASE WHEN pg_try_advisory_lock($1) THEN nextval('{t}_fence') END"
            ),
        }
    }
}

/// A lease held as a row of the lock table.
#[derive(Debug)]
pub struct PostgresLease {
    lock_key: String,
    /// The owner token's hex form, as stored.
    owner: String,
    fence: i64,
    /// How far back the release dates the free row (µs): `ROW_RETENTION` less the grant's
    /// fence retention, 0 without one.
    backdate: i64,
}

impl SqlBackendBuilder<PostgresBackend> {
    /// Connects, creates the schema (unless turned off) and starts listening for wake-ups.
    pub async fn connect(self) -> Result<PostgresBackend> {
        let (source, config, create) = self.checked()?;
        let (pool, options) = match source {
            Source::Postgres(pool) => {
                let options = (*pool.connect_options()).clone();
                (pool, options)
            }
            Source::Url(url) => {
                let options: PgConnectOptions = url
                    .parse()
                    .map_err(|e| LockError::InvalidConfig(format!("PostgreSQL URL: {e}")))?;
                let options = options.application_name("lock-core");
                let pool = PgPoolOptions::new()
                    // One more than asked for: the LISTEN connection lives in the pool too.
                    .max_connections(config.max_connections + 1)
                    .acquire_timeout(config.response_timeout)
                    .connect_with(options.clone())
                    .await
                    .map_err(|e| to_lock_error(BACKEND, e))?;
                (pool, options)
            }
            #[cfg(feature = "mysql")]
            Source::MySql(_) => unreachable!("a MySQL pool in a PostgreSQL builder"),
        };
        let sql = Statements::new(&config.table);
        if create {
            create_schema(&pool, &config.table).await?;
        }
        let mut listener = PgListener::connect_with(&pool)
            .await
            .map_err(|e| to_lock_error(BACKEND, e))?;
        listener.ignore_pool_close_event(true);
        listener
            .listen(&config.table)
            .await
            .map_err(|e| to_lock_error(BACKEND, e))?;
        let hub = Arc::new(WaiterHub::default());
        let stop = CancellationToken::new();
        let breaker = Breaker::new(BACKEND, config.breaker);
        tokio::spawn(super::waiters::route_notifications(
            listener,
            hub.clone(),
            breaker.clone(),
            stop.clone(),
        ));
        let backend = PostgresBackend {
            shared: Arc::new(PgShared {
                pool,
                options,
                hub,
                in_flight: InFlight::default(),
                config,
                breaker,
                sql,
                _stop_tasks: stop.clone().drop_guard(),
            }),
        };
        spawn_sweeper(
            BACKEND,
            "rows of locks unused for a day",
            stop,
            Arc::downgrade(&backend.shared),
            sweep_rows,
        );
        Ok(backend)
    }
}

impl PostgresBackend {
    /// Connects with default settings to `url` (`postgres://user:password@host:port/db`).
    pub async fn connect(url: &str) -> Result<Self> {
        Self::builder(url).connect().await
    }

    /// Starts configuring a backend for `url`.
    pub fn builder(url: impl Into<String>) -> SqlBackendBuilder<Self> {
        Self::builder_with(Source::Url(url.into()))
    }

    /// Builds a backend with default settings on an existing pool (see
    /// [`builder_from_pool`](Self::builder_from_pool)); creates the schema if missing.
    pub async fn from_pool(pool: PgPool) -> Result<Self> {
        Self::builder_from_pool(pool).connect().await
    }

    /// Starts configuring a backend on an existing pool (shared with the application). The
    /// pool keeps its size and acquire timeout
    /// ([`max_connections`](SqlBackendBuilder::max_connections) is not used); the backend's
    /// `LISTEN` connection is taken from it for as long as the backend lives, so count one
    /// connection more. Advisory locks ([`advisory`](Self::advisory)) open their sessions
    /// with the pool's connect options.
    ///
    /// ```no_run
    /// use lock_core::{LockClient, PostgresBackend};
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
    /// # Ok(()) }
    /// ```
    pub fn builder_from_pool(pool: PgPool) -> SqlBackendBuilder<Self> {
        Self::builder_with(Source::Postgres(pool))
    }

    fn builder_with(source: Source) -> SqlBackendBuilder<Self> {
        SqlBackendBuilder::new(source, Duration::from_secs(1), Duration::from_secs(1))
    }

    /// The migration creating the default lock table (`lock_core_locks`) and its fencing
    /// sequence: the statements of [`schema_statements`](Self::schema_statements), as the
    /// file `lock-core/migrations/postgres/0001_lock_core.sql`. For `sqlx migrate` or any
    /// other migration tool; then connect with
    /// [`create_schema(false)`](SqlBackendBuilder::create_schema).
    pub const MIGRATION: &'static str =
        include_str!("../../migrations/postgres/0001_lock_core.sql");

    /// The same database through session advisory locks instead of the table; shares this
    /// backend's pool and wake-ups. See [`PostgresAdvisoryBackend`](crate::PostgresAdvisoryBackend).
    #[must_use]
    pub fn advisory(&self) -> super::PostgresAdvisoryBackend {
        super::PostgresAdvisoryBackend::new(self.shared.clone())
    }

    /// The statements that create the lock table `table` and its fencing sequence, for
    /// migrations; all are idempotent (`IF NOT EXISTS`).
    #[must_use]
    pub fn schema_statements(table: &str) -> Vec<String> {
        vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {table} (
                   lock_key    text COLLATE \"C\" PRIMARY KEY,
                   name        text NOT NULL,
                   owner       text NOT NULL,
                   fence       bigint NOT NULL,
                   entry_count integer NOT NULL DEFAULT 1,
                   owner_host  text NOT NULL DEFAULT '',
                   owner_pid   integer NOT NULL DEFAULT 0,
                   acquired_at timestamptz NOT NULL DEFAULT now(),
                   expires_at  timestamptz NOT NULL
                 )"
            ),
            format!("CREATE SEQUENCE IF NOT EXISTS {table}_fence AS bigint"),
        ]
    }

    /// Creates the table and sequence if missing (what `connect` does unless
    /// [`create_schema(false)`](SqlBackendBuilder::create_schema) was set).
    pub async fn create_schema(&self) -> Result<()> {
        create_schema(&self.shared.pool, &self.shared.config.table).await
    }

    /// The [circuit breaker](crate::breaker) of this backend's pool: its calls (and the
    /// `LISTEN` connection's reconnects) go through it.
    #[must_use]
    pub fn breaker(&self) -> &Breaker {
        &self.shared.breaker
    }

    /// The connection pool, e.g. to write to a fenced resource on the same database.
    #[must_use]
    pub fn pool(&self) -> &PgPool {
        &self.shared.pool
    }

    /// The lock table's name.
    #[must_use]
    pub fn table(&self) -> &str {
        &self.shared.config.table
    }

    /// How many tasks of this backend (and its advisory twin) wait for the lock `full_key`
    /// (`namespace:key`). The database keeps no waiter entries; this is the local count.
    #[must_use]
    pub fn waiters(&self, full_key: &str) -> usize {
        self.shared.hub.count(&storage_key(full_key))
    }

    /// Wake-up notifications this backend has received.
    #[must_use]
    pub fn wakeups_received(&self) -> u64 {
        self.shared
            .hub
            .wakeups
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    async fn attempt(
        &self,
        lock_key: &str,
        name: &str,
        (token, owner): (OwnerToken, &str),
        ttl: i64,
        backdate: i64,
    ) -> Result<Attempt<PostgresLease>> {
        // The statement runs in a task of its own, to its end: the clean-up after a caller that
        // went away waits for it (`release_abandoned`), so it cannot land after the clean-up.
        let (sent, (fence, left)) = run(
            BACKEND,
            &self.shared.config,
            &self.shared.breaker,
            "acquire",
            || {
                let shared = self.shared.clone();
                let (lock_key, name, owner) =
                    (lock_key.to_owned(), name.to_owned(), owner.to_owned());
                let statement = async move {
                    let sent = Instant::now();
                    let row: (Option<i64>, Option<i64>) = sqlx::query_as(&shared.sql.acquire)
                        .bind(&lock_key)
                        .bind(&name)
                        .bind(&owner)
                        .bind(owner_host())
                        .bind(owner_pid())
                        .bind(ttl)
                        .fetch_one(&shared.pool)
                        .await?;
                    Ok((sent, row))
                };
                let in_flight = self.shared.in_flight.clone();
                async move {
                    in_flight
                        .run(token, statement)
                        .await
                        .unwrap_or_else(|failed| {
                            Err(sqlx::Error::Protocol(format!(
                                "the grant statement's task failed: {failed}"
                            )))
                        })
                }
            },
        )
        .await?;
        let Some(fence) = fence else {
            return Ok(Attempt::Busy(remaining(left)));
        };
        let lease = PostgresLease {
            lock_key: lock_key.to_owned(),
            owner: owner.to_owned(),
            fence,
            backdate,
        };
        Ok(Attempt::Granted(Grant::new(
            lease,
            fence_from_i64(BACKEND, fence)?,
            sent,
        )))
    }

    /// Deletes now the rows of locks whose lease ended more than
    /// [`ROW_RETENTION`](super::ROW_RETENTION) ago (the backend also does this every
    /// [`SWEEP_EVERY`](super::SWEEP_EVERY)); returns how many.
    pub async fn sweep_expired(&self) -> Result<u64> {
        sweep_rows(self.shared.clone()).await
    }

    /// Frees the row under `owner` (a token's hex form), waking a waiter; true when found.
    async fn forget(&self, lock_key: &str, owner: &str) -> Result<bool> {
        let shared = &*self.shared;
        let freed: i64 = run(
            BACKEND,
            &shared.config,
            &shared.breaker,
            "release",
            || async {
                sqlx::query_scalar(&shared.sql.cleanup)
                    .bind(lock_key)
                    .bind(owner)
                    .bind(&shared.config.table)
                    .fetch_one(&shared.pool)
                    .await
            },
        )
        .await?;
        Ok(freed > 0)
    }
}

impl LockBackend for PostgresBackend {
    type Lease = PostgresLease;

    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::new(BACKEND);
        caps.push_wakeups = true;
        caps
    }

    fn breaker(&self) -> Option<&Breaker> {
        Some(&self.shared.breaker)
    }

    async fn acquire(&self, request: AcquireRequest<'_>) -> Result<Option<Grant<PostgresLease>>> {
        if request.kind != LeaseKind::Exclusive {
            return Err(request.kind.unsupported(BACKEND));
        }
        let name = request.key.full();
        let lock_key = storage_key(name);
        let owner = request.owner.to_hex();
        let ttl = micros(request.ttl);
        // A short fence retention: the row may go that long after the lease ends (a grant
        // statement in flight longer than that, if one drew its token before the row went,
        // could be granted an older token: the price of a short retention).
        let backdate = request.fence_retention.map_or(0, |retention| {
            micros(super::ROW_RETENTION.saturating_sub(retention))
        });
        let shared = &*self.shared;
        wait_for_grant(&shared.hub, &lock_key, &request, &shared.config, |_| {
            self.attempt(&lock_key, name, (request.owner, &owner), ttl, backdate)
        })
        .await
    }

    async fn renew(&self, lease: &PostgresLease, ttl: Option<Duration>) -> Result<bool> {
        let shared = &*self.shared;
        run(
            BACKEND,
            &shared.config,
            &shared.breaker,
            "renew",
            || async {
                let held = match ttl {
                    Some(ttl) => sqlx::query(&shared.sql.renew)
                        .bind(&lease.lock_key)
                        .bind(&lease.owner)
                        .bind(lease.fence)
                        .bind(micros(ttl))
                        .execute(&shared.pool)
                        .await?
                        .rows_affected(),
                    None => {
                        let count: i64 = sqlx::query_scalar(&shared.sql.check)
                            .bind(&lease.lock_key)
                            .bind(&lease.owner)
                            .bind(lease.fence)
                            .fetch_one(&shared.pool)
                            .await?;
                        u64::try_from(count).unwrap_or(0)
                    }
                };
                Ok(held == 1)
            },
        )
        .await
    }

    async fn release(&self, lease: &PostgresLease) -> Result<bool> {
        let shared = &*self.shared;
        run(
            BACKEND,
            &shared.config,
            &shared.breaker,
            "release",
            || async {
                let freed: i64 = sqlx::query_scalar(&shared.sql.release)
                    .bind(&lease.lock_key)
                    .bind(&lease.owner)
                    .bind(lease.fence)
                    .bind(&shared.config.table)
                    .bind(lease.backdate as f64)
                    .fetch_one(&shared.pool)
                    .await?;
                Ok(freed == 1)
            },
        )
        .await
    }

    async fn release_abandoned(
        &self,
        key: &LockKey,
        kind: LeaseKind,
        owner: OwnerToken,
    ) -> Result<bool> {
        if kind != LeaseKind::Exclusive {
            // Nothing of another kind is ever stored here (`acquire` refuses it).
            return Ok(false);
        }
        self.shared.in_flight.settled(owner).await;
        self.forget(&storage_key(key.full()), &owner.to_hex()).await
    }
}

impl std::fmt::Debug for PostgresBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresBackend")
            .field("table", &self.shared.config.table)
            .finish_non_exhaustive()
    }
}

/// One sweep of rows unused for [`ROW_RETENTION`](super::ROW_RETENTION), in batches.
async fn sweep_rows(shared: Arc<PgShared>) -> Result<u64> {
    let retention = micros(super::ROW_RETENTION) as f64;
    sweep(|| async {
        let deleted: i64 = run(BACKEND, &shared.config, &shared.breaker, "sweep", || {
            sqlx::query_scalar(&shared.sql.sweep)
                .bind(retention)
                .fetch_one(&shared.pool)
        })
        .await?;
        Ok(u64::try_from(deleted).unwrap_or_default())
    })
    .await
}

async fn create_schema(pool: &PgPool, table: &str) -> Result<()> {
    // One simple-protocol batch runs as one transaction; the transaction-scoped advisory lock
    // serializes concurrent creators (`IF NOT EXISTS` alone can still collide).
    let mut batch = format!("SELECT pg_advisory_xact_lock({SCHEMA_LOCK});");
    for statement in PostgresBackend::schema_statements(table) {
        batch.push_str(&statement);
        batch.push(';');
    }
    sqlx::raw_sql(&batch)
        .execute(pool)
        .await
        .map(drop)
        .map_err(|e| to_lock_error(BACKEND, e))
}
