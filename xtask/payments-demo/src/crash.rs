//! `cargo xtask demo crash [--backend redis|postgres|all] [--rounds N] [--per-round M]
//! [--spacing-us S] [--proxied P] [--lease-ms L] [--handler-ms H] [--redis-url URL]
//! [--postgres-url URL] [--unsafe-separate-commit]`: payments killed at their end, on each
//! store configuration, as app processes of this package's `payments` binary (axum and
//! actix-web in turn; it must sit next to this binary). See
//! [`lock_harness::demo::payments::crash`].
//!
//! 1. **kill sweep**: N rounds of M payments sent S µs apart to a fresh process, killed with
//!    SIGKILL right after one of them committed (a later one each round); every key is then
//!    retried on a process of the other framework.
//! 2. **stalled, then killed**: P times, a process's route to its records is stalled by a
//!    fault proxy once its handler runs, its payment commits on the ledger's route, and it is
//!    killed; the retry must replay that payment.
//!
//! Every key must be paid once (one ledger row, one debit) and every 201 must name that
//! payment. A table, then PASS/FAIL (exit status 1 on FAIL). `--unsafe-separate-commit`
//! commits payments without their answer, as before `ClaimInfo::commit_in`: the same runs
//! then pay twice.

use std::path::PathBuf;
use std::time::Duration;

use example_support::backend::{postgres_url, redis_url};
use example_support::flags::{usage_error, Flags};
use lock_harness::demo::inventory::unique;
use lock_harness::demo::payments::checks::AppCommand;
use lock_harness::demo::payments::crash::{proxied, sweep, CrashSetup, Records, Tally};

const FLAGS: &[&str] = &[
    "backend",
    "rounds",
    "per-round",
    "spacing-us",
    "proxied",
    "lease-ms",
    "handler-ms",
    "redis-url",
    "postgres-url",
    "unsafe-separate-commit",
];

#[tokio::main]
async fn main() {
    let flags = Flags::of_process(FLAGS);
    let number = |name, default| flags.number_or_exit(name, default);
    let configurations = match flags.get("backend").unwrap_or("all") {
        "redis" => vec![Records::Redis],
        "postgres" => vec![Records::Postgres],
        "all" => vec![Records::Redis, Records::Postgres],
        other => usage_error(&format!(
            "--backend is redis, postgres or all, not {other:?}"
        )),
    };
    let shape = sweep::Sweep {
        rounds: number("rounds", 4).max(1) as usize,
        per_round: number("per-round", 30).max(2) as usize,
        spacing: Duration::from_micros(number("spacing-us", 500)),
    };
    let proxied_runs = number("proxied", 3) as usize;
    let unsafe_separate_commit = flags.get("unsafe-separate-commit").is_some();
    let payments = std::env::current_exe()
        .map(|exe| exe.with_file_name("payments"))
        .unwrap_or_else(|e| usage_error(&format!("cannot find this program: {e}")));
    if !payments.exists() {
        usage_error(&format!(
            "{} is missing: build it with `cargo build --release -p payments-demo --bins`",
            payments.display()
        ));
    }
    let app = |framework: &str| AppCommand {
        binary: PathBuf::from(&payments),
        args: vec!["--framework".into(), framework.into()],
    };
    println!(
        "crash: payments killed at their end{}",
        if unsafe_separate_commit {
            " (UNSAFE: payments commit without their answer)"
        } else {
            ""
        }
    );
    println!(
        "{:<50} {:<22} {:>8} {:>9} {:>9} {:>9} {:>10} {:>6}  result",
        "configuration",
        "run",
        "attempts",
        "replayed",
        "retried",
        "answered",
        "paid twice",
        "wrong"
    );
    let mut all_passed = true;
    for records in configurations {
        let setup = CrashSetup {
            apps: [app("axum"), app("actix")],
            records,
            redis_url: redis_url(&flags),
            postgres_url: flags
                .get("postgres-url")
                .map_or_else(postgres_url, str::to_owned),
            namespace: unique("crash"),
            lease: Duration::from_millis(number("lease-ms", 1_000)),
            handler: Duration::from_millis(number("handler-ms", 100)),
            unsafe_separate_commit,
        };
        let runs = [
            ("kill sweep", sweep::run(&setup, shape).await),
            (
                "stalled, then killed",
                proxied::run(&setup, proxied_runs).await,
            ),
        ];
        for (run, outcome) in runs {
            let passed = match outcome {
                Ok(tally) => {
                    row(records.label(), run, &tally);
                    tally.passed()
                }
                Err(error) => {
                    println!("{:<50} {run:<22} error: {error}", records.label());
                    false
                }
            };
            all_passed &= passed;
        }
    }
    println!(
        "\nreplayed: the killed process had committed, the retry got its receipt back; retried: \
         it had not, the retry paid;\nanswered: the killed process answered before it died; \
         paid twice: more than one ledger row or debit for a key."
    );
    if all_passed {
        println!("PASS");
    } else {
        println!("FAIL");
        std::process::exit(1);
    }
}

fn row(configuration: &str, run: &str, tally: &Tally) {
    println!(
        "{configuration:<50} {run:<22} {:>8} {:>9} {:>9} {:>9} {:>10} {:>6}  {}",
        tally.attempts,
        tally.effect_before_kill,
        tally.ran_on_retry,
        tally.answered_before_kill,
        tally.paid_twice,
        tally.wrong,
        if tally.passed() { "PASS" } else { "FAIL" }
    );
}
