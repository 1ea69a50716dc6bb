//! Results in PostgreSQL (feature `postgres`), pushed to waiting processes by `LISTEN` /
//! `NOTIFY`. See [`PostgresResultStore`].

mod builder;
pub(crate) mod in_transaction;
mod push;
mod statements;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgPool;
use tokio_util::sync::{CancellationToken, DropGuard};

pub use self::builder::PostgresResultStoreBuilder;
use self::statements::Statements;
use crate::breaker::Breaker;
use crate::results::{PutEntry, Replace, ResultStore, ValueWatch, Watchers};
use crate::sql::dialect::Sealed;
use crate::sql::{is_unreachable, micros, to_lock_error, validate_table};
use crate::{LockError, LockKey, Result};

const STORE: &str = "postgres";

/// The longest an entry is kept (a century); a longer `keep` is cut to it, as the database's
/// timestamps end in the year 294276.
const MAX_KEEP: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Results in a PostgreSQL table, shared by every instance on the database; pushes arrive by
/// `LISTEN` / `NOTIFY`. Cheap to clone: clones share one pool and one listening connection,
/// which closes when the last clone drops.
///
/// ```no_run
/// use lock_core::cache::Cache;
/// use lock_core::sql::PostgresResultStore;
/// use lock_core::PostgresBackend;
///
/// # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
/// let url = "postgres://app@127.0.0.1/app";
/// let store = PostgresResultStore::connect(url).await?;
/// let cache = Cache::builder(store, PostgresBackend::connect(url).await?)
///     .namespace("shop")
///     .build()?;
/// # let _ = cache; Ok(()) }
/// ```
///
/// # The table
/// One row per key, in a table (default `lock_core_results`) created on connect unless
/// [`create_table(false)`](PostgresResultStoreBuilder::create_table) is set; its
/// [`MIGRATION`](Self::MIGRATION) (or [`migration`](Self::migration) for another name) is
/// there for teams that create tables in migrations.
///
/// | column | meaning |
/// |---|---|
/// | `key` | primary key: the key's full name (`namespace:key`) |
/// | `kind`, `fence` | the stored entry's kind and fencing token, from its header (see [`results`](super)) |
/// | `entry` | the encoded entry |
/// | `expires_at` | when the entry stops counting, by the **database's** clock |
///
/// A put is one statement: an upsert that replaces the row only where the rules of
/// [`results`](super) let it (an expired row counts as absent, a completed idempotency record
/// is never replaced), and that notifies when it stored, atomically under concurrent puts.
/// Expired rows are never read; a task per store deletes them every hour (in batches of
/// 1,000, spread over the instances), so keys that requests make up (a cache's URLs) leave
/// nothing for long; [`purge_expired`](Self::purge_expired) does it on demand.
///
/// # Pushes
/// Each store listens, on a connection of its pool, on the channel named like the table (in
/// lower case, as PostgreSQL folds the table's name). A put that stores notifies that channel
/// with the key and the entry (hex), or with the key alone when that would not fit in a
/// notification (8000 bytes, so entries over about 3.9 KB): a process with waiters for that
/// key then reads the row. Every listening process receives every put's notification; each
/// one drops those of keys it has no waiter for.
///
/// Waiters also queue for the key's lease, so a push they miss costs only time: one sent
/// while the listening connection was down (it reconnects, backing off from 50 ms to 2 s), or
/// a value that must not be shared (stored with no keep, [`CacheStatus::Uncacheable`]) too
/// large for a notification, which has no row to read and is not pushed at all: its waiters
/// learn of it when the lease frees.
///
/// [`CacheStatus::Uncacheable`]: crate::cache::CacheStatus::Uncacheable
#[derive(Clone)]
pub struct PostgresResultStore {
    shared: Arc<Shared>,
}

struct Shared {
    db: Db,
    table: String,
    /// The table's name as PostgreSQL folds it, so stores configured with `Results` and
    /// `results` (one table) also share pushes.
    channel: String,
    watchers: Arc<Watchers>,
    _stop: DropGuard,
}

/// The pool and the statements, for the store and its push task.
#[derive(Clone)]
struct Db {
    pool: PgPool,
    sql: Arc<Statements>,
    timeout: Duration,
    /// The pool's circuit breaker: the lock backend's when given one (see
    /// [`PostgresResultStoreBuilder::breaker`]).
    breaker: Breaker,
}

impl Db {
    /// Runs `statement` through the breaker, giving up after the response timeout.
    async fn timed<T>(
        &self,
        operation: &'static str,
        statement: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T> {
        let admission = self.breaker.admit()?;
        match tokio::time::timeout(self.timeout, statement).await {
            Ok(done) => {
                match &done {
                    Err(error) if is_unreachable(error) => admission.unavailable(error),
                    _ => admission.answered(),
                }
                done.map_err(|e| to_lock_error(STORE, e))
            }
            Err(_elapsed) => {
                admission.unavailable(format!("no reply within {:?}", self.timeout));
                Err(LockError::Timeout {
                    backend: STORE,
                    operation,
                    after: self.timeout,
                })
            }
        }
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let read = sqlx::query_scalar(&self.sql.get)
            .bind(key)
            .fetch_optional(&self.pool);
        self.timed("get", read).await
    }
}

impl PostgresResultStore {
    /// The default table, `lock_core_results` (also the channel pushes go on).
    ///
    /// ```
    /// use lock_core::sql::PostgresResultStore;
    ///
    /// assert_eq!(PostgresResultStore::DEFAULT_TABLE, "lock_core_results");
    /// ```
    pub const DEFAULT_TABLE: &'static str = statements::DEFAULT_TABLE;

    /// The `CREATE TABLE IF NOT EXISTS` of the default table, for migrations.
    ///
    /// ```
    /// use lock_core::sql::PostgresResultStore;
    ///
    /// assert!(PostgresResultStore::MIGRATION.starts_with("CREATE TABLE IF NOT EXISTS lock_core_results ("));
    /// ```
    pub const MIGRATION: &'static str = statements::MIGRATION;

    /// Connects to `url` (`postgres://user:password@host:port/db`) with default settings:
    /// the table `lock_core_results`, created if missing.
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// let store = lock_core::sql::PostgresResultStore::connect("postgres://app@127.0.0.1/app").await?;
    /// # let _ = store; Ok(()) }
    /// ```
    pub async fn connect(url: &str) -> Result<Self> {
        Self::builder(url).connect().await
    }

    /// A store on an existing pool (the lock backend's, say, or the one your own writes use),
    /// with default settings. Its listening connection is one of the pool's, held for as long
    /// as the store lives; closing the pool ends the store's pushes.
    ///
    /// ```no_run
    /// use lock_core::sql::PostgresResultStore;
    /// use lock_core::PostgresBackend;
    ///
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// let backend = PostgresBackend::connect("postgres://app@127.0.0.1/app").await?;
    /// let store = PostgresResultStore::from_pool(backend.pool().clone()).await?;
    /// # let _ = store; Ok(()) }
    /// ```
    pub async fn from_pool(pool: PgPool) -> Result<Self> {
        Self::builder_from_pool(pool).connect().await
    }

    /// Starts configuring a store that connects to `url`.
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// let store = lock_core::sql::PostgresResultStore::builder("postgres://app@127.0.0.1/app")
    ///     .table("shop_results")
    ///     .create_table(false)
    ///     .connect()
    ///     .await?;
    /// # let _ = store; Ok(()) }
    /// ```
    pub fn builder(url: impl Into<String>) -> PostgresResultStoreBuilder {
        PostgresResultStoreBuilder::new(builder::Source::Url(url.into()))
    }

    /// Starts configuring a store on an existing pool (see [`from_pool`](Self::from_pool)).
    ///
    /// ```no_run
    /// # async fn example(pool: sqlx::PgPool) -> Result<(), lock_core::LockError> {
    /// let store = lock_core::sql::PostgresResultStore::builder_from_pool(pool)
    ///     .table("shop_results")
    ///     .connect()
    ///     .await?;
    /// # let _ = store; Ok(()) }
    /// ```
    pub fn builder_from_pool(pool: PgPool) -> PostgresResultStoreBuilder {
        PostgresResultStoreBuilder::new(builder::Source::Pool(pool))
    }

    /// The `CREATE TABLE IF NOT EXISTS` of a result table named `table`, for migrations; an
    /// error when `table` is not a plain identifier (ASCII letters, digits and `_`, not
    /// starting with a digit, at most 48 bytes).
    ///
    /// ```
    /// use lock_core::sql::PostgresResultStore;
    ///
    /// let sql = PostgresResultStore::migration("shop_results")?;
    /// assert!(sql.starts_with("CREATE TABLE IF NOT EXISTS shop_results ("));
    /// assert!(PostgresResultStore::migration("shop; DROP TABLE x").is_err());
    /// # Ok::<(), lock_core::LockError>(())
    /// ```
    pub fn migration(table: &str) -> Result<String> {
        validate_table(table)?;
        Ok(statements::migration(table))
    }

    /// Deletes the rows whose entry has expired (by the database's clock), in batches of
    /// 1,000, and returns how many. Each store does it every hour on its own; this is for doing
    /// it now (after a bulk of short-lived entries, say).
    ///
    /// ```no_run
    /// # async fn example(store: lock_core::sql::PostgresResultStore) -> Result<(), lock_core::LockError> {
    /// let purged = store.purge_expired().await?;
    /// # let _ = purged; Ok(()) }
    /// ```
    pub async fn purge_expired(&self) -> Result<u64> {
        purge(self.shared.clone()).await
    }

    /// The connection pool, e.g. to write a fenced resource in the same database.
    ///
    /// ```no_run
    /// # async fn example(store: lock_core::sql::PostgresResultStore) -> Result<(), sqlx::Error> {
    /// sqlx::query("SELECT 1").execute(store.pool()).await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn pool(&self) -> &PgPool {
        &self.shared.db.pool
    }

    /// The result table's name.
    ///
    /// ```no_run
    /// # async fn example(store: lock_core::sql::PostgresResultStore) {
    /// assert_eq!(store.table(), "lock_core_results");
    /// # }
    /// ```
    #[must_use]
    pub fn table(&self) -> &str {
        &self.shared.table
    }

    /// Creates the table if asked, starts listening, and spawns the push task.
    async fn start(
        pool: PgPool,
        table: String,
        create: bool,
        timeout: Duration,
        breaker: Breaker,
    ) -> Result<Self> {
        let db = Db {
            sql: Arc::new(Statements::new(&table)),
            pool,
            timeout,
            breaker,
        };
        if create {
            // Under the lock the other stores' schema creation takes.
            let migration = statements::migration(&table);
            let created = <sqlx::Postgres as Sealed>::create_table(&db.pool, &migration);
            db.timed("create table", created).await?;
        }
        let channel = table.to_ascii_lowercase();
        let listener = db
            .timed("listen", push::subscribe(&db.pool, &channel))
            .await?;
        let watchers = Arc::new(Watchers::default());
        let stop = CancellationToken::new();
        tokio::spawn(push::route(
            listener,
            channel.clone(),
            db.clone(),
            watchers.clone(),
            stop.clone(),
        ));
        let shared = Arc::new(Shared {
            db,
            table,
            channel,
            watchers,
            _stop: stop.clone().drop_guard(),
        });
        crate::sql::spawn_sweeper(
            STORE,
            "expired results",
            stop,
            Arc::downgrade(&shared),
            purge,
        );
        Ok(Self { shared })
    }
}

/// Deletes expired rows in bounded batches, through the store's breaker.
async fn purge(shared: Arc<Shared>) -> Result<u64> {
    let db = &shared.db;
    // A batch of deletes, not a request: it gets the time it needs.
    let generous = Db {
        timeout: db.timeout.max(Duration::from_secs(60)),
        ..db.clone()
    };
    crate::sql::sweep(|| async {
        let batch = sqlx::query(&db.sql.purge_batch).execute(&db.pool);
        generous
            .timed("purge", batch)
            .await
            .map(|done| done.rows_affected())
    })
    .await
}

impl ResultStore for PostgresResultStore {
    fn name(&self) -> &'static str {
        STORE
    }

    async fn get(&self, key: &LockKey) -> Result<Option<Vec<u8>>> {
        self.shared.db.get(key.full()).await
    }

    async fn watch(&self, key: &LockKey, _wait: Duration) -> Result<(ValueWatch, Option<Vec<u8>>)> {
        // Subscribed locally before reading: a put committed after the read notifies the
        // listening connection, which has listened since the store connected. The
        // notification of a put the read already saw can still arrive after it: the watch
        // ignores pushes of what it read, and of older entries.
        let watch = self.shared.watchers.subscribe(key.full());
        let there = self.shared.db.get(key.full()).await?;
        Ok((watch.after(there.as_deref()), there))
    }

    async fn put(&self, key: &LockKey, put: PutEntry<'_>) -> Result<bool> {
        let db = &self.shared.db;
        let (kind, entry_fence) = statements::header(put.entry);
        let keep_us = if put.keep.is_zero() {
            0
        } else {
            micros(put.keep.min(MAX_KEEP))
        };
        let payload = push::payload(key.full(), put.entry, !put.keep.is_zero());
        let statement = sqlx::query_as(&db.sql.put)
            .bind(key.full())
            .bind(put.fence_digits)
            .bind(put.rule == Replace::OlderOrSame)
            .bind(kind)
            .bind(entry_fence)
            .bind(put.entry)
            .bind(keep_us)
            .bind(&self.shared.channel)
            .bind(payload)
            .fetch_one(&db.pool);
        let (stored, _pushed): (i64, i64) = db.timed("put", statement).await?;
        Ok(stored > 0)
    }

    fn commit_place(&self) -> Option<Arc<dyn crate::results::CommitPlace>> {
        Some(Arc::new(in_transaction::InTransaction::new(
            &self.shared.table,
        )))
    }

    async fn remove(&self, key: &LockKey) -> Result<()> {
        let db = &self.shared.db;
        let statement = sqlx::query(&db.sql.remove)
            .bind(key.full())
            .execute(&db.pool);
        db.timed("remove", statement).await.map(drop)
    }
}

impl std::fmt::Debug for PostgresResultStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresResultStore")
            .field("table", &self.shared.table)
            .finish_non_exhaustive()
    }
}
