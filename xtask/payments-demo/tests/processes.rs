//! Two app processes, one on axum and one on actix-web (this package's `payments` binary),
//! sharing a real backend: on `redis` (records and claims in Redis, the ledger in PostgreSQL)
//! and on `postgres` (all in PostgreSQL).
//!
//! - 1,000 identical payments sent at once over both: the handler runs once, every answer is
//!   the original, a replay of it or a 409, and the ledger holds one payment.
//! - A process killed (SIGKILL) while its handler runs: the retry on the other process, once
//!   the dead claim's lease has run out, runs the handler again, and the ledger holds exactly
//!   one payment, the retry's.
//!
//! Needs `LOCK_TEST_POSTGRES_URL` (and `LOCK_TEST_REDIS_URL` for redis); `cargo xtask test`
//! sets them and makes a missing server a failure.

use std::path::PathBuf;
use std::time::Duration;

use example_support::payments::Ledger;
use lock_harness::demo::payments::checks::{concurrent_duplicates, killed_mid_request, AppCommand};
use lock_testing::{server_url, unique};

fn app(framework: &str) -> AppCommand {
    AppCommand {
        binary: PathBuf::from(env!("CARGO_BIN_EXE_payments")),
        args: vec!["--framework".into(), framework.into()],
    }
}

/// The arguments every process of a test shares (backend, URLs, a fresh namespace) and the
/// ledger they record in; `None` when the servers are not configured (a loud skip, or a
/// failure under `cargo xtask test` / CI).
async fn shared(backend: &str) -> Option<(Vec<String>, Ledger)> {
    let postgres = server_url("LOCK_TEST_POSTGRES_URL").unwrap()?;
    let namespace = unique("payments-it");
    let mut args: Vec<String> = [
        "--backend",
        backend,
        "--postgres-url",
        &postgres,
        "--namespace",
        &namespace,
    ]
    .map(String::from)
    .to_vec();
    if backend == "redis" {
        let redis = server_url("LOCK_TEST_REDIS_URL").unwrap()?;
        args.extend(["--redis-url".into(), redis]);
    }
    let ledger = Ledger::connect(&postgres, &namespace).await.unwrap();
    Some((args, ledger))
}

async fn duplicates(backend: &str) {
    let Some((mut args, ledger)) = shared(backend).await else {
        return;
    };
    args.extend(["--handler-ms".into(), "100".into()]);
    let axum = app("axum").launch(&args).await.unwrap();
    let actix = app("actix").launch(&args).await.unwrap();
    let targets = [axum.base.clone(), actix.base.clone()];
    concurrent_duplicates(&targets, &ledger, 1_000)
        .await
        .unwrap();
}

async fn killed(backend: &str) {
    let Some((args, ledger)) = shared(backend).await else {
        return;
    };
    let lease = Duration::from_millis(1_000);
    killed_mid_request(&app("axum"), &app("actix"), &args, &ledger, lease)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_1000_identical_payments_over_two_processes_run_once() {
    duplicates("redis").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_1000_identical_payments_over_two_processes_run_once() {
    duplicates("postgres").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_handler_killed_mid_request_runs_again_after_the_lease_and_pays_once() {
    killed("redis").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_handler_killed_mid_request_runs_again_after_the_lease_and_pays_once() {
    killed("postgres").await;
}
