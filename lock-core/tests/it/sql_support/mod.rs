//! Shared by the PostgreSQL and MySQL suites: the checks of their lock tables ([`checks`]),
//! a lock holder in another process, to be killed, and a case for the sweep of old rows.
//!
//! For the holder, the test binary starts itself again, running only the suite's
//! `child_holder` test (such as `postgres::child_holder`) with `LOCK_TEST_HOLD=<mode>:<key>`
//! set; that test takes the lock, prints `HELD <pid> <fence>` and waits to be killed. Run
//! normally (no variable), `child_holder` does nothing.

mod checks;
mod kind;
mod operator;

pub(crate) use checks::{
    bad_settings_are_typed, fencing_survives_expiry_and_deletion,
    killed_holder_row_expires_by_database_time, long_names_are_hashed_and_kept, sql_suite,
    SqlHarness,
};
pub(crate) use kind::{
    bad_settings_of, hold, holder_backend, old_rows_are_swept_and_tokens_still_increase, sql_kind,
    SharedPool, SqlKind, SqlServer,
};
pub(crate) use operator::{
    an_old_table_upgrades_in_place, expired_audit_records_go,
    listing_finds_hashed_names_and_takes_wildcards_literally,
};

use std::process::Stdio;
use std::time::Duration;

use lock_core::{FencingToken, LockClient, LockGuard};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const HOLD_ENV: &str = "LOCK_TEST_HOLD";

/// A process holding a lock.
pub(crate) struct Holder {
    child: Child,
    pub(crate) pid: u32,
    pub(crate) fence: u64,
}

impl Holder {
    /// Starts the holder of `key` in the test `test` (the suite's `child_holder`, by its path
    /// in the test binary; `mode` tells it which kind of lock to take) and waits until it holds
    /// it.
    pub(crate) async fn start(test: &str, mode: &str, key: &str) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(HOLD_ENV, format!("{mode}:{key}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let held = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                // libtest may have started the line with `test postgres::child_holder ... `.
                if let Some((_, rest)) = line.split_once("HELD ") {
                    let (pid, fence) = rest.split_once(' ').unwrap();
                    return (pid.parse().unwrap(), fence.parse().unwrap());
                }
            }
            panic!("the holder process ended without taking the lock");
        })
        .await
        .expect("the holder process did not take the lock in time");
        Self {
            child,
            pid: held.0,
            fence: held.1,
        }
    }

    /// SIGKILL: no release, no clean disconnect by the client library.
    pub(crate) async fn kill(mut self) {
        self.child.kill().await.unwrap();
    }
}

/// In the child: the mode and key to hold, if this process is a holder.
pub(crate) fn hold_request() -> Option<(String, String)> {
    let value = std::env::var(HOLD_ENV).ok()?;
    let (mode, key) = value.split_once(':')?;
    Some((mode.to_owned(), key.to_owned()))
}

/// In the child: reports the held lock, then waits to be killed (bounded, in case the parent
/// died first).
pub(crate) async fn announce_and_wait(guard: LockGuard) {
    println!(
        "HELD {} {}",
        std::process::id(),
        guard.fencing_token().get()
    );
    tokio::time::sleep(Duration::from_secs(60)).await;
    drop(guard);
}

/// The server URL from `var`; `None` (after saying so) when it is unset and servers are not
/// required, a failure when they are.
pub(crate) fn server_url(var: &str) -> Option<String> {
    lock_testing::server_url(var).unwrap_or_else(|e| panic!("{e}"))
}

/// Three locks for a retention check: one released, one abandoned as a crashed holder leaves
/// it, one still held.
pub(crate) struct SweepCase {
    pub(crate) released: String,
    pub(crate) released_full: String,
    pub(crate) fence_before: FencingToken,
    pub(crate) crashed_full: String,
    pub(crate) holding: LockGuard,
}

/// Takes the three locks of a [`SweepCase`] under `keys` (released, crashed, held).
pub(crate) async fn sweep_case(client: &LockClient, keys: [String; 3]) -> SweepCase {
    let [released, crashed, held] = keys;
    let first = client.lock(&released).await.unwrap();
    let (fence_before, released_full) = (first.fencing_token(), first.key().full().to_owned());
    first.release().await.unwrap();
    let abandoned = client.lock(&crashed).await.unwrap();
    let crashed_full = abandoned.key().full().to_owned();
    abandoned.abandon();
    let holding = client.lock(&held).await.unwrap();
    SweepCase {
        released,
        released_full,
        fence_before,
        crashed_full,
        holding,
    }
}

impl SweepCase {
    /// After the sweep: the released name's next token is still larger; then lets go.
    pub(crate) async fn assert_tokens_still_increase(self, client: &LockClient) {
        let again = client.lock(&self.released).await.unwrap();
        assert!(
            again.fencing_token() > self.fence_before,
            "{} !> {}",
            again.fencing_token(),
            self.fence_before
        );
        self.holding.release().await.unwrap();
    }
}
