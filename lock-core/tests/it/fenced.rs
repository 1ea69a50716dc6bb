//! Fenced resources against real servers: the Redis store and the SQL statements that
//! `FencedUpdate` builds, run on PostgreSQL and MySQL. A stale token must change nothing.

use std::time::Duration;

use lock_core::fenced::FencedWrite;
use lock_core::redis::RedisFencedStore;
use lock_core::sql::FencedUpdate;
use lock_core::{FencingToken, LockClient, RedisBackend};
use lock_testing::server_url;
use sqlx::{Connection, Executor};

fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}_{}_{nanos}", std::process::id())
}

async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), future)
        .await
        .expect("check ran past its bound")
}

#[tokio::test]
async fn redis_refuses_a_stale_token_and_compares_tokens_exactly() {
    let Some(url) = server_url("LOCK_TEST_REDIS_URL").expect("test server") else {
        return;
    };
    refuses_stale_tokens(RedisBackend::connect(&url).await.unwrap()).await;
}

/// The same on the stack's Redis Cluster: the value and its token in one key, in one slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_refuses_a_stale_token() {
    let Some(deployment) = crate::redis_support::Deployment::cluster() else {
        return;
    };
    refuses_stale_tokens(deployment.backend().await).await;
}

/// The same on the primary of the stack's Sentinel set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_sentinel_refuses_a_stale_token() {
    let Some(deployment) = crate::redis_support::Deployment::sentinel() else {
        return;
    };
    refuses_stale_tokens(deployment.backend().await).await;
}

/// The Redis fenced store on `backend`'s server: stale tokens refused, tokens compared exactly
/// past 2^53, and a holder that lost its lease to a newer one refused.
async fn refuses_stale_tokens(backend: RedisBackend) {
    bounded(async {
        let store = RedisFencedStore::from_backend(&backend).await.unwrap();
        let key = unique("fenced");
        let write = |fence: u64, value: &'static [u8]| {
            let (store, key) = (store.clone(), key.clone());
            async move {
                store
                    .write(&key, FencingToken::new(fence), value)
                    .await
                    .unwrap()
            }
        };
        assert_eq!(write(5, b"a").await, FencedWrite::Accepted);
        assert_eq!(
            write(5, b"b").await,
            FencedWrite::Accepted,
            "same holder again"
        );
        assert_eq!(
            write(4, b"stale").await,
            FencedWrite::Refused {
                newest: FencingToken::new(5)
            }
        );
        // Beyond 2^53 a Lua number cannot tell these apart; the store must.
        let big = (1u64 << 60) + 1;
        assert!(write(big, b"c").await.is_accepted());
        assert!(!write(big - 1, b"stale").await.is_accepted());
        let (fence, value) = store.read(&key).await.unwrap().unwrap();
        assert_eq!((fence.get(), value.as_slice()), (big, b"c".as_slice()));
        assert!(store
            .write("", FencingToken::new(1), b"x")
            .await
            .unwrap_err()
            .is_invalid_input());

        // With a lock: the holder that lost its lease to a newer one is refused.
        let locks = LockClient::new(backend);
        let old = locks
            .lock(&key)
            .lease(lock_core::LeaseMode::fixed(Duration::from_millis(100)))
            .await
            .unwrap();
        let old_fence = old.fencing_token();
        old.abandon();
        let new = locks
            .lock(&key)
            .acquire_within(Duration::from_secs(5))
            .await
            .unwrap()
            .unwrap();
        let fresh = unique("fenced-lock");
        assert!(store
            .write(&fresh, new.fencing_token(), b"new")
            .await
            .unwrap()
            .is_accepted());
        assert!(!store
            .write(&fresh, old_fence, b"zombie")
            .await
            .unwrap()
            .is_accepted());
        new.release().await.unwrap();
    })
    .await;
}

/// A test that runs the statement `FencedUpdate::<$database>` builds on the server at
/// `$url_env` (a connection of type `$connection`), in a table whose key column is
/// `$key_type`: tokens 5, 3 (stale), 5 again and 7 each set `available`; the stale one changes
/// nothing. `$fence_twice`: the statement takes the token again after the key.
macro_rules! runs_the_fenced_update {
    ($test:ident, $url_env:literal, $connection:ty, $database:ty, $key_type:literal, $fence_twice:literal) => {
        #[tokio::test]
        async fn $test() {
            let Some(url) = server_url($url_env).expect("test server") else {
                return;
            };
            bounded(async {
                let mut conn = <$connection>::connect(&url).await.unwrap();
                let table = unique("fenced");
                conn.execute(&*format!(
                    "CREATE TABLE {table} (sku {} PRIMARY KEY, available BIGINT, fence BIGINT NOT NULL)",
                    $key_type
                ))
                .await
                .unwrap();
                conn.execute(&*format!("INSERT INTO {table} VALUES ('sku-1', 0, 0)"))
                    .await
                    .unwrap();
                let sql = FencedUpdate::<$database>::new(&table, "sku", "fence")
                    .set("available")
                    .build()
                    .unwrap();
                let mut affected = Vec::new();
                for (fence, available) in [(5i64, 10i64), (3, 99), (5, 9), (7, 8)] {
                    let mut query = sqlx::query(&sql).bind(available).bind(fence).bind("sku-1");
                    if $fence_twice {
                        query = query.bind(fence);
                    }
                    let done = query.execute(&mut conn).await.unwrap();
                    affected.push(done.rows_affected());
                }
                // MySQL counts rows changed: the repeat of token 5 with a new value changes the
                // row.
                assert_eq!(affected, [1, 0, 1, 1], "the stale token changed nothing");
                let (available, fence): (i64, i64) =
                    sqlx::query_as(&format!("SELECT available, fence FROM {table}"))
                        .fetch_one(&mut conn)
                        .await
                        .unwrap();
                assert_eq!((available, fence), (8, 7));
                conn.execute(&*format!("DROP TABLE {table}")).await.unwrap();
            })
            .await;
        }
    };
}

runs_the_fenced_update!(
    postgres_runs_the_fenced_update,
    "LOCK_TEST_POSTGRES_URL",
    sqlx::PgConnection,
    sqlx::Postgres,
    "TEXT",
    false
);
runs_the_fenced_update!(
    mysql_runs_the_fenced_update,
    "LOCK_TEST_MYSQL_URL",
    sqlx::MySqlConnection,
    sqlx::MySql,
    "VARCHAR(64)",
    true
);
