//! The raw floors `bench` compares lock figures with: per backend, the cheapest server operation
//! on the same kind of client the backend uses, measured in the same run.
//!
//! | backend | raw operation | acquire+release vs | handoff vs |
//! |---|---|---|---|
//! | memory | `tokio::sync::Mutex` lock+unlock | 1 × | a measured Mutex handoff, 16 waiters |
//! | redis | `EVALSHA` of `return 1` | 2 × | 4 × |
//! | postgres, mysql | `SELECT 1` on a sqlx pool of 10 | 2 × | 4 × |
//! | zookeeper | create + delete of an ephemeral node (2 round trips) | 1 × | 2 × |
//! | etcd | one txn that puts a key (a Raft write, as every lock step is) | 2 × | 4 × |
//!
//! Adding a backend is one [`Floor`] impl.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use etcd_client as etcd;
use example_support::backend::postgres_url;
use example_support::flags::usage_error;
use tokio::time::Instant;
use zookeeper_client as zk;

use crate::{etcd_url, mysql_url, zookeeper_url, Percentiles};

/// How many tasks the concurrent figures run.
pub const CONCURRENT_TASKS: usize = 64;
/// How many tasks contend in the handoff figures.
pub const HANDOFF_WAITERS: usize = 16;
/// Connections of the SQL floors' pools: what the SQL backends use for statements by default.
const SQL_POOL: u32 = 10;

/// Mean, p50 and p99 of a set of durations.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    /// The mean.
    pub mean: Duration,
    /// The median.
    pub p50: Duration,
    /// The 99th percentile.
    pub p99: Duration,
}

impl Summary {
    /// Summarises `samples` (sorts them).
    #[must_use]
    pub fn of(samples: &mut [Duration]) -> Self {
        let mean = mean(samples);
        let p = Percentiles::of(samples);
        Self {
            mean,
            p50: p.p50,
            p99: p.p99,
        }
    }

    /// Every figure `n` times.
    #[must_use]
    pub fn times(self, n: u32) -> Self {
        Self {
            mean: self.mean * n,
            p50: self.p50 * n,
            p99: self.p99 * n,
        }
    }
}

/// A snapshot of a server's own count of script calls and the time it spent running them
/// (Redis `INFO commandstats`): deltas between snapshots show what one call costs the server,
/// apart from the network and the client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScriptStats {
    /// Calls counted.
    pub calls: u64,
    /// Microseconds the server spent in them.
    pub usec: u64,
}

impl ScriptStats {
    /// The `cmdstat_<command>:calls=…,usec=…` line of an `INFO commandstats` reply (zero
    /// when absent).
    #[must_use]
    pub fn from_commandstats(info: &str, command: &str) -> Self {
        let prefix = format!("cmdstat_{command}:");
        let Some(line) = info.lines().find(|l| l.starts_with(&prefix)) else {
            return Self::default();
        };
        let field = |name: &str| {
            line[prefix.len()..]
                .split(',')
                .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        Self {
            calls: field("calls"),
            usec: field("usec"),
        }
    }

    /// What happened between `earlier` and `self`.
    #[must_use]
    pub fn since(self, earlier: Self) -> Self {
        Self {
            calls: self.calls.saturating_sub(earlier.calls),
            usec: self.usec.saturating_sub(earlier.usec),
        }
    }

    /// Server microseconds per call (zero without calls).
    #[must_use]
    pub fn usec_per_call(self) -> f64 {
        self.usec as f64 / self.calls.max(1) as f64
    }
}

impl std::ops::Add for ScriptStats {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        Self {
            calls: self.calls + other.calls,
            usec: self.usec + other.usec,
        }
    }
}

/// The mean of `samples` (zero when empty).
fn mean(samples: &[Duration]) -> Duration {
    samples.iter().sum::<Duration>() / samples.len().max(1) as u32
}

/// A backend's raw floor: one raw operation, and how many of them a lock step is compared with.
pub trait Floor: Clone + Send + Sync + 'static {
    /// The raw operation, as printed ("EVALSHA"; one round trip unless the name says more).
    fn op_name(&self) -> &'static str;

    /// One raw operation by task `task` (below [`CONCURRENT_TASKS`]; tasks use their own key).
    fn op(&self, task: usize) -> impl Future<Output = ()> + Send;

    /// How many raw operations one acquire+release is compared with.
    fn ops_per_pair(&self) -> u32 {
        2
    }

    /// How many sequential raw operations one handoff is budgeted (see [`Floor::handoff`]).
    fn ops_per_handoff(&self) -> u32 {
        4
    }

    /// The uncontended floor, as printed.
    fn pair_name(&self) -> String {
        times(self.ops_per_pair(), self.op_name())
    }

    /// The concurrent floor, as printed.
    fn rate_name(&self) -> String {
        match self.ops_per_pair() {
            1 => format!("{}/s", self.op_name()),
            2 => format!("½ × raw {}/s", self.op_name()),
            n => format!("1/{n} × raw {}/s", self.op_name()),
        }
    }

    /// The handoff floor, as printed.
    fn handoff_name(&self) -> String {
        times(self.ops_per_handoff(), self.op_name())
    }

    /// The handoff floor: [`Floor::ops_per_handoff`] × the sequential raw operation.
    fn handoff(&self, n: usize) -> impl Future<Output = Summary> + Send {
        async move {
            self.sequential(n.min(1000))
                .await
                .times(self.ops_per_handoff())
        }
    }

    /// The raw operation `n` times in sequence.
    fn sequential(&self, n: usize) -> impl Future<Output = Summary> + Send {
        async move {
            let mut samples = Vec::with_capacity(n);
            for _ in 0..n {
                let start = Instant::now();
                self.op(0).await;
                samples.push(start.elapsed());
            }
            Summary::of(&mut samples)
        }
    }

    /// Raw operations per second from [`CONCURRENT_TASKS`] tasks during `window`.
    fn concurrent(&self, window: Duration) -> impl Future<Output = f64> + Send {
        let floor = self.clone();
        concurrent_rate(window, move |task| {
            let floor = floor.clone();
            async move { floor.op(task).await }
        })
    }

    /// Script calls the server has counted and the time it spent in them, where it counts
    /// them (Redis).
    fn script_stats(&self) -> impl Future<Output = Option<ScriptStats>> + Send {
        async { None }
    }

    /// Removes what the floor left on the server.
    fn clean_up(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// Operations per second from [`CONCURRENT_TASKS`] tasks, each calling `op(its index)` in a
/// loop until `window` has passed. Lock figures and floors are measured alike with it.
pub async fn concurrent_rate<F, Fut>(window: Duration, op: F) -> f64
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let done = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + window;
    let started = Instant::now();
    let tasks: Vec<_> = (0..CONCURRENT_TASKS)
        .map(|task| {
            let (op, done) = (op.clone(), done.clone());
            tokio::spawn(async move {
                while Instant::now() < until {
                    op(task).await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("concurrent task");
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// The lock's acquire+release pairs per second from [`CONCURRENT_TASKS`] tasks, each on a key
/// of its own (`wide:<task>`): the lock figure the concurrent floors are compared with.
pub async fn concurrent_pairs(locks: &lock_core::LockClient, window: Duration) -> f64 {
    let locks = locks.clone();
    concurrent_rate(window, move |task| {
        let locks = locks.clone();
        async move {
            let guard = locks.lock(format!("wide:{task}")).await.expect("acquire");
            guard.release().await.expect("release");
        }
    })
    .await
}

/// "`n` × `op` round trip".
fn times(n: u32, op: &str) -> String {
    match n {
        1 => format!("{op} round trip"),
        n => format!("{n} × {op} round trip"),
    }
}

/// Memory: a `tokio::sync::Mutex` per task; the handoff floor is measured, not budgeted.
#[derive(Clone)]
pub struct MemoryFloor {
    mutexes: Arc<Vec<tokio::sync::Mutex<u64>>>,
}

impl Default for MemoryFloor {
    fn default() -> Self {
        Self {
            mutexes: Arc::new((0..CONCURRENT_TASKS).map(|_| Default::default()).collect()),
        }
    }
}

impl Floor for MemoryFloor {
    fn op_name(&self) -> &'static str {
        "tokio Mutex lock+unlock"
    }

    async fn op(&self, task: usize) {
        *self.mutexes[task].lock().await += 1;
    }

    fn ops_per_pair(&self) -> u32 {
        1
    }

    fn pair_name(&self) -> String {
        self.op_name().into()
    }

    fn rate_name(&self) -> String {
        "tokio Mutex pairs/s".into()
    }

    fn handoff_name(&self) -> String {
        "tokio Mutex handoff".into()
    }

    /// The handoff latency of a tokio Mutex with [`HANDOFF_WAITERS`] waiters.
    async fn handoff(&self, n: usize) -> Summary {
        let mutex = Arc::new(tokio::sync::Mutex::new(None::<Instant>));
        let samples: Arc<Mutex<Vec<Duration>>> = Arc::default();
        let tasks: Vec<_> = (0..HANDOFF_WAITERS)
            .map(|_| {
                let (mutex, samples) = (mutex.clone(), samples.clone());
                tokio::spawn(async move {
                    loop {
                        let mut released_at = mutex.lock().await;
                        let now = Instant::now();
                        let mut samples = samples.lock().unwrap_or_else(PoisonError::into_inner);
                        if let Some(at) = released_at.take() {
                            samples.push(now - at);
                        }
                        if samples.len() >= n {
                            return;
                        }
                        drop(samples);
                        *released_at = Some(Instant::now());
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("floor handoff task");
        }
        let mut samples =
            std::mem::take(&mut *samples.lock().unwrap_or_else(PoisonError::into_inner));
        Summary::of(&mut samples)
    }
}

/// Redis: `EVALSHA` of a script that returns at once, on a `ConnectionManager` as the backend.
#[derive(Clone)]
pub struct RedisFloor {
    connection: redis::aio::ConnectionManager,
    admin: redis::aio::MultiplexedConnection,
    script: redis::Script,
}

impl RedisFloor {
    /// Connects to `url` and loads the script.
    pub async fn connect(url: &str) -> Self {
        let client = redis::Client::open(url)
            .unwrap_or_else(|e| usage_error(&format!("bad Redis URL: {e}")));
        let mut connection = client
            .get_connection_manager()
            .await
            .unwrap_or_else(|e| usage_error(&format!("cannot reach Redis at {url}: {e}")));
        let admin = client
            .get_multiplexed_async_connection()
            .await
            .expect("admin connection");
        let script = redis::Script::new("return 1");
        script
            .prepare_invoke()
            .load_async(&mut connection)
            .await
            .expect("load floor script");
        Self {
            connection,
            admin,
            script,
        }
    }
}

impl Floor for RedisFloor {
    fn op_name(&self) -> &'static str {
        "EVALSHA"
    }

    async fn op(&self, _task: usize) {
        let _: i64 = self
            .script
            .invoke_async(&mut self.connection.clone())
            .await
            .expect("floor EVALSHA");
    }

    /// EVALSHA + EVAL calls and their time as the server counts them (`INFO commandstats`).
    async fn script_stats(&self) -> Option<ScriptStats> {
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut self.admin.clone())
            .await
            .ok()?;
        Some(
            ScriptStats::from_commandstats(&info, "evalsha")
                + ScriptStats::from_commandstats(&info, "eval"),
        )
    }
}

/// PostgreSQL and MySQL: `SELECT 1` on a sqlx pool sized like the backend's.
#[derive(Clone)]
pub enum SqlFloor {
    /// On PostgreSQL.
    Postgres(sqlx::PgPool),
    /// On MySQL.
    MySql(sqlx::MySqlPool),
}

impl SqlFloor {
    /// Connects to [`postgres_url`].
    pub async fn postgres() -> Self {
        Self::Postgres(pool(&postgres_url(), "PostgreSQL").await)
    }

    /// Connects to [`mysql_url`].
    pub async fn mysql() -> Self {
        Self::MySql(pool(&mysql_url(), "MySQL").await)
    }
}

/// A pool of [`SQL_POOL`] connections to `url`, or a usage error naming `engine`.
async fn pool<DB: sqlx::Database>(url: &str, engine: &str) -> sqlx::Pool<DB> {
    sqlx::pool::PoolOptions::<DB>::new()
        .max_connections(SQL_POOL)
        .connect(url)
        .await
        .unwrap_or_else(|e| usage_error(&format!("cannot reach {engine} at {url}: {e}")))
}

impl Floor for SqlFloor {
    fn op_name(&self) -> &'static str {
        "SELECT 1"
    }

    async fn op(&self, _task: usize) {
        // One query per arm: a sqlx query is typed by its database.
        match self {
            Self::Postgres(pool) => sqlx::query("SELECT 1").execute(pool).await.map(drop),
            Self::MySql(pool) => sqlx::query("SELECT 1").execute(pool).await.map(drop),
        }
        .expect("floor SELECT 1");
    }
}

/// ZooKeeper: create and delete an ephemeral node (one per task) on a session of its own,
/// opened like the backend's. Acquire is at least a create (and a read of the queue) and
/// release a delete, so one create+delete stands for a pair.
#[derive(Clone)]
pub struct ZooKeeperFloor {
    client: zk::Client,
    prefix: Arc<str>,
}

impl ZooKeeperFloor {
    /// Opens a session on [`zookeeper_url`].
    pub async fn connect() -> Self {
        let url = zookeeper_url();
        let client = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .with_connection_timeout(Duration::from_secs(5))
            .with_fail_eagerly()
            .connect(&url)
            .await
            .unwrap_or_else(|e| usage_error(&format!("cannot reach ZooKeeper at {url}: {e}")));
        Self {
            client,
            prefix: format!("/lock-bench-floor-{}-", std::process::id()).into(),
        }
    }
}

impl Floor for ZooKeeperFloor {
    fn op_name(&self) -> &'static str {
        "ephemeral create+delete"
    }

    fn pair_name(&self) -> String {
        "create+delete (2 RTs)".into()
    }

    fn handoff_name(&self) -> String {
        "2 × create+delete (4 RTs)".into()
    }

    async fn op(&self, task: usize) {
        let path = format!("{}{task}", self.prefix);
        let options = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
        self.client
            .create(&path, &[], &options)
            .await
            .expect("floor create");
        self.client.delete(&path, None).await.expect("floor delete");
    }

    fn ops_per_pair(&self) -> u32 {
        1
    }

    /// 2 × create+delete: 4 round trips, as on the other servers.
    fn ops_per_handoff(&self) -> u32 {
        2
    }
}

/// etcd: one txn that puts a key (one per task), on a client connected like the backend's.
/// A Raft write, as the backend's acquire and release txns are.
#[derive(Clone)]
pub struct EtcdFloor {
    client: etcd::Client,
    prefix: Arc<str>,
}

impl EtcdFloor {
    /// Connects to [`etcd_url`].
    pub async fn connect() -> Self {
        let url = etcd_url();
        let endpoints: Vec<&str> = url.split(',').map(str::trim).collect();
        let options = etcd::ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_keep_alive(Duration::from_secs(5), Duration::from_secs(2));
        let client = etcd::Client::connect(&endpoints, Some(options))
            .await
            .unwrap_or_else(|e| usage_error(&format!("cannot reach etcd at {url}: {e}")));
        Self {
            client,
            prefix: format!("lock-bench-floor/{}/", std::process::id()).into(),
        }
    }
}

impl Floor for EtcdFloor {
    fn op_name(&self) -> &'static str {
        "txn(put)"
    }

    async fn op(&self, task: usize) {
        let txn = etcd::Txn::new().and_then([etcd::TxnOp::put(
            format!("{}{task}", self.prefix),
            "",
            None,
        )]);
        self.client.clone().txn(txn).await.expect("floor txn");
    }

    async fn clean_up(&self) {
        let prefix = etcd::DeleteOptions::new().with_prefix();
        if let Err(e) = self
            .client
            .clone()
            .delete(self.prefix.as_bytes(), Some(prefix))
            .await
        {
            eprintln!("could not delete the floor's etcd keys: {e}");
        }
    }
}
