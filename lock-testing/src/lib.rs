//! Test support of the distributed-locks workspace (**not a stable API**: it changes with the
//! suites that use it, and is not published): support for test suites that need a real server.
//!
//! Integration suites read a server's address from an environment variable that
//! `cargo xtask test` sets. When it is missing they must not pass silently: under
//! `LOCK_TEST_REQUIRE_SERVERS=1` (set by `cargo xtask test`) or `CI` they fail, and otherwise
//! they say loudly that they skipped.
//!
//! Also here: [`RedisServer`], a `redis-server` a test may kill and start again, and
//! [`SqlServer`], a PostgreSQL or MariaDB one a test may crash and start again;
//! `response_cache`, `idempotency` and `keyed_lock`: the suites every response cache,
//! idempotency and keyed-lock adapter (lock-tower, lock-actix) runs; and [`Runs`], what their
//! test handlers count of their runs.
//!
//! [`cluster`]: 3-member etcd and ZooKeeper clusters on loopback whose members a test kills.
//! `metrics` (with the `metrics` feature): a recorder of the test's own thread, read back.
//!
//! A crate of its own, so that nothing of it is in lock-core's API or namespace: a crate's tests
//! take it in `[dev-dependencies]`, with the features of the servers they use (`redis`, `etcd`,
//! `zookeeper`, `metrics`).

pub mod adapter_tests;
pub mod cluster;
pub mod idempotency;
pub mod keyed_lock;
mod log_lines;
#[cfg(feature = "metrics")]
pub mod metrics;
mod redis_server;
pub mod response_cache;
mod runs;
mod sql_server;

pub use log_lines::LogLines;
pub use redis_server::{free_port, RedisServer};
pub use runs::{Run, Runs, SuiteHandler};
pub use sql_server::{SqlKind, SqlServer};

/// The env var that turns a missing test server into a failure.
pub const REQUIRE_SERVERS_ENV: &str = "LOCK_TEST_REQUIRE_SERVERS";

/// Whether a missing test server fails the run: `LOCK_TEST_REQUIRE_SERVERS=1` (set by
/// `cargo xtask test`) or a `CI` variable that is neither empty nor `false`.
///
/// ```
/// // Without either variable (as in this doctest, unless it runs under CI) a suite may skip.
/// # if std::env::var(lock_testing::REQUIRE_SERVERS_ENV).is_err() && std::env::var("CI").is_err() {
/// assert!(!lock_testing::servers_required());
/// # }
/// ```
#[must_use]
pub fn servers_required() -> bool {
    std::env::var(REQUIRE_SERVERS_ENV).is_ok_and(|v| v == "1")
        || std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false")
}

/// The test server address in `var`: `Ok(Some(url))` when set, `Ok(None)` (after printing
/// `SKIPPED ...` on stderr) when unset and not required, `Err` when unset but required.
///
/// ```
/// // Unset, and this doctest runs without CI variables: a loud skip.
/// # std::env::remove_var("LOCK_TEST_NOTHING_URL");
/// # if std::env::var(lock_testing::REQUIRE_SERVERS_ENV).is_err() && std::env::var("CI").is_err() {
/// assert_eq!(lock_testing::server_url("LOCK_TEST_NOTHING_URL"), Ok(None));
/// # }
/// ```
pub fn server_url(var: &str) -> Result<Option<String>, String> {
    if let Ok(url) = std::env::var(var) {
        if !url.is_empty() {
            return Ok(Some(url));
        }
    }
    if servers_required() {
        return Err(format!(
            "{var} is not set but test servers are required; run `cargo xtask test`"
        ));
    }
    eprintln!("SKIPPED: {var} is not set; run `cargo xtask test` to test against a real server");
    Ok(None)
}

/// `name-pid-nanos`: a name (of a key, a namespace) no other test, run or process uses, so
/// that suites sharing a server do not meet.
///
/// ```
/// let (a, b) = (lock_testing::unique("sku"), lock_testing::unique("sku"));
/// assert!(a.starts_with("sku-") && a != b);
/// ```
#[must_use]
pub fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

/// Locks a std mutex, recovering from poisoning (a failed assertion in another test thread
/// must not turn into a panic here).
fn sync_lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
