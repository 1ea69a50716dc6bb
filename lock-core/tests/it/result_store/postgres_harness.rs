//! The PostgreSQL result store's harness for the suite in `result_store.rs`, and the checks
//! only it has: purging expired rows, a table from its migration on a shared pool, pushes
//! after the listening connection is lost, entries too large to push.

use std::time::Duration;

use lock_core::results::{Replace, ResultStore};
use lock_core::sql::PostgresResultStore;
use lock_core::LockError;

use super::{entry, get, key, next_push, put, until_gone, Harness, KEEP, PUSH_WAIT};

pub(crate) struct Postgres(String);

impl Harness for Postgres {
    type Store = PostgresResultStore;

    /// A store on a pool of its own.
    async fn open(&self) -> PostgresResultStore {
        PostgresResultStore::connect(&self.0).await.unwrap()
    }
}

pub(crate) async fn postgres() -> Option<Postgres> {
    lock_testing::server_url("LOCK_TEST_POSTGRES_URL")
        .unwrap_or_else(|e| panic!("{e}"))
        .map(Postgres)
}

/// Which of `keys` have a row in `store`'s table, expired or not.
async fn rows(store: &PostgresResultStore, keys: &[&lock_core::LockKey]) -> Vec<String> {
    let keys: Vec<&str> = keys.iter().map(|k| k.full()).collect();
    let sql = format!(
        "SELECT key FROM {} WHERE key = ANY($1) ORDER BY key",
        store.table()
    );
    sqlx::query_scalar(&sql)
        .bind(keys)
        .fetch_all(store.pool())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_expired_deletes_only_expired_rows() {
    let Some(harness) = postgres().await else {
        return;
    };
    let pool = sqlx::PgPool::connect(&harness.0).await.unwrap();
    let store = PostgresResultStore::from_pool(pool).await.unwrap();
    let (a, b, c) = (key("purge-a"), key("purge-b"), key("purge-c"));
    let short = Duration::from_millis(200);
    assert!(put(&store, &a, ('V', 1, "a"), short, Replace::Older).await);
    assert!(put(&store, &b, ('V', 1, "b"), short, Replace::Older).await);
    assert!(put(&store, &c, ('V', 1, "c"), KEEP, Replace::Older).await);
    until_gone(&store, &a).await;
    until_gone(&store, &b).await;
    assert_eq!(
        rows(&store, &[&a, &b, &c]).await.len(),
        3,
        "expired rows stay until purged"
    );
    // Other cases may leave expired rows of their own behind: at least these two.
    assert!(store.purge_expired().await.unwrap() >= 2);
    assert_eq!(rows(&store, &[&a, &b, &c]).await, [c.full()]);
    assert_eq!(get(&store, &c).await, Some(entry('V', 1, "c")));
}

/// A table name no other test or run uses.
fn unique_table() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("results_test_{}_{nanos}", std::process::id())
}

async fn drop_table(store: &PostgresResultStore) {
    sqlx::raw_sql(&format!("DROP TABLE {}", store.table()))
        .execute(store.pool())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_from_the_migration_with_a_shared_pool() {
    let Some(harness) = postgres().await else {
        return;
    };
    let table = unique_table();
    let store = PostgresResultStore::builder(&harness.0)
        .table(&table)
        .create_table(false)
        .connect()
        .await
        .unwrap();
    let key = key("migrated");
    let missing = store.get(&key).await.unwrap_err();
    assert!(missing.is_unavailable(), "no table yet: {missing}");
    let migration = PostgresResultStore::migration(&table).unwrap();
    sqlx::raw_sql(&migration)
        .execute(store.pool())
        .await
        .unwrap();
    // A second store on the same pool, pushed to by the first.
    let waiter = PostgresResultStore::builder_from_pool(store.pool().clone())
        .table(&table)
        .create_table(false)
        .connect()
        .await
        .unwrap();
    let (mut watch, there) = waiter.watch(&key, PUSH_WAIT).await.unwrap();
    assert_eq!(there, None);
    assert!(put(&store, &key, ('V', 1, "one"), KEEP, Replace::Older).await);
    assert_eq!(next_push(&mut watch).await, entry('V', 1, "one"));
    assert_eq!(rows(&store, &[&key]).await, [key.full()]);
    drop((store, watch));
    drop_table(&waiter).await;
}

/// The server pids of the connections listening for `store`'s table.
async fn listening(store: &PostgresResultStore) -> Result<Vec<i32>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity \
         WHERE query LIKE 'LISTEN %' AND query LIKE '%' || $1 || '%'",
    )
    .bind(store.table())
    .fetch_all(store.pool())
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_resume_after_the_listening_connection_is_killed() {
    let Some(harness) = postgres().await else {
        return;
    };
    let table = unique_table();
    let open = || {
        PostgresResultStore::builder(&harness.0)
            .table(&table)
            .connect()
    };
    let (store, waiter) = (open().await.unwrap(), open().await.unwrap());
    let before = listening(&store).await.unwrap();
    assert_eq!(before.len(), 2, "both stores' listening connections");
    for pid in &before {
        sqlx::query("SELECT pg_terminate_backend($1)")
            .bind(pid)
            .execute(store.pool())
            .await
            .unwrap();
    }
    let key = key("reconnect");
    let (mut watch, _) = waiter.watch(&key, PUSH_WAIT).await.unwrap();
    // Pushes sent before the connection is back are lost: put until one arrives.
    let deadline = tokio::time::Instant::now() + PUSH_WAIT;
    let mut fence = 0;
    let pushed = loop {
        fence += 1;
        assert!(put(&store, &key, ('V', fence, "again"), KEEP, Replace::Older).await);
        let next = tokio::time::timeout(Duration::from_millis(200), watch.next_bytes());
        if let Ok(pushed) = next.await {
            break pushed.expect("the push channel closed");
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no push since the kill"
        );
    };
    assert_eq!(pushed.as_ref(), &entry('V', fence, "again"));
    let after = listening(&store).await.unwrap();
    assert!(
        !after.is_empty() && after.iter().all(|pid| !before.contains(pid)),
        "listening again on new connections: {before:?} → {after:?}"
    );
    drop(waiter);
    drop_table(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_too_large_to_push_is_not_stored_either() {
    let Some(harness) = postgres().await else {
        return;
    };
    let store = harness.open().await;
    let key = key("big-pass");
    let body = "x".repeat(10 * 1024);
    assert!(
        put(
            &store,
            &key,
            ('P', 1, &body),
            Duration::ZERO,
            Replace::Older
        )
        .await
    );
    assert_eq!(get(&store, &key).await, None);
    assert!(rows(&store, &[&key]).await.is_empty());
}

#[tokio::test]
async fn table_names_must_be_plain_identifiers() {
    for bad in ["", "1results", "results; DROP TABLE x", "\"Results\""] {
        let refused = PostgresResultStore::builder("postgres://127.0.0.1:1/none")
            .table(bad)
            .connect()
            .await
            .unwrap_err();
        assert!(
            matches!(refused, LockError::InvalidConfig(_)),
            "{bad:?}: {refused}"
        );
        assert!(PostgresResultStore::migration(bad).is_err(), "{bad:?}");
    }
}
