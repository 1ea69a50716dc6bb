//! The PostgreSQL dialect: one upsert per grant attempt, `NOTIFY` on release, one `LISTEN`
//! connection per backend routing wake-ups to the waiting tasks.

use std::sync::Arc;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use tokio::time::Instant;

use super::dialect::{Ask, Bind, Outcome, Sealed, Statement, Statements, Wake};
use super::sweep::SWEEP_BATCH;
use super::{owner_host, owner_pid, to_lock_error, SqlBackend};
use crate::Result;

/// Serializes concurrent schema creation (`CREATE ... IF NOT EXISTS` can still collide).
const SCHEMA_LOCK: i64 = 0x6c6f_636b_636f_7265; // "lockcore"

impl Sealed for sqlx::Postgres {
    type Grant = PgGrant;
    const BACKEND: &'static str = "postgres";
    const MIGRATION: &'static str = include_str!("../../migrations/postgres/0001_lock_core.sql");

    fn statements(t: &str) -> (Statements, PgGrant) {
        use Bind::{Backdate, Channel, Fence, Key, Owner, Retention, Ttl};
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
        // A freed row notifies its waiters in the same statement: `pg_notify` runs once per row
        // freed, and the statement returns one row per row freed.
        let statements = Statements {
            peek: None,
            check: Statement::new(
                format!("SELECT count(*) FROM {t} WHERE {held}"),
                &[Key, Owner, Fence],
            ),
            renew: Statement::new(
                format!(
                    "UPDATE {t} SET expires_at = now() + $4::float8 * interval '1 microsecond' \
                     WHERE {held}"
                ),
                &[Key, Owner, Fence, Ttl],
            ),
            // $5: how far back to date the free row (µs), so the sweep takes it after the
            // grant's fence retention rather than after ROW_RETENTION.
            release: Statement::new(
                format!(
                    "WITH freed AS (
                       UPDATE {t} SET owner = '',
                         expires_at = now() - $5::float8 * interval '1 microsecond'
                       WHERE {held}
                       RETURNING 1 AS one
                     )
                     SELECT 1 FROM freed f,
                       LATERAL (SELECT pg_notify($4, $1) WHERE f.one = 1) AS wake"
                ),
                &[Key, Owner, Fence, Channel, Backdate],
            ),
            // The row stays (free): see `acquire` above.
            release_expired: None,
            forget: Statement::new(
                format!(
                    "WITH freed AS (
                       UPDATE {t} SET owner = '', expires_at = now()
                       WHERE lock_key = $1 AND owner = $2 RETURNING 1 AS one
                     )
                     SELECT 1 FROM freed f,
                       LATERAL (SELECT pg_notify($3, $1) WHERE f.one = 1) AS wake"
                ),
                &[Key, Owner, Channel],
            ),
            sweeps: vec![Statement::new(
                format!(
                    "DELETE FROM {t} WHERE lock_key IN (
                       SELECT lock_key FROM {t}
                       WHERE expires_at < now() - $1::float8 * interval '1 microsecond'
                       LIMIT {SWEEP_BATCH})
                     AND expires_at < now() - $1::float8 * interval '1 microsecond'"
                ),
                &[Retention],
            )],
        };
        let grant = PgGrant {
            acquire,
            advisory_try: format!(
                "SELECT CASE WHEN pg_try_advisory_lock($1) THEN nextval('{t}_fence') END"
            ),
        };
        (statements, grant)
    }

    fn connecting(
        pool: PgPoolOptions,
        options: PgConnectOptions,
    ) -> (PgPoolOptions, PgConnectOptions) {
        // One connection more than asked for: the LISTEN connection lives in the pool too.
        let size = pool.get_max_connections() + 1;
        (
            pool.max_connections(size),
            options.application_name("lock-core"),
        )
    }

    fn check_options(options: &PgConnectOptions) -> Result<()> {
        use sqlx::postgres::PgSslMode;
        let required = matches!(
            options.get_ssl_mode(),
            PgSslMode::Require | PgSslMode::VerifyCa | PgSslMode::VerifyFull
        );
        super::tls_available(required, "postgres-tls", "sslmode")
    }

    async fn create_schema(pool: &PgPool, table: &str) -> Result<()> {
        // One simple-protocol batch runs as one transaction; the transaction-scoped advisory
        // lock serializes concurrent creators (`IF NOT EXISTS` alone can still collide).
        let mut batch = format!("SELECT pg_advisory_xact_lock({SCHEMA_LOCK});");
        for statement in SqlBackend::<Self>::schema_statements(table) {
            batch.push_str(&statement);
            batch.push(';');
        }
        sqlx::raw_sql(&batch)
            .execute(pool)
            .await
            .map(drop)
            .map_err(|e| to_lock_error(Self::BACKEND, e))
    }

    async fn listen(pool: &PgPool, table: &str, wake: Wake) -> Result<bool> {
        let mut listener = PgListener::connect_with(pool)
            .await
            .map_err(|e| to_lock_error(Self::BACKEND, e))?;
        listener.ignore_pool_close_event(true);
        listener
            .listen(table)
            .await
            .map_err(|e| to_lock_error(Self::BACKEND, e))?;
        tokio::spawn(super::waiters::route_notifications(listener, wake));
        Ok(true)
    }

    async fn grant(
        pool: PgPool,
        grant: Arc<PgGrant>,
        ask: Ask,
    ) -> std::result::Result<Outcome, sqlx::Error> {
        let sent = Instant::now();
        let (fence, left): (Option<i64>, Option<i64>) = sqlx::query_as(&grant.acquire)
            .bind(&ask.lock_key)
            .bind(&ask.name)
            .bind(&ask.owner)
            .bind(owner_host())
            .bind(owner_pid())
            .bind(ask.ttl)
            .fetch_one(&pool)
            .await?;
        Ok(match fence {
            Some(fence) => Outcome::Granted { fence, sent },
            None => Outcome::Busy(left),
        })
    }
}

/// PostgreSQL's own statements: the grant, and the advisory backend's.
pub struct PgGrant {
    acquire: String,
    pub(crate) advisory_try: String,
}

impl SqlBackend<sqlx::Postgres> {
    /// The same database through session advisory locks instead of the table; shares this
    /// backend's pool and wake-ups. See [`PostgresAdvisoryBackend`](crate::PostgresAdvisoryBackend).
    #[must_use]
    pub fn advisory(&self) -> super::PostgresAdvisoryBackend {
        super::PostgresAdvisoryBackend::new(self.shared.clone())
    }

    /// Wake-up notifications this backend has received.
    #[must_use]
    pub fn wakeups_received(&self) -> u64 {
        self.shared
            .hub
            .wakeups
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}
