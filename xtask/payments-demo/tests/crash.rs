//! Payments killed at their end, on both store configurations, over app processes of both
//! frameworks (this package's `payments` binary): a kill -9 sweep across the handler's end
//! (120 payments each), and the deterministic case of a process whose route to its records is
//! stalled after its payment committed, then killed. Every key must be paid once, with one
//! debit, and every answer must name that payment.
//!
//! The same checks with `--unsafe-separate-commit` (the payment committed without its answer,
//! as before `ClaimInfo::commit_in`) show that they fail: the deterministic case then pays
//! twice every time.
//!
//! Needs `LOCK_TEST_POSTGRES_URL` and `LOCK_TEST_REDIS_URL`; `cargo xtask test` sets them and
//! makes a missing server a failure.

use std::path::PathBuf;
use std::time::Duration;

use lock_harness::demo::payments::checks::AppCommand;
use lock_harness::demo::payments::crash::{proxied, sweep, CrashSetup, Records};
use lock_testing::{server_url, unique};

fn app(framework: &str) -> AppCommand {
    AppCommand {
        binary: PathBuf::from(env!("CARGO_BIN_EXE_payments")),
        args: vec!["--framework".into(), framework.into()],
    }
}

/// The setup on `records`; `None` when the servers are not configured (a loud skip, or a
/// failure under `cargo xtask test` / CI).
fn setup(records: Records, unsafe_separate_commit: bool) -> Option<CrashSetup> {
    Some(CrashSetup {
        apps: [app("axum"), app("actix")],
        records,
        redis_url: server_url("LOCK_TEST_REDIS_URL").unwrap()?,
        postgres_url: server_url("LOCK_TEST_POSTGRES_URL").unwrap()?,
        namespace: unique("crash"),
        lease: Duration::from_millis(1_000),
        handler: Duration::from_millis(100),
        unsafe_separate_commit,
    })
}

async fn kill_sweep(records: Records) {
    let Some(setup) = setup(records, false) else {
        return;
    };
    let tally = sweep::run(&setup, sweep::Sweep::standard()).await.unwrap();
    eprintln!("{}: kill sweep: {tally}", records.label());
    assert!(tally.attempts >= 100);
    assert!(tally.passed(), "{tally}");
}

async fn stalled_then_killed(records: Records) {
    let Some(setup) = setup(records, false) else {
        return;
    };
    let tally = proxied::run(&setup, 2).await.unwrap();
    eprintln!(
        "{}: stalled after the commit, then killed: {tally}",
        records.label()
    );
    assert!(tally.passed(), "{tally}");
    assert_eq!(
        tally.effect_before_kill, 2,
        "the retry replays the committed payment: {tally}"
    );
}

/// Without the answer in the payment's transaction, the deterministic case pays twice.
async fn without_the_answer_in_the_commit_pays_twice(records: Records) {
    let Some(setup) = setup(records, true) else {
        return;
    };
    let tally = proxied::run(&setup, 1).await.unwrap();
    eprintln!("{}, unsafe: {tally}", records.label());
    assert_eq!(tally.paid_twice, 1, "{tally}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_records_a_kill_sweep_pays_each_key_once() {
    kill_sweep(Records::Redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_records_a_kill_sweep_pays_each_key_once() {
    kill_sweep(Records::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_records_a_process_killed_after_its_commit_is_replayed() {
    stalled_then_killed(Records::Redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_records_a_process_killed_after_its_commit_is_replayed() {
    stalled_then_killed(Records::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_records_the_unsafe_separate_commit_pays_twice() {
    without_the_answer_in_the_commit_pays_twice(Records::Redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_records_the_unsafe_separate_commit_pays_twice() {
    without_the_answer_in_the_commit_pays_twice(Records::Postgres).await;
}
