//! The two databases the suites run on, as one harness ([`SqlServer`]) over what differs
//! between them ([`SqlKind`]: the backend type and the statements the checks read and change
//! the lock table with, each in its dialect), so each backend's file keeps only its own checks.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use lock_core::{LockBackend, LockClient};

use super::{
    announce_and_wait, bad_settings_are_typed, hold_request, server_url, sweep_case, SqlHarness,
};
use crate::conformance::{client_on, unique_key, Harness};

/// What differs between the two databases for the suites; implemented by [`sql_kind!`] for
/// `sqlx::MySql` and `sqlx::Postgres`.
pub(crate) trait SqlKind: Sized + Send + Sync + 'static {
    /// The lock backend (`MySqlBackend`, `PostgresBackend`).
    type Backend: LockBackend + Clone + std::fmt::Debug + Send + Sync + 'static;
    /// Its connection pool.
    type Pool: Clone + Send + Sync + 'static;
    /// The database's name, for messages.
    const NAME: &'static str;
    /// The variable with the stack's server URL.
    const URL_ENV: &'static str;
    /// The backend's `child_holder` test, by its path in the test binary.
    const CHILD_HOLDER: &'static str;

    /// The lock tables a lock's rows are in (the lock table first), which the sweep empties.
    const TABLES: &'static [&'static str];
    /// The rows the sweep deletes at least, after [`SqlKind::age_rows`] on a released and a
    /// crashed holder's lock.
    const SWEPT_AT_LEAST: u64;

    /// A backend connected to `url`.
    fn connect(url: &str) -> impl Future<Output = lock_core::Result<Self::Backend>> + Send;
    /// A backend connecting to `url` with a 300 ms response timeout.
    fn connect_quickly(url: &str) -> impl Future<Output = lock_core::Result<Self::Backend>> + Send;
    /// A backend connecting to `url` with its locks in `table`.
    fn connect_with_table(
        url: &str,
        table: &str,
    ) -> impl Future<Output = lock_core::Result<Self::Backend>> + Send;
    /// A pool of 4 connections to `url`, the shipped migrations (the lock table's, then the
    /// operator's) run on it twice (they are idempotent).
    fn migrated_pool(url: &str) -> impl Future<Output = Self::Pool> + Send;
    /// A backend on `pool` that creates no schema, with its locks in `table` (the default
    /// one when `None`).
    fn on_pool(
        pool: &Self::Pool,
        table: Option<&str>,
    ) -> impl Future<Output = lock_core::Result<Self::Backend>> + Send;
    /// A backend on `pool` as `from_pool` makes it.
    fn from_pool(
        pool: &Self::Pool,
    ) -> impl Future<Output = lock_core::Result<Self::Backend>> + Send;
    /// How many tables named `table` the database has.
    fn tables_named(pool: &Self::Pool, table: &str) -> impl Future<Output = i64> + Send;
    /// Makes the rows of the lock `full_key` two days old.
    fn age_rows(pool: &Self::Pool, full_key: &str) -> impl Future<Output = ()> + Send;
    /// How many rows of the lock `full_key` `table` holds.
    fn rows_in(pool: &Self::Pool, table: &str, full_key: &str) -> impl Future<Output = i64> + Send;
    /// Deletes the rows the retention let go; how many.
    fn sweep(backend: &Self::Backend) -> impl Future<Output = u64> + Send;
    /// The backend's pool.
    fn pool(backend: &Self::Backend) -> &Self::Pool;
    /// The backend's waiters for `full_key`.
    fn waiters(backend: &Self::Backend, full_key: &str) -> usize;
    /// Deletes the lock row of `full_key`; the rows deleted.
    fn delete_row(pool: &Self::Pool, full_key: &str) -> impl Future<Output = u64> + Send;
    /// The owner's pid, the fence and the entry count of the lock row named `full_key`.
    fn lock_row(pool: &Self::Pool, full_key: &str) -> impl Future<Output = (u32, u64, i32)> + Send;
    /// What the lock row named `full_key` has left before it expires, by the database's clock,
    /// in microseconds.
    fn row_left_us(pool: &Self::Pool, full_key: &str) -> impl Future<Output = i64> + Send;
    /// The stored key and the name of the lock row named `full_key`, as bytes.
    fn stored_key_and_name(
        pool: &Self::Pool,
        full_key: &str,
    ) -> impl Future<Output = (Vec<u8>, Vec<u8>)> + Send;
    /// Makes the audit records of the lock `full_key` (in the default table's audit table)
    /// expired.
    fn age_audit(pool: &Self::Pool, full_key: &str) -> impl Future<Output = ()> + Send;
    /// Creates the lock table `table` as a version before the operator's view made it: the
    /// shipped first migration only.
    fn old_table(pool: &Self::Pool, table: &str) -> impl Future<Output = ()> + Send;
    /// Drops the lock table `table` and everything made beside it (counter, audit table),
    /// where they exist.
    fn drop_tables(pool: &Self::Pool, table: &str) -> impl Future<Output = ()> + Send;
    /// How many columns named `column` the table `table` has.
    fn columns_named(
        pool: &Self::Pool,
        table: &str,
        column: &str,
    ) -> impl Future<Output = i64> + Send;
}

/// A database's server and the backends the suites took on it: the [`Harness`] and
/// [`SqlHarness`] of the conformance suite and the shared SQL checks.
pub(crate) struct SqlServer<K: SqlKind> {
    pub(crate) url: String,
    /// A backend of the test's own, to look behind the others' backs.
    pub(crate) admin: K::Backend,
    /// Every backend handed out, to count their waiters.
    backends: Mutex<Vec<K::Backend>>,
}

impl<K: SqlKind> SqlServer<K> {
    /// The stack's server (`K::URL_ENV`); `None` (after saying so) when the suite may skip.
    pub(crate) async fn stack() -> Option<Self> {
        Some(Self::on(server_url(K::URL_ENV)?).await)
    }

    /// The server at `url`.
    pub(crate) async fn on(url: String) -> Self {
        let admin = K::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("cannot reach {} at {url}: {e}", K::NAME));
        Self {
            url,
            admin,
            backends: Mutex::new(Vec::new()),
        }
    }

    /// The admin backend's pool.
    pub(crate) fn pool(&self) -> &K::Pool {
        K::pool(&self.admin)
    }

    /// A new backend on connections of its own, counted by [`Harness::queued`].
    pub(crate) async fn backend(&self) -> K::Backend {
        let backend = K::connect(&self.url).await.unwrap();
        self.backends.lock().unwrap().push(backend.clone());
        backend
    }
}

impl<K: SqlKind> Harness for SqlServer<K> {
    async fn client(&self) -> LockClient {
        client_on(self.backend().await)
    }

    async fn delete_behind(&self, full_key: &str) {
        let deleted = K::delete_row(self.pool(), full_key).await;
        assert_eq!(deleted, 1, "nothing to delete");
    }

    async fn queued(&self, full_key: &str) -> usize {
        let backends = self.backends.lock().unwrap().clone();
        backends.iter().map(|b| K::waiters(b, full_key)).sum()
    }
}

impl<K: SqlKind> SqlHarness for SqlServer<K> {
    const CHILD_HOLDER: &'static str = K::CHILD_HOLDER;

    async fn lock_row(&self, full_key: &str) -> (u32, u64, i32) {
        K::lock_row(self.pool(), full_key).await
    }

    async fn row_left_us(&self, full_key: &str) -> i64 {
        K::row_left_us(self.pool(), full_key).await
    }

    async fn stored_key_and_name(&self, full_key: &str) -> (Vec<u8>, Vec<u8>) {
        K::stored_key_and_name(self.pool(), full_key).await
    }
}

/// Implements [`SqlKind`] for the sqlx database `$db` with the backend `$backend`: its pool
/// options, its statements (`delete` .. `columns_named`, each binding the key, the name or the
/// table once, `columns_named` the table then the column; `rows_in` and `drop_tables` format
/// strings naming `{table}`; `age` run in order) and the types its driver reads the fence
/// (`fence`) and a stored key or name (`text`) as.
macro_rules! sql_kind {
    ($db:ty {
        backend: $backend:ty,
        name: $name:literal,
        url_env: $url_env:expr,
        child_holder: $child_holder:expr,
        pool_options: $pool_options:ty,
        tables: $tables:expr,
        swept_at_least: $swept_at_least:expr,
        fence: $fence:ty,
        text: $text:ty,
        delete: $delete:literal,
        lock_row: $lock_row:literal,
        row_left_us: $row_left_us:literal,
        key_and_name: $key_and_name:literal,
        rows_in: $rows_in:literal,
        age: [$($age:literal),* $(,)?],
        tables_named: $tables_named:literal,
        age_audit: $age_audit:literal,
        drop_tables: [$($drop:literal),* $(,)?],
        columns_named: $columns_named:literal $(,)?
    }) => {
        impl $crate::sql_support::SqlKind for $db {
            type Backend = $backend;
            type Pool = sqlx::Pool<$db>;
            const NAME: &'static str = $name;
            const URL_ENV: &'static str = $url_env;
            const CHILD_HOLDER: &'static str = $child_holder;
            const TABLES: &'static [&'static str] = $tables;
            const SWEPT_AT_LEAST: u64 = $swept_at_least;

            async fn connect(url: &str) -> lock_core::Result<$backend> {
                <$backend>::connect(url).await
            }

            async fn connect_quickly(url: &str) -> lock_core::Result<$backend> {
                <$backend>::builder(url)
                    .response_timeout(std::time::Duration::from_millis(300))
                    .connect()
                    .await
            }

            async fn connect_with_table(url: &str, table: &str) -> lock_core::Result<$backend> {
                <$backend>::builder(url).table(table).connect().await
            }

            async fn migrated_pool(url: &str) -> sqlx::Pool<$db> {
                let pool = <$pool_options>::new()
                    .max_connections(4)
                    .connect(url)
                    .await
                    .unwrap();
                for _ in 0..2 {
                    for migration in [<$backend>::MIGRATION, <$backend>::OPERATOR_MIGRATION] {
                        sqlx::raw_sql(migration).execute(&pool).await.unwrap();
                    }
                }
                pool
            }

            async fn on_pool(
                pool: &sqlx::Pool<$db>,
                table: Option<&str>,
            ) -> lock_core::Result<$backend> {
                let builder = <$backend>::builder_from_pool(pool.clone());
                let builder = match table {
                    Some(table) => builder.table(table),
                    None => builder,
                };
                builder.create_schema(false).connect().await
            }

            async fn from_pool(pool: &sqlx::Pool<$db>) -> lock_core::Result<$backend> {
                <$backend>::from_pool(pool.clone()).await
            }

            async fn tables_named(pool: &sqlx::Pool<$db>, table: &str) -> i64 {
                sqlx::query_scalar($tables_named)
                    .bind(table)
                    .fetch_one(pool)
                    .await
                    .unwrap()
            }

            async fn age_rows(pool: &sqlx::Pool<$db>, full_key: &str) {
                let key = lock_core::sql::storage_key(full_key);
                for statement in [$($age),*] {
                    sqlx::query(statement)
                        .bind(&key)
                        .execute(pool)
                        .await
                        .unwrap();
                }
            }

            async fn rows_in(pool: &sqlx::Pool<$db>, table: &str, full_key: &str) -> i64 {
                sqlx::query_scalar::<_, i64>(&format!($rows_in, table = table))
                    .bind(lock_core::sql::storage_key(full_key))
                    .fetch_one(pool)
                    .await
                    .unwrap()
            }

            async fn sweep(backend: &$backend) -> u64 {
                backend.sweep_expired().await.unwrap()
            }

            fn pool(backend: &$backend) -> &sqlx::Pool<$db> {
                backend.pool()
            }

            fn waiters(backend: &$backend, full_key: &str) -> usize {
                backend.waiters(full_key)
            }

            async fn delete_row(pool: &sqlx::Pool<$db>, full_key: &str) -> u64 {
                sqlx::query($delete)
                    .bind(lock_core::sql::storage_key(full_key))
                    .execute(pool)
                    .await
                    .unwrap()
                    .rows_affected()
            }

            async fn lock_row(pool: &sqlx::Pool<$db>, full_key: &str) -> (u32, u64, i32) {
                let (pid, fence, entries): (i32, $fence, i32) = sqlx::query_as($lock_row)
                    .bind(full_key)
                    .fetch_one(pool)
                    .await
                    .unwrap();
                (
                    u32::try_from(pid).unwrap(),
                    u64::try_from(fence).unwrap(),
                    entries,
                )
            }

            async fn row_left_us(pool: &sqlx::Pool<$db>, full_key: &str) -> i64 {
                sqlx::query_scalar($row_left_us)
                    .bind(full_key)
                    .fetch_one(pool)
                    .await
                    .unwrap()
            }

            async fn stored_key_and_name(
                pool: &sqlx::Pool<$db>,
                full_key: &str,
            ) -> (Vec<u8>, Vec<u8>) {
                let (stored, name): ($text, $text) = sqlx::query_as($key_and_name)
                    .bind(full_key)
                    .fetch_one(pool)
                    .await
                    .unwrap();
                (stored.into(), name.into())
            }

            async fn age_audit(pool: &sqlx::Pool<$db>, full_key: &str) {
                sqlx::query($age_audit)
                    .bind(lock_core::sql::storage_key(full_key))
                    .execute(pool)
                    .await
                    .unwrap();
            }

            async fn old_table(pool: &sqlx::Pool<$db>, table: &str) {
                let migration = <$backend>::MIGRATION.replace("lock_core_locks", table);
                sqlx::raw_sql(&migration).execute(pool).await.unwrap();
            }

            async fn drop_tables(pool: &sqlx::Pool<$db>, table: &str) {
                $(
                    sqlx::raw_sql(&format!($drop, table = table))
                        .execute(pool)
                        .await
                        .unwrap();
                )*
            }

            async fn columns_named(pool: &sqlx::Pool<$db>, table: &str, column: &str) -> i64 {
                sqlx::query_scalar($columns_named)
                    .bind(table)
                    .bind(column)
                    .fetch_one(pool)
                    .await
                    .unwrap()
            }
        }
    };
}

pub(crate) use sql_kind;

/// Bad settings and an unreachable server are typed errors, quickly: `closed` (a URL to a
/// closed port, a 300 ms response timeout), a URL that is none, and a table name that is not
/// one (on `url`).
pub(crate) async fn bad_settings_of<K: SqlKind>(closed: &str, url: &str) {
    bad_settings_are_typed(
        K::connect_quickly(closed),
        K::connect("not a url"),
        K::connect_with_table(url, "locks; DROP TABLE users"),
    )
    .await;
}

/// In the holder process (see [`Holder`](super::Holder)): the mode asked for, a backend on the
/// stack's server and the key to hold; `None` when this process is not a holder.
pub(crate) async fn holder_backend<K: SqlKind>() -> Option<(String, K::Backend, String)> {
    let (mode, key) = hold_request()?;
    let backend = K::connect(&server_url(K::URL_ENV).unwrap()).await.unwrap();
    Some((mode, backend, key))
}

/// In the holder process: takes `key` on `backend` under a 1.5 s lease, reports it, and waits
/// to be killed.
pub(crate) async fn hold(backend: impl LockBackend, key: &str) {
    let guard = client_on(backend)
        .lock(key)
        .lease(lock_core::LeaseMode::watchdog(Duration::from_millis(1500)))
        .await
        .unwrap();
    announce_and_wait(guard).await;
}

/// Rows of locks unused for longer than the retention are swept (a released one's and a
/// crashed holder's, in every table of [`SqlKind::TABLES`]: in MySQL their fencing counters
/// too); a held lock's rows stay; fencing tokens still increase afterwards.
pub(crate) async fn old_rows_are_swept_and_tokens_still_increase<K: SqlKind>(h: &SqlServer<K>) {
    let client = h.client().await;
    let keys = [
        unique_key("swept"),
        unique_key("swept-crash"),
        unique_key("kept"),
    ];
    let case = sweep_case(&client, keys).await;
    for full in [&case.released_full, &case.crashed_full] {
        K::age_rows(h.pool(), full).await;
    }
    assert!(K::sweep(&h.admin).await >= K::SWEPT_AT_LEAST);
    for table in K::TABLES {
        for full in [&case.released_full, &case.crashed_full] {
            assert_eq!(
                K::rows_in(h.pool(), table, full).await,
                0,
                "{table}: {full}"
            );
        }
        let held = case.holding.key().full();
        let rows = K::rows_in(h.pool(), table, held).await;
        assert_eq!(rows, 1, "{table}: a held lock was swept");
    }
    case.assert_tokens_still_increase(&client).await;
}

/// A pool of the application's, migrated, and two backends on it: one that creates no schema,
/// one as `from_pool` makes it.
pub(crate) struct SharedPool<K: SqlKind> {
    pub(crate) pool: K::Pool,
    pub(crate) backend: K::Backend,
    pub(crate) other: K::Backend,
}

impl<K: SqlKind> SharedPool<K> {
    /// On the stack's server; `None` (after saying so) when the suite may skip.
    pub(crate) async fn stack() -> Option<Self> {
        let pool = K::migrated_pool(&server_url(K::URL_ENV)?).await;
        let backend = K::on_pool(&pool, None).await.unwrap();
        let other = K::from_pool(&pool).await.unwrap();
        Some(Self {
            pool,
            backend,
            other,
        })
    }

    /// Opting out creates nothing: a missing table is an error at the first lock, not a
    /// table.
    pub(crate) async fn opting_out_creates_nothing(&self) {
        let table = format!("lock_core_absent_{}", std::process::id());
        let bare = K::on_pool(&self.pool, Some(&table)).await.unwrap();
        assert!(LockClient::new(bare).lock("x").try_acquire().await.is_err());
        let tables = K::tables_named(&self.pool, &table).await;
        assert_eq!(tables, 0, "{table} was created");
    }
}
