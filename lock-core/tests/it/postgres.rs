//! The conformance suite on a real PostgreSQL server, for the lock table and (the checks that
//! apply to locks without a lease) for advisory locks, plus PostgreSQL-specific checks.
//!
//! The server comes from `LOCK_TEST_POSTGRES_URL` (`cargo xtask test` starts one and sets it).
//! Without it the suite fails when `LOCK_TEST_REQUIRE_SERVERS=1` or `CI` is set, and otherwise
//! says loudly that it skipped.

use std::sync::Mutex;
use std::time::Duration;

use lock_core::{LockClient, LostReason, PostgresAdvisoryBackend, PostgresBackend};
use tokio::time::{timeout, Instant};

use crate::conformance::{conformance_suite, unique_key, Harness};
use crate::sql_support::{
    announce_and_wait, bad_settings_are_typed, hold_request, server_url, sql_suite, sweep_case,
    Holder, SqlHarness,
};

const URL_ENV: &str = "LOCK_TEST_POSTGRES_URL";

struct Postgres {
    url: String,
    admin: PostgresBackend,
    advisory: bool,
    /// Every backend handed out, to count their waiters.
    backends: Mutex<Vec<PostgresBackend>>,
}

async fn postgres(advisory: bool) -> Option<Postgres> {
    Some(postgres_on(server_url(URL_ENV)?, advisory).await)
}

/// The harness on the server at `url`.
async fn postgres_on(url: String, advisory: bool) -> Postgres {
    let admin = PostgresBackend::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("cannot reach PostgreSQL at {url}: {e}"));
    Postgres {
        url,
        admin,
        advisory,
        backends: Mutex::new(Vec::new()),
    }
}

impl Harness for Postgres {
    async fn client(&self) -> LockClient {
        let backend = PostgresBackend::connect(&self.url).await.unwrap();
        self.backends.lock().unwrap().push(backend.clone());
        let builder = if self.advisory {
            LockClient::builder(backend.advisory())
        } else {
            LockClient::builder(backend)
        };
        builder.namespace("conformance").build().unwrap()
    }

    async fn delete_behind(&self, full_key: &str) {
        assert!(
            !self.advisory,
            "advisory locks cannot be deleted, only their session ended"
        );
        let deleted = sqlx::query("DELETE FROM lock_core_locks WHERE lock_key = $1")
            .bind(lock_core::sql::storage_key(full_key))
            .execute(self.admin.pool())
            .await
            .unwrap()
            .rows_affected();
        assert_eq!(deleted, 1, "nothing to delete");
    }

    async fn queued(&self, full_key: &str) -> usize {
        let backends = self.backends.lock().unwrap().clone();
        backends.iter().map(|b| b.waiters(full_key)).sum()
    }
}

impl SqlHarness for Postgres {
    const CHILD_HOLDER: &'static str = CHILD_HOLDER;

    async fn lock_row(&self, full_key: &str) -> (u32, u64, i32) {
        let (pid, fence, entries): (i32, i64, i32) = sqlx::query_as(
            "SELECT owner_pid, fence, entry_count FROM lock_core_locks WHERE lock_key = $1",
        )
        .bind(full_key)
        .fetch_one(self.admin.pool())
        .await
        .unwrap();
        (
            u32::try_from(pid).unwrap(),
            u64::try_from(fence).unwrap(),
            entries,
        )
    }

    async fn row_left_us(&self, full_key: &str) -> i64 {
        sqlx::query_scalar(
            "SELECT (extract(epoch FROM expires_at - now()) * 1000000)::bigint \
             FROM lock_core_locks WHERE lock_key = $1",
        )
        .bind(full_key)
        .fetch_one(self.admin.pool())
        .await
        .unwrap()
    }

    async fn stored_key_and_name(&self, full_key: &str) -> (Vec<u8>, Vec<u8>) {
        let (stored, name): (String, String) =
            sqlx::query_as("SELECT lock_key, name FROM lock_core_locks WHERE name = $1")
                .bind(full_key)
                .fetch_one(self.admin.pool())
                .await
                .unwrap();
        (stored.into_bytes(), name.into_bytes())
    }
}

conformance_suite!(postgres(false));
sql_suite!(postgres(false));

/// The conformance suite again over TLS (feature `postgres-tls`), on the stack's TLS server,
/// logged in with a client certificate (`sslmode=verify-full`, the stack's CA as
/// `sslrootcert`, `sslcert` and `sslkey`): every connection of every backend verified, both
/// ways, and encrypted. (A password login is checked in `sql_tls`; its SCRAM exchange takes
/// ~80 ms per connection in this unoptimized test build, which the suite's timing checks would
/// feel.) The TLS settings' own checks are in `sql_tls`.
#[cfg(feature = "postgres-tls")]
mod tls {
    use super::postgres_on;
    use crate::conformance::conformance_suite;

    async fn harness() -> Option<super::Postgres> {
        let url = crate::sql_tls::postgres_certificate_url()?;
        Some(postgres_on(url, false).await)
    }

    conformance_suite!(harness());
}

/// Advisory locks have no lease: the checks about expiry and deleting behind the holder's back
/// do not apply (`advisory_session_end_fires_lost` below is their counterpart).
mod advisory {
    use super::postgres;
    use crate::conformance::conformance_suite;

    conformance_suite!(@tests postgres(true);
        exclusion, try_on_held_key, wait_timeout, wakeup_latency, crashed_holder_expires,
        watchdog_holds_past_ttl, fencing_increases, reentrancy, cancelled_waiter_leaves_nothing,
        dropped_acquires_leave_nothing, dropped_releases_still_release, bad_input_is_typed,
        shutdown_releases_every_lease);
}

/// `child_holder`'s name in the test binary, for [`Holder::start`].
const CHILD_HOLDER: &str = "postgres::child_holder";

/// Runs only as the holder process that the kill tests start (see `sql_support`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_holder() {
    let Some((mode, key)) = hold_request() else {
        return;
    };
    let backend = PostgresBackend::connect(&server_url(URL_ENV).unwrap())
        .await
        .unwrap();
    let locks = match mode.as_str() {
        "advisory" => LockClient::builder(backend.advisory()),
        _ => LockClient::builder(backend),
    }
    .namespace("conformance")
    .build()
    .unwrap();
    let guard = locks
        .lock(&key)
        .lease(lock_core::LeaseMode::watchdog(Duration::from_millis(1500)))
        .await
        .unwrap();
    announce_and_wait(guard).await;
}

/// Ending the session that holds an advisory lock (`pg_terminate_backend`) fires `lost()`
/// at once, and the lock is free for the next owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advisory_session_end_fires_lost() {
    let Some(h) = postgres(true).await else {
        return;
    };
    let key = unique_key("terminate");
    let (a, b) = (h.client().await, h.client().await);
    let guard = a.lock(&key).await.unwrap();
    assert!(b.lock(&key).try_acquire().await.unwrap().is_none());
    let number = PostgresAdvisoryBackend::advisory_key(guard.key().full());
    let terminated: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' \
         AND objsubid = 1 AND granted AND ((classid::bigint << 32) | objid::bigint) = $1",
    )
    .bind(number)
    .fetch_all(h.admin.pool())
    .await
    .unwrap();
    assert_eq!(terminated, vec![true], "exactly one session held it");
    let reason = timeout(Duration::from_secs(5), guard.lost())
        .await
        .expect("lost() did not fire");
    assert!(matches!(reason, LostReason::SessionLost(_)), "{reason:?}");
    let next = b
        .lock(&key)
        .acquire_within(Duration::from_secs(5))
        .await
        .unwrap()
        .expect("free after the session ended");
    assert!(next.fencing_token() > guard.fencing_token());
    assert!(!guard.release().await.unwrap(), "a lost lock released");
    next.release().await.unwrap();
}

/// A killed process's advisory lock is free as soon as the server sees its connection close,
/// with no lease to wait out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advisory_killed_holder_frees_at_once() {
    let Some(h) = postgres(true).await else {
        return;
    };
    let key = unique_key("advisory-killed");
    let holder = Holder::start(CHILD_HOLDER, "advisory", &key).await;
    let next = h.client().await;
    assert!(next.lock(&key).try_acquire().await.unwrap().is_none());
    holder.kill().await;
    let killed_at = Instant::now();
    let guard = next
        .lock(&key)
        .acquire_within(Duration::from_secs(5))
        .await
        .unwrap()
        .expect("never freed");
    assert!(
        killed_at.elapsed() < Duration::from_secs(1),
        "{:?}",
        killed_at.elapsed()
    );
    guard.release().await.unwrap();
}

/// Bad settings and an unreachable server are typed errors, quickly.
#[tokio::test]
async fn bad_settings_and_unreachable_server() {
    bad_settings_are_typed(
        PostgresBackend::builder("postgres://postgres@127.0.0.1:1/postgres")
            .response_timeout(Duration::from_millis(300))
            .connect(),
        PostgresBackend::connect("not a url"),
        PostgresBackend::builder("postgres://127.0.0.1/x")
            .table("locks; DROP TABLE users")
            .connect(),
    )
    .await;
}

/// Two backends creating the same schema at once both succeed, and a custom table works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_creation_is_idempotent() {
    let Some(h) = postgres(false).await else {
        return;
    };
    let table = format!("lock_core_schema_{}", std::process::id());
    let connect = || {
        PostgresBackend::builder(h.url.clone())
            .table(table.clone())
            .connect()
    };
    let (one, two) = tokio::join!(connect(), connect());
    let (one, _two) = (one.unwrap(), two.unwrap());
    let locks = LockClient::new(one.clone());
    let guard = locks.lock("k").await.unwrap();
    assert!(guard.release().await.unwrap());
    for statement in [
        format!("DROP TABLE {table}"),
        format!("DROP SEQUENCE {table}_fence"),
    ] {
        sqlx::query(&statement).execute(one.pool()).await.unwrap();
    }
}

/// Rows of locks unused for longer than the retention are swept (a released one, and a
/// crashed holder's); a held lock's row stays; fencing tokens still increase afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_rows_are_swept_and_tokens_still_increase() {
    let Some(h) = postgres(false).await else {
        return;
    };
    let client = h.client().await;
    let keys = [
        unique_key("swept"),
        unique_key("swept-crash"),
        unique_key("kept"),
    ];
    let case = sweep_case(&client, keys).await;
    let (released_full, crashed_full) = (case.released_full.clone(), case.crashed_full.clone());
    let rows = |full: &str| {
        let key = lock_core::sql::storage_key(full);
        let pool = h.admin.pool().clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT count(*) FROM lock_core_locks WHERE lock_key = $1")
                .bind(key)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    for full in [&released_full, &crashed_full] {
        sqlx::query(
            "UPDATE lock_core_locks SET expires_at = now() - interval '2 days' WHERE lock_key = $1",
        )
        .bind(lock_core::sql::storage_key(full))
        .execute(h.admin.pool())
        .await
        .unwrap();
    }
    assert!(h.admin.sweep_expired().await.unwrap() >= 2);
    assert_eq!(rows(&released_full).await, 0);
    assert_eq!(rows(&crashed_full).await, 0);
    assert_eq!(
        rows(case.holding.key().full()).await,
        1,
        "a held lock was swept"
    );
    case.assert_tokens_still_increase(&client).await;
}

/// A backend on the application's pool: the shipped migration creates the table (and is
/// idempotent), `create_schema(false)` creates nothing, and locks, wake-ups and advisory
/// locks work on the shared pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_from_an_existing_pool() {
    let Some(url) = server_url(URL_ENV) else {
        return;
    };
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .connect(&url)
        .await
        .unwrap();
    sqlx::raw_sql(PostgresBackend::MIGRATION)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::raw_sql(PostgresBackend::MIGRATION)
        .execute(&pool)
        .await
        .unwrap();
    let backend = PostgresBackend::builder_from_pool(pool.clone())
        .create_schema(false)
        .connect()
        .await
        .unwrap();
    let other = PostgresBackend::from_pool(pool.clone()).await.unwrap();
    let (a, b) = (
        LockClient::new(backend.clone()),
        LockClient::new(other.clone()),
    );
    let key = unique_key("from-pool");
    let held = a.lock(&key).await.unwrap();
    let owner: String = sqlx::query_scalar("SELECT owner FROM lock_core_locks WHERE name = $1")
        .bind(held.key().full())
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(owner.len(), 32);
    let waiter = tokio::spawn(async move {
        let started = Instant::now();
        b.lock(&key).await.unwrap().release().await.unwrap();
        started.elapsed()
    });
    let full = held.key().full().to_owned();
    tokio::time::timeout(Duration::from_secs(10), async {
        while other.waiters(&full) == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the waiter queued");
    held.release().await.unwrap();
    let waited = waiter.await.unwrap();
    assert!(
        waited < Duration::from_millis(900),
        "woken after {waited:?}"
    );
    let advisory = LockClient::new(backend.advisory());
    advisory
        .lock(unique_key("from-pool-advisory"))
        .await
        .unwrap()
        .release()
        .await
        .unwrap();

    // Opting out creates nothing: a missing table is an error at the first lock, not a table.
    let table = format!("lock_core_absent_{}", std::process::id());
    let bare = PostgresBackend::builder_from_pool(pool.clone())
        .table(&table)
        .create_schema(false)
        .connect()
        .await
        .unwrap();
    assert!(LockClient::new(bare).lock("x").try_acquire().await.is_err());
    let exists: Option<String> = sqlx::query_scalar("SELECT to_regclass($1)::text")
        .bind(&table)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(exists, None);
}
