//! The conformance suite on a real MySQL / MariaDB server, plus MySQL-specific checks.
//!
//! The server comes from `LOCK_TEST_MYSQL_URL` (`cargo xtask test` starts one and sets it).
//! Without it the suite fails when `LOCK_TEST_REQUIRE_SERVERS=1` or `CI` is set, and otherwise
//! says loudly that it skipped.

use std::time::Duration;

use lock_core::{LeaseMode, LockClient, LostReason, MySqlBackend};
use tokio::time::timeout;

use crate::conformance::{conformance_suite, unique_key, Harness};
use crate::sql_support::{
    bad_settings_of, hold, holder_backend, server_url, sql_kind, sql_suite, SharedPool, SqlServer,
};

sql_kind!(sqlx::MySql {
    backend: MySqlBackend,
    name: "MySQL",
    url_env: "LOCK_TEST_MYSQL_URL",
    child_holder: "mysql::child_holder",
    pool_options: sqlx::mysql::MySqlPoolOptions,
    tables: &["lock_core_locks", "lock_core_locks_fence"],
    // The crashed holder's row and both counters.
    swept_at_least: 3,
    fence: u64,
    // `_bin` collations make the driver report both columns as binary.
    text: Vec<u8>,
    delete: "DELETE FROM lock_core_locks WHERE lock_key = ?",
    lock_row: "SELECT owner_pid, fence, entry_count FROM lock_core_locks WHERE lock_key = ?",
    row_left_us: "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) \
                  FROM lock_core_locks WHERE lock_key = ?",
    key_and_name: "SELECT lock_key, name FROM lock_core_locks WHERE name = ?",
    rows_in: "SELECT COUNT(*) FROM {table} WHERE lock_key = ?",
    age: [
        "UPDATE lock_core_locks_fence \
         SET touched_at = UTC_TIMESTAMP(6) - INTERVAL 2 DAY WHERE lock_key = ?",
        "UPDATE lock_core_locks SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 2 DAY \
         WHERE lock_key = ?",
    ],
    tables_named: "SELECT COUNT(*) FROM information_schema.tables \
                   WHERE table_schema = DATABASE() AND table_name = ?",
    age_audit: "UPDATE lock_core_locks_audit \
                SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE lock_key = ?",
    drop_tables: ["DROP TABLE IF EXISTS {table}, {table}_fence, {table}_audit"],
    columns_named: "SELECT COUNT(*) FROM information_schema.columns \
                    WHERE table_schema = DATABASE() AND table_name = ? AND column_name = ?",
});

type Mysql = SqlServer<sqlx::MySql>;

async fn mysql() -> Option<Mysql> {
    Mysql::stack().await
}

/// The harness on the server whose URL is in `var` (the TLS suite's).
#[cfg_attr(not(feature = "mysql-tls"), allow(dead_code))]
async fn mysql_at(var: &str) -> Option<Mysql> {
    Some(Mysql::on(server_url(var)?).await)
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
    if let Some((_, backend, key)) = holder_backend::<sqlx::MySql>().await {
        hold(backend, &key).await;
    }
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
    bad_settings_of::<sqlx::MySql>("mysql://root@127.0.0.1:1/locks", "mysql://127.0.0.1/x").await;
}

/// A backend on the application's pool (at the server's default isolation, `REPEATABLE
/// READ`): the shipped migration creates the tables (and is idempotent), `create_schema(false)`
/// creates nothing, and locks work on the shared pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_from_an_existing_pool() {
    let Some(shared) = SharedPool::<sqlx::MySql>::stack().await else {
        return;
    };
    let a = LockClient::new(shared.backend.clone());
    let b = LockClient::new(shared.other.clone());
    let key = unique_key("from-pool");
    let held = a.lock(&key).await.unwrap();
    let fence = held.fencing_token();
    assert!(b.lock(&key).try_acquire().await.unwrap().is_none());
    held.release().await.unwrap();
    let next = b.lock(&key).await.unwrap();
    assert!(next.fencing_token() > fence);
    next.release().await.unwrap();
    shared.opting_out_creates_nothing().await;
}

/// MySQL has no server push: a forced release's holder learns at its next renewal, which finds
/// its row gone and reads the audit record, so `lost()` says `Revoked` (not `NotOwner`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocation_is_learned_at_the_next_renewal() {
    let Some(h) = mysql().await else { return };
    let (holder, operator) = (h.client().await, h.client().await);
    assert!(!holder.capabilities().loss_push);
    let key = unique_key("renewal");
    let guard = holder
        .lock(&key)
        .lease(LeaseMode::watchdog(Duration::from_secs(30)))
        .await
        .unwrap();
    let record = operator
        .admin()
        .force_release(&key, "runaway job", "bob@ops")
        .await
        .unwrap();
    assert_eq!(record.old_owner, guard.owner_token());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!guard.is_lost(), "nothing pushes on MySQL");
    // A renewal (here by hand, as the watchdog's first would at 10 s).
    assert!(!guard.extend(Duration::from_secs(30)).await.unwrap());
    let reason = timeout(Duration::from_secs(1), guard.lost())
        .await
        .expect("the renewal found the lease gone");
    assert_eq!(
        reason,
        LostReason::Revoked {
            operator: "bob@ops".into(),
            reason: "runaway job".into()
        }
    );
}
