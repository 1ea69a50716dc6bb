//! The conformance suite on a real MySQL / MariaDB server, plus MySQL-specific checks.
//!
//! The server comes from `LOCK_TEST_MYSQL_URL` (`cargo xtask test` starts one and sets it).
//! Without it the suite fails when `LOCK_TEST_REQUIRE_SERVERS=1` or `CI` is set, and otherwise
//! says loudly that it skipped.

use std::sync::Mutex;
use std::time::Duration;

use lock_core::{LockClient, MySqlBackend};

use crate::conformance::{self, conformance_suite, unique_key, Harness};
use crate::sql_support::{
    announce_and_wait, bad_settings_are_typed, hold_request, server_url, sql_suite, sweep_case,
    SqlHarness,
};

const URL_ENV: &str = "LOCK_TEST_MYSQL_URL";

struct Mysql {
    url: String,
    admin: MySqlBackend,
    /// Every backend handed out, to count their waiters.
    backends: Mutex<Vec<MySqlBackend>>,
}

async fn mysql() -> Option<Mysql> {
    mysql_at(URL_ENV).await
}

/// The harness on the server whose URL is in `var`.
async fn mysql_at(var: &str) -> Option<Mysql> {
    let url = server_url(var)?;
    let admin = MySqlBackend::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("cannot reach MySQL at {url}: {e}"));
    Some(Mysql {
        url,
        admin,
        backends: Mutex::new(Vec::new()),
    })
}

impl Harness for Mysql {
    async fn client(&self) -> LockClient {
        let backend = MySqlBackend::connect(&self.url).await.unwrap();
        self.backends.lock().unwrap().push(backend.clone());
        conformance::client_on(backend)
    }

    async fn delete_behind(&self, full_key: &str) {
        let deleted = sqlx::query("DELETE FROM lock_core_locks WHERE lock_key = ?")
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

impl SqlHarness for Mysql {
    const CHILD_HOLDER: &'static str = "mysql::child_holder";

    async fn lock_row(&self, full_key: &str) -> (u32, u64, i32) {
        let (pid, fence, entries): (i32, u64, i32) = sqlx::query_as(
            "SELECT owner_pid, fence, entry_count FROM lock_core_locks WHERE lock_key = ?",
        )
        .bind(full_key)
        .fetch_one(self.admin.pool())
        .await
        .unwrap();
        (u32::try_from(pid).unwrap(), fence, entries)
    }

    async fn row_left_us(&self, full_key: &str) -> i64 {
        sqlx::query_scalar(
            "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) \
             FROM lock_core_locks WHERE lock_key = ?",
        )
        .bind(full_key)
        .fetch_one(self.admin.pool())
        .await
        .unwrap()
    }

    async fn stored_key_and_name(&self, full_key: &str) -> (Vec<u8>, Vec<u8>) {
        // `_bin` collations make the driver report both columns as binary.
        sqlx::query_as("SELECT lock_key, name FROM lock_core_locks WHERE name = ?")
            .bind(full_key)
            .fetch_one(self.admin.pool())
            .await
            .unwrap()
    }
}

conformance_suite!(mysql());

/// The conformance suite again over TLS (feature `mysql-tls`), on the stack's TLS server
/// (`LOCK_TEST_MYSQL_TLS_URL`: `ssl-mode=VERIFY_IDENTITY`, the stack's CA as `ssl-ca`, a user
/// with a password and `REQUIRE SSL`): every connection of every backend verified and
/// encrypted. The TLS settings' own checks are in `sql_tls`.
#[cfg(feature = "mysql-tls")]
mod tls {
    use super::mysql_at;
    use crate::conformance::conformance_suite;

    conformance_suite!(mysql_at(crate::sql_tls::MYSQL_TLS_URL_ENV));
}
sql_suite!(mysql());

/// Runs only as the holder process that the kill test starts (see `sql_support`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_holder() {
    let Some((_, key)) = hold_request() else {
        return;
    };
    let backend = MySqlBackend::connect(&server_url(URL_ENV).unwrap())
        .await
        .unwrap();
    let locks = LockClient::builder(backend)
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

/// Names are compared byte for byte: MySQL's usual collations would make `Key`, `key` and
/// `key ` one lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_differing_in_case_or_trailing_space_are_different_locks() {
    let Some(h) = mysql().await else { return };
    let base = unique_key("case");
    let a = h.client().await;
    let lower = a
        .lock(format!("{base}:key"))
        .try_acquire()
        .await
        .unwrap()
        .expect("lower");
    let b = h.client().await;
    for other in [format!("{base}:KEY"), format!("{base}:key ")] {
        let guard = b.lock(&other).try_acquire().await.unwrap();
        assert!(
            guard.is_some(),
            "{other:?} collided with {:?}",
            lower.key().name()
        );
    }
    lower.release().await.unwrap();
}

/// Bad settings and an unreachable server are typed errors, quickly.
#[tokio::test]
async fn bad_settings_and_unreachable_server() {
    bad_settings_are_typed(
        MySqlBackend::builder("mysql://root@127.0.0.1:1/locks")
            .response_timeout(Duration::from_millis(300))
            .connect(),
        MySqlBackend::connect("not a url"),
        MySqlBackend::builder("mysql://127.0.0.1/x")
            .table("locks; DROP TABLE users")
            .connect(),
    )
    .await;
}

/// Lock rows of crashed holders and counters of names unused for longer than the retention are
/// swept; a held lock's rows stay; a counter created again starts past every earlier token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_rows_are_swept_and_tokens_still_increase() {
    let Some(h) = mysql().await else {
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
    let pool = h.admin.pool().clone();
    let count = |table: &'static str, full: &str| {
        let (key, pool) = (lock_core::sql::storage_key(full), pool.clone());
        async move {
            let sql = format!("SELECT COUNT(*) FROM {table} WHERE lock_key = ?");
            sqlx::query_scalar::<_, i64>(&sql)
                .bind(key)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    for full in [&released_full, &crashed_full] {
        let key = lock_core::sql::storage_key(full);
        sqlx::query(
            "UPDATE lock_core_locks_fence \
             SET touched_at = UTC_TIMESTAMP(6) - INTERVAL 2 DAY WHERE lock_key = ?",
        )
        .bind(&key)
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query(
            "UPDATE lock_core_locks SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 2 DAY \
             WHERE lock_key = ?",
        )
        .bind(&key)
        .execute(&pool)
        .await
        .unwrap();
    }
    // The crashed holder's row and both counters.
    assert!(h.admin.sweep_expired().await.unwrap() >= 3);
    for full in [&released_full, &crashed_full] {
        assert_eq!(count("lock_core_locks", full).await, 0, "{full}");
        assert_eq!(count("lock_core_locks_fence", full).await, 0, "{full}");
    }
    assert_eq!(count("lock_core_locks", case.holding.key().full()).await, 1);
    assert_eq!(
        count("lock_core_locks_fence", case.holding.key().full()).await,
        1
    );
    case.assert_tokens_still_increase(&client).await;
}

/// A backend on the application's pool (at the server's default isolation, `REPEATABLE
/// READ`): the shipped migration creates the tables (and is idempotent), `create_schema(false)`
/// creates nothing, and locks work on the shared pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_from_an_existing_pool() {
    let Some(url) = server_url(URL_ENV) else {
        return;
    };
    let pool = sqlx::mysql::MySqlPoolOptions::new()
        .max_connections(4)
        .connect(&url)
        .await
        .unwrap();
    for _ in 0..2 {
        sqlx::raw_sql(MySqlBackend::MIGRATION)
            .execute(&pool)
            .await
            .unwrap();
    }
    let backend = MySqlBackend::builder_from_pool(pool.clone())
        .create_schema(false)
        .connect()
        .await
        .unwrap();
    let other = MySqlBackend::from_pool(pool.clone()).await.unwrap();
    let (a, b) = (LockClient::new(backend), LockClient::new(other));
    let key = unique_key("from-pool");
    let held = a.lock(&key).await.unwrap();
    let fence = held.fencing_token();
    assert!(b.lock(&key).try_acquire().await.unwrap().is_none());
    held.release().await.unwrap();
    let next = b.lock(&key).await.unwrap();
    assert!(next.fencing_token() > fence);
    next.release().await.unwrap();

    // Opting out creates nothing: a missing table is an error at the first lock, not a table.
    let table = format!("lock_core_absent_{}", std::process::id());
    let bare = MySqlBackend::builder_from_pool(pool.clone())
        .table(&table)
        .create_schema(false)
        .connect()
        .await
        .unwrap();
    assert!(LockClient::new(bare).lock("x").try_acquire().await.is_err());
    let tables: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_name = ?",
    )
    .bind(&table)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(tables, 0);
}
