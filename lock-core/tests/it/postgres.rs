//! The conformance suite on a real PostgreSQL server, for the lock table and (the checks that
//! apply to locks without a lease) for advisory locks, plus PostgreSQL-specific checks.
//!
//! The server comes from `LOCK_TEST_POSTGRES_URL` (`cargo xtask test` starts one and sets it).
//! Without it the suite fails when `LOCK_TEST_REQUIRE_SERVERS=1` or `CI` is set, and otherwise
//! says loudly that it skipped.

use std::time::Duration;

use lock_core::backend::{KeyStatus, Waiters};
use lock_core::{
    LockClient, LockError, LostReason, OwnerToken, PostgresAdvisoryBackend, PostgresBackend,
};
use tokio::time::{timeout, Instant};

use crate::conformance::operator as checks;
use crate::conformance::{client_on, conformance_suite, unique_key, Harness};
use crate::sql_support::{
    bad_settings_of, hold, holder_backend, sql_kind, sql_suite, Holder, SharedPool, SqlServer,
};

const URL_ENV: &str = "LOCK_TEST_POSTGRES_URL";

sql_kind!(sqlx::Postgres {
    backend: PostgresBackend,
    name: "PostgreSQL",
    url_env: URL_ENV,
    child_holder: CHILD_HOLDER,
    pool_options: sqlx::postgres::PgPoolOptions,
    tables: &["lock_core_locks"],
    // The released lock's row and the crashed holder's.
    swept_at_least: 2,
    fence: i64,
    text: String,
    delete: "DELETE FROM lock_core_locks WHERE lock_key = $1",
    lock_row: "SELECT owner_pid, fence, entry_count FROM lock_core_locks WHERE lock_key = $1",
    row_left_us: "SELECT (extract(epoch FROM expires_at - now()) * 1000000)::bigint \
                  FROM lock_core_locks WHERE lock_key = $1",
    key_and_name: "SELECT lock_key, name FROM lock_core_locks WHERE name = $1",
    rows_in: "SELECT count(*) FROM {table} WHERE lock_key = $1",
    age: ["UPDATE lock_core_locks SET expires_at = now() - interval '2 days' WHERE lock_key = $1"],
    tables_named: "SELECT count(to_regclass($1))",
    age_audit: "UPDATE lock_core_locks_audit SET expires_at = now() - interval '1 second' \
                WHERE lock_key = $1",
    drop_tables: [
        "DROP TABLE IF EXISTS {table}, {table}_audit",
        "DROP SEQUENCE IF EXISTS {table}_fence",
    ],
    columns_named: "SELECT count(*) FROM pg_attribute \
                    WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped",
});

/// The lock table.
type Postgres = SqlServer<sqlx::Postgres>;

async fn postgres() -> Option<Postgres> {
    Postgres::stack().await
}

/// Advisory locks, on the same server.
struct Advisory(Postgres);

async fn advisory_locks() -> Option<Advisory> {
    Some(Advisory(postgres().await?))
}

impl Harness for Advisory {
    async fn client(&self) -> LockClient {
        client_on(self.0.backend().await.advisory())
    }

    async fn delete_behind(&self, _full_key: &str) {
        panic!("advisory locks cannot be deleted, only their session ended");
    }

    async fn queued(&self, full_key: &str) -> usize {
        self.0.queued(full_key).await
    }
}

conformance_suite!(postgres());
sql_suite!(postgres());

/// The conformance suite again over TLS (feature `postgres-tls`), on the stack's TLS server,
/// logged in with a client certificate (`sslmode=verify-full`, the stack's CA as
/// `sslrootcert`, `sslcert` and `sslkey`): every connection of every backend verified, both
/// ways, and encrypted. (A password login is checked in `sql_tls`; its SCRAM exchange takes
/// ~80 ms per connection in this unoptimized test build, which the suite's timing checks would
/// feel.) The TLS settings' own checks are in `sql_tls`.
#[cfg(feature = "postgres-tls")]
mod tls {
    use crate::conformance::conformance_suite;

    async fn harness() -> Option<super::Postgres> {
        let url = crate::sql_tls::postgres_certificate_url()?;
        Some(super::Postgres::on(url).await)
    }

    conformance_suite!(harness());
}

/// Advisory locks have no lease: the checks about expiry and deleting behind the holder's back
/// do not apply (`advisory_session_end_fires_lost` below is their counterpart).
mod advisory {
    use super::advisory_locks;
    use crate::conformance::conformance_suite;

    conformance_suite!(@tests advisory_locks();
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
    let Some((mode, backend, key)) = holder_backend::<sqlx::Postgres>().await else {
        return;
    };
    match mode.as_str() {
        "advisory" => hold(backend.advisory(), &key).await,
        _ => hold(backend, &key).await,
    }
}

/// Ending the session that holds an advisory lock (`pg_terminate_backend`) fires `lost()`
/// at once, and the lock is free for the next owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advisory_session_end_fires_lost() {
    let Some(h) = advisory_locks().await else {
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
    .fetch_all(h.0.pool())
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
    let Some(h) = advisory_locks().await else {
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
    bad_settings_of::<sqlx::Postgres>(
        "postgres://postgres@127.0.0.1:1/postgres",
        "postgres://127.0.0.1/x",
    )
    .await;
}

/// Two backends creating the same schema at once both succeed, and a custom table works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_creation_is_idempotent() {
    let Some(h) = postgres().await else {
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
        format!("DROP TABLE {table}, {table}_audit"),
        format!("DROP SEQUENCE {table}_fence"),
    ] {
        sqlx::query(&statement).execute(one.pool()).await.unwrap();
    }
}

/// A backend on the application's pool: the shipped migration creates the table (and is
/// idempotent), `create_schema(false)` creates nothing, and locks, wake-ups and advisory
/// locks work on the shared pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_from_an_existing_pool() {
    let Some(shared) = SharedPool::<sqlx::Postgres>::stack().await else {
        return;
    };
    let (pool, backend, other) = (&shared.pool, &shared.backend, &shared.other);
    let (a, b) = (
        LockClient::new(backend.clone()),
        LockClient::new(other.clone()),
    );
    let key = unique_key("from-pool");
    let held = a.lock(&key).await.unwrap();
    let owner: String = sqlx::query_scalar("SELECT owner FROM lock_core_locks WHERE name = $1")
        .bind(held.key().full())
        .fetch_one(pool)
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

    shared.opting_out_creates_nothing().await;
}

/// A forced release reaches the holder's process at once (`NOTIFY <table>_revoked` from the
/// release's transaction), long before the first renewal of a 30 s lease (at 10 s) would find
/// the lease gone: `lost()` fires with `Revoked` within 2 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocation_is_pushed_long_before_the_first_renewal() {
    let Some(h) = postgres().await else {
        return;
    };
    let (holder, operator) = (h.client().await, h.client().await);
    checks::a_revocation_is_pushed_within_a_round_trip(&holder, &operator).await;
}

/// A grant by a client of an older version writes no label (nor whose it is): the row's label
/// column still holds the previous holder's, which is not shown as the new holder's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_that_writes_no_label_does_not_show_the_previous_holders() {
    let Some(h) = postgres().await else {
        return;
    };
    let client = h.client().await;
    let admin = client.admin();
    let key = unique_key("older-client");
    let guard = client.lock(&key).await.unwrap();
    let full = guard.key().full().to_owned();
    assert_eq!(
        admin.inspect(&key).await.unwrap().holders[0].label.as_ref(),
        Some(client.label())
    );
    assert!(guard.release().await.unwrap());
    // What an older version's grant does to the free row: everything but the label columns.
    let stranger = OwnerToken::random().unwrap();
    sqlx::query(
        "UPDATE lock_core_locks SET owner = $2, fence = nextval('lock_core_locks_fence'), \
         acquired_at = now(), expires_at = now() + interval '30 seconds' WHERE lock_key = $1",
    )
    .bind(lock_core::sql::storage_key(&full))
    .bind(stranger.to_hex())
    .execute(h.pool())
    .await
    .unwrap();
    let seen = admin.inspect(&key).await.unwrap();
    assert_eq!(seen.holders[0].owner, stranger);
    assert_eq!(seen.holders[0].label, None);
    let record = admin.force_release(&key, "test over", "ops").await.unwrap();
    assert_eq!((record.old_owner, record.old_label), (stranger, None));
}

/// The operator's view of advisory locks: a held lock shows its owner and fencing token (the
/// holding session's name says them), with no label or lease; a free one shows free; listing
/// and forced release are refused, and the audit trail is empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advisory_inspection_names_the_holder_and_force_is_refused() {
    let Some(h) = advisory_locks().await else {
        return;
    };
    let client = h.client().await;
    let admin = client.admin();
    let key = unique_key("advisory-inspect");
    assert_eq!(admin.inspect(&key).await.unwrap().status, KeyStatus::Free);
    let guard = client.lock(&key).await.unwrap();
    let seen = admin.inspect(&key).await.unwrap();
    assert_eq!(seen.status, KeyStatus::Held);
    assert_eq!(seen.waiters, Waiters::NotKept);
    let [view] = seen.holders.as_slice() else {
        panic!("one holder: {seen:?}");
    };
    assert_eq!(view.owner, guard.owner_token());
    assert_eq!(view.fencing_token, guard.fencing_token());
    assert_eq!((view.label.as_ref(), view.lease_left), (None, None));
    match admin.force_release(&key, "why", "ops").await {
        Err(LockError::Unsupported { backend, primitive }) => {
            assert_eq!(backend, "postgres-advisory");
            assert_eq!(
                primitive,
                "forced release (an advisory lock belongs to its session)"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        admin.list("", None, 10).await,
        Err(LockError::Unsupported { .. })
    ));
    assert!(admin.audit(Some(&key), 10).await.unwrap().is_empty());
    assert!(!guard.is_lost());
    assert!(guard.release().await.unwrap());
    assert_eq!(admin.inspect(&key).await.unwrap().status, KeyStatus::Free);
}
