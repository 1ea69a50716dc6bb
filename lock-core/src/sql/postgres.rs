//! The PostgreSQL dialect, for every SQL store: `$n` placeholders and `"quoted"` names; the
//! lock table's one upsert per grant attempt, `NOTIFY` on release, one `LISTEN` connection per
//! backend routing wake-ups to the waiting tasks; the stock's clauses; the recovery points'
//! table and statements; the tables of entries (recovery points, result store) created under
//! an advisory lock.

use std::borrow::Cow;
use std::sync::Arc;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use sqlx::PgConnection;
use tokio::time::Instant;

use super::dialect::{Ask, Bind, Outcome, Sealed, Statement, Statements, Wake};
use super::recovery::{self, Point, PointsStatements};
use super::sweep::SWEEP_BATCH;
use super::{owner_host, owner_pid, to_lock_error, SqlBackend};
use crate::Result;

/// Serializes concurrent schema creation (`CREATE ... IF NOT EXISTS` can still collide): the
/// lock table's, the result table's and the recovery points'.
const SCHEMA_LOCK: i64 = 0x6c6f_636b_636f_7265; // "lockcore"

impl Sealed for sqlx::Postgres {
    // ---- Every store

    const BACKEND: &'static str = "postgres";

    fn is_conflict(error: &sqlx::Error) -> bool {
        matches!(error, sqlx::Error::Database(db)
            if db.code().is_some_and(|c| c == "40001" || c == "40P01"))
    }

    fn placeholder(n: usize) -> String {
        format!("${n}")
    }

    fn placeholders(sql: &str) -> String {
        let mut out = String::with_capacity(sql.len() + 8);
        let mut n = 0;
        for ch in sql.chars() {
            if ch == '?' {
                n += 1;
                out.push('$');
                out.push_str(&n.to_string());
            } else {
                out.push(ch);
            }
        }
        out
    }

    fn quote(identifier: &str) -> String {
        format!("\"{identifier}\"")
    }

    // ---- Tables of entries by key

    fn live_entry(t: &str, key: &str) -> String {
        format!("SELECT entry FROM {t} WHERE {key} = $1 AND expires_at > now()")
    }

    fn purge_expired(t: &str, key: &str) -> String {
        format!(
            "DELETE FROM {t} WHERE {key} IN (
               SELECT {key} FROM {t} WHERE expires_at <= now() LIMIT {SWEEP_BATCH}
               FOR UPDATE SKIP LOCKED)"
        )
    }

    async fn create_table(pool: &PgPool, migration: &str) -> std::result::Result<(), sqlx::Error> {
        let batch = format!("SELECT pg_advisory_xact_lock({SCHEMA_LOCK}); {migration};");
        // One simple-protocol batch: one transaction, holding the advisory lock.
        sqlx::raw_sql(&batch).execute(pool).await.map(drop)
    }

    // ---- The lock table

    type Grant = PgGrant;
    const MIGRATION: &'static str = include_str!("../../migrations/postgres/0001_lock_core.sql");

    fn statements(t: &str, operator: bool) -> (Statements, PgGrant) {
        use Bind::{Backdate, Channel, Fence, Key, Owner, Retention, Ttl};
        // With the operator's schema the grant also writes the holder's label ($7) and whose
        // it is (the owner, $3), in the same statement: readers show the label only where
        // `label_owner` is the row's owner, as a grant by a client of an older version leaves
        // both as they were.
        let (label_columns, label_values, label_update) = if operator {
            (
                ", label, label_owner",
                ", $7, $3",
                ", label = EXCLUDED.label, label_owner = EXCLUDED.label_owner",
            )
        } else {
            ("", "", "")
        };
        // Every column reference on the right of `DO UPDATE SET` sees the row as it was. The
        // fence is drawn there, with the row locked: the one drawn in VALUES (used only when
        // the name has no row yet) is drawn before the conflict check, and could be older
        // than that of a holder who came and went meanwhile. Release therefore keeps the row
        // (free, expired) instead of deleting it, so every later grant takes the update path.
        let acquire = format!(
            "WITH attempt AS (
               INSERT INTO {t} AS l (lock_key, name, owner, fence, entry_count, owner_host,
                                     owner_pid, acquired_at, expires_at{label_columns})
               VALUES ($1, $2, $3, nextval('{t}_fence'), 1, $4, $5, now(),
                       now() + $6::float8 * interval '1 microsecond'{label_values})
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
                 expires_at = EXCLUDED.expires_at{label_update}
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
        let mut statements = Statements {
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
        if operator {
            // Audit records past their own retention.
            statements.sweeps.push(Statement::new(
                format!(
                    "DELETE FROM {t}_audit WHERE id IN (
                       SELECT id FROM {t}_audit WHERE expires_at <= now() LIMIT {SWEEP_BATCH})"
                ),
                &[],
            ));
        }
        let grant = PgGrant {
            acquire,
            labels: operator,
            // Granted, the session names the lease it holds (`lock-core/<owner>/<fence>`, at
            // most 62 bytes, within `application_name`'s 63), for the operator's view to read
            // from `pg_stat_activity`: in the same statement, so in the same round trip.
            advisory_try: format!(
                "SELECT attempt.fence,
                   (SELECT set_config('application_name',
                                      '{prefix}' || $2 || '/' || attempt.fence, false)
                    WHERE attempt.fence IS NOT NULL) AS named
                 FROM (SELECT CASE WHEN pg_try_advisory_lock($1) THEN nextval('{t}_fence') END
                         AS fence) AS attempt",
                prefix = super::operator::SESSION_NAME_PREFIX,
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
        // The waiters' wake-ups, and the revocations of this process's leases.
        listener
            .listen_all([table, wake.revoked.as_str()])
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
        let mut query = sqlx::query_as(&grant.acquire)
            .bind(&ask.lock_key)
            .bind(&ask.name)
            .bind(&ask.owner)
            .bind(owner_host())
            .bind(owner_pid())
            .bind(ask.ttl);
        if grant.labels {
            query = query.bind(&ask.label);
        }
        let (fence, left): (Option<i64>, Option<i64>) = query.fetch_one(&pool).await?;
        Ok(match fence {
            Some(fence) => Outcome::Granted { fence, sent },
            None => Outcome::Busy(left),
        })
    }

    // ---- The stock tables

    const NOW_US: &'static str = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)";

    const STOCK_MIGRATION: &'static str =
        include_str!("../../migrations/postgres/0002_lock_core_stock.sql");

    fn int(expr: &str) -> String {
        format!("CAST({expr} AS BIGINT)")
    }

    fn restock(prefix: &str) -> String {
        format!(
            "INSERT INTO {prefix}_levels (sku, available, reserved, sold, received, version) \
             VALUES (?, ?, 0, 0, ?, 1) ON CONFLICT (sku) DO UPDATE SET \
             available = {prefix}_levels.available + EXCLUDED.available, \
             received = {prefix}_levels.received + EXCLUDED.received, \
             version = {prefix}_levels.version + 1"
        )
    }

    fn sweep_unknown(prefix: &str) -> String {
        format!(
            "DELETE FROM {prefix}_orders WHERE ctid IN (SELECT o.ctid FROM {prefix}_orders o \
             WHERE o.recorded_at < {now} - ? AND NOT EXISTS \
             (SELECT 1 FROM {prefix}_levels l WHERE l.sku = o.sku) LIMIT 1000)",
            now = Self::NOW_US
        )
    }

    fn delete_batch(prefix: &str, condition: &str) -> String {
        format!(
            "DELETE FROM {prefix}_orders WHERE ctid IN (SELECT ctid FROM {prefix}_orders \
             WHERE {condition} LIMIT 1000)"
        )
    }

    // ---- The recovery points

    const POINTS_MIGRATION: &'static str = "CREATE TABLE IF NOT EXISTS lock_core_recovery_points (
  key        text COLLATE \"C\" PRIMARY KEY,
  entry      bytea NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS lock_core_recovery_points_expires_at ON lock_core_recovery_points (expires_at)";

    /// `find` and `record` bind the key (`record`: then the entry and the keep in µs) and
    /// `record` returns a row when it wrote.
    fn points_statements(t: &str) -> PointsStatements {
        PointsStatements {
            find: Self::live_entry(t, "key"),
            // The insert's conflict clause takes an expired point's place.
            clear_expired: None,
            // An insert on the primary key: a second execution's insert waits for the first
            // one's transaction, then finds its row (and writes nothing) if it committed, or
            // writes its own if it rolled back. An expired point gives way.
            record: format!(
                "INSERT INTO {t} AS r (key, entry, expires_at)
             VALUES ($1, $2, now() + $3::float8 * interval '1 microsecond')
             ON CONFLICT (key) DO UPDATE SET entry = EXCLUDED.entry, expires_at = EXCLUDED.expires_at
             WHERE r.expires_at <= now()
             RETURNING 1"
            ),
            purge_batch: Statement::new(Self::purge_expired(t, "key"), &[]),
        }
    }

    fn point_key(key: &str) -> Cow<'_, str> {
        Cow::Borrowed(key)
    }

    async fn find_point(
        pool: &PgPool,
        find: &str,
        stored_key: &str,
    ) -> std::result::Result<Option<Vec<u8>>, sqlx::Error> {
        recovery::read_point(pool, find, stored_key).await
    }

    /// `Ok(Some(None))` if the point there expired between the two statements.
    async fn record_point(
        sql: &PointsStatements,
        connection: &mut PgConnection,
        point: Point<'_>,
    ) -> Result<Option<Option<Vec<u8>>>> {
        let written: Option<i32> = sqlx::query_scalar(&sql.record)
            .bind(point.key)
            .bind(point.entry)
            .bind(point.keep)
            .fetch_optional(&mut *connection)
            .await
            .map_err(|e| to_lock_error(Self::BACKEND, e))?;
        if written.is_some() {
            return Ok(None);
        }
        let there = recovery::read_point(connection, &sql.find, point.key).await;
        Ok(Some(there.map_err(|e| to_lock_error(Self::BACKEND, e))?))
    }

    // ---- Completing a claim in the application's transaction

    fn postgres_connection(connection: &mut PgConnection) -> Option<&mut PgConnection> {
        Some(connection)
    }
}

/// PostgreSQL's own statements: the grant, and the advisory backend's.
pub struct PgGrant {
    acquire: String,
    /// The grant binds the holder's label (the table has the operator's schema).
    labels: bool,
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
