//! `cargo xtask demo|stress|bench`: shortcuts for the `lock-harness`
//! binaries in `xtask/harness`.
//!
//! `demo inventory [ARGS...]` runs the flash-sale scenario (the example apps
//! over HTTP, see `xtask/harness/src/bin/inventory.rs`); `demo` with no
//! arguments runs the lock demo and then that scenario on memory.
//! It is built in release mode, as its table reports req/s.
//! `demo stampede [ARGS...]` runs the cache-stampede scenario (the stampede
//! apps in one process, see `xtask/stampede-demo`), in release mode like
//! `stress` and `bench`, as it reports latencies. `demo idempotency [ARGS...]`
//! runs the idempotent-payments scenario (the payments apps in one process,
//! see `xtask/payments-demo`), in release mode too. `demo` alone runs the lock demo,
//! the inventory and the idempotency scenarios on memory from one debug build of every
//! crate they need (a cold run measured 67 s on 2 cores: 59 s of build), so a first run is
//! quick; its rates are those of a debug build, and its table says so.
//!
//! `demo operator [ARGS...]` runs the operator's tools end to end (see `xtask/operator-demo`):
//! the flash-sale app on Redis with its admin console, a lock held with waiters, and
//! `lockctl show`, `release --reason` and `audit` against it, PASS/FAIL per step.
//!
//! `chaos [ARGS...]` runs the fault catalogue (`xtask/harness/src/bin/chaos.rs`), in release
//! mode, with the stack servers of its backends (all by default) and Redis for its fenced
//! resource.
//!
//! `stress` and `bench` are built in release mode (debug numbers are
//! meaningless for them); `demo` alone is not, to keep its first run quick. When
//! the arguments select a backend that is a stack server (`--backend redis`)
//! that server is brought up first, and stopped afterwards if this run
//! started it.

use std::process::Command;

use crate::flags::HarnessBin;
use crate::stack::{self, Server};
use crate::{cmd, Error, Result};

/// Runs harness binary `bin` with `args`, passing its exit code through.
pub(crate) fn run(bin: HarnessBin, args: &[String]) -> Result<()> {
    let scenario = args
        .first()
        .map(String::as_str)
        .filter(|_| bin == HarnessBin::Demo);
    let idempotency = scenario == Some(IDEMPOTENCY);
    let crash = scenario == Some(CRASH);
    let mut needed: Vec<&'static dyn Server> = if bin == HarnessBin::Chaos {
        chaos_servers(args)
    } else if scenario == Some(LEADER) || scenario == Some(OPERATOR) {
        // The instances (the operator demo's app, its lock clients and lockctl) share the
        // stack's Redis.
        stack::by_name("redis").into_iter().collect()
    } else if crash {
        // Both store configurations need both servers (the ledger is in PostgreSQL).
        ["redis", "postgres"]
            .into_iter()
            .filter_map(stack::by_name)
            .collect()
    } else {
        backends(args)
            .into_iter()
            .flat_map(stack::for_backend)
            .collect()
    };
    // The payments on Redis keep their ledger in PostgreSQL.
    if idempotency && needed.iter().any(|s| s.name() == "redis") {
        needed.extend(stack::by_name("postgres"));
    }
    // A server of the user's own (`--redis-url`, `--postgres-url`) needs none of ours;
    // every harness program reads `--redis-url`.
    if has_flag(args, "--redis-url") {
        needed.retain(|s| s.name() != "redis");
    }
    if (idempotency || crash) && has_flag(args, "--postgres-url") {
        needed.retain(|s| s.name() != "postgres");
    }
    // The bench's stock figures on PostgreSQL and MySQL compare with Redis's atomic script, and
    // its cluster figures with one Redis.
    if bin == HarnessBin::Bench
        && needed.iter().any(|s| {
            matches!(s.name(), "postgres" | "mysql") || s.name().starts_with("redis-cluster-")
        })
        && !needed.iter().any(|s| s.name() == "redis")
        && !has_flag(args, "--redis-url")
    {
        needed.extend(stack::by_name("redis"));
    }
    // The bench's acknowledgement figures under Sentinel also run on the redis-secure set
    // (Redis 8: `WAITAOF`).
    if bin == HarnessBin::Bench
        && needed
            .iter()
            .any(|s| s.name().starts_with("redis-sentinel-"))
    {
        needed.extend(stack::for_backend("redis-secure"));
    }
    // Stress keeps its shared counters in Redis whichever backend it locks with.
    if bin == HarnessBin::Stress
        && !needed.is_empty()
        && !needed.iter().any(|s| s.name() == "redis")
        && !has_flag(args, "--redis-url")
    {
        needed.extend(stack::by_name("redis"));
    }
    let started = if needed.is_empty() {
        Vec::new()
    } else {
        stack::up(&needed)?
    };

    let result = match (bin, args.first().map(String::as_str)) {
        (HarnessBin::Demo, Some(INVENTORY)) => run_inventory(&args[1..]),
        (HarnessBin::Demo, Some(STAMPEDE)) => run_stampede(&args[1..]),
        (HarnessBin::Demo, Some(IDEMPOTENCY)) => run_idempotency(&args[1..]),
        (HarnessBin::Demo, Some(CRASH)) => run_crash(&args[1..]),
        (HarnessBin::Demo, Some(LEADER)) => run_leader(&args[1..]),
        (HarnessBin::Demo, Some(OPERATOR)) => run_operator(&args[1..]),
        // `cargo xtask demo` alone: the quick scenarios, on memory.
        (HarnessBin::Demo, None) => run_quick_demo(),
        (HarnessBin::Bench, _) if has_flag(args, crate::bench_against::AGAINST) => {
            crate::bench_against::run(args)
        }
        _ => run_bin(bin, args),
    };

    let stopped = stack::down(&started);
    result.and(stopped)
}

/// The stack servers `chaos` with `args` needs: those of its backends (`all`, the default, is
/// every server; `--short` alone is Redis and ZooKeeper; RedLock's nodes are servers of the
/// run's own, as the lock Redis is), and Redis always, for the fenced resource. None for
/// `--help`.
fn chaos_servers(args: &[String]) -> Vec<&'static dyn Server> {
    if has_flag(args, "--help") {
        return Vec::new();
    }
    let named = backends(args);
    let mut needed: Vec<&'static dyn Server> = if named.is_empty() || named.contains(&"all") {
        if has_flag(args, "--short") && named.is_empty() {
            ["redis", "zookeeper"]
                .into_iter()
                .filter_map(stack::by_name)
                .collect()
        } else {
            stack::SERVERS.to_vec()
        }
    } else {
        named
            .into_iter()
            .filter(|name| *name != "redlock")
            .flat_map(stack::for_backend)
            .collect()
    };
    if !needed.iter().any(|s| s.name() == "redis") {
        needed.extend(stack::by_name("redis"));
    }
    needed
}

/// The binaries `cargo xtask demo` alone runs, in order: the lock demo, the inventory
/// scenario (which starts the two flash-sale apps beside it) and the idempotency scenario.
const QUICK_DEMO: &[&str] = &["demo", INVENTORY, IDEMPOTENCY];

/// `cargo xtask demo` alone, on memory: builds everything it runs in ONE cargo invocation
/// (one dependency graph keeps both cores busy to the end, where three builds in a row each
/// ended on a single linking core), without any crate's default features, so no server
/// client is built; then runs the binaries from the target directory.
fn run_quick_demo() -> Result<()> {
    let mut build = cmd::cargo();
    build.args(["build", "--no-default-features"]);
    for package in [
        "lock-harness",
        "flash-sale-axum",
        "flash-sale-actix",
        "payments-demo",
    ] {
        build.args(["-p", package]);
    }
    for bin in QUICK_DEMO
        .iter()
        .chain(&["flash-sale-axum", "flash-sale-actix"])
    {
        build.args(["--bin", bin]);
    }
    cmd::run(&mut build)?;
    let target = target_dir();
    for bin in QUICK_DEMO {
        run_with_stack(Command::new(target.join("debug").join(bin)), &[])?;
    }
    Ok(())
}

/// The `demo` scenario that sells a SKU over HTTP (`demo inventory [ARGS...]`).
const INVENTORY: &str = "inventory";

/// `demo inventory`: builds both flash-sale apps, then runs the harness's
/// `inventory` binary, which starts the app instances next to it, fires the
/// buyers and prints the table. In release mode: its req/s are what people compare.
fn run_inventory(args: &[String]) -> Result<()> {
    let mut build = cmd::cargo();
    build.args([
        "build",
        "--release",
        "-p",
        "flash-sale-axum",
        "-p",
        "flash-sale-actix",
    ]);
    // The shop on PostgreSQL or MySQL needs its sqlx store; on memory and Redis it builds
    // without (nothing but the Rust toolchain).
    for backend in backends(args) {
        if matches!(backend, "postgres" | "mysql") {
            build.arg(format!(
                "--features=flash-sale-axum/{backend},flash-sale-actix/{backend}"
            ));
        }
    }
    cmd::run(&mut build)?;
    let mut cargo = cmd::cargo();
    cargo.args(["run", "--release", "-p", "lock-harness"]);
    let features = harness_features(args);
    cargo.args(features);
    if features.is_empty() {
        stack::ensure_build_tools()?;
    }
    cargo.args(["--bin", INVENTORY, "--"]);
    run_with_stack(cargo, args)
}

/// The backends that need lock-harness's `servers` feature (their clients).
const SERVER_BACKENDS: &[&str] = &["zookeeper", "etcd", "postgres", "mysql"];

/// lock-harness's features for a run with `args`: without `servers` unless a
/// backend in `args` needs it, so a demo on memory or Redis builds no server
/// client and needs nothing but the Rust toolchain (`ci` checks this).
fn harness_features(args: &[String]) -> &'static [&'static str] {
    if backends(args).iter().any(|b| SERVER_BACKENDS.contains(b)) {
        &[]
    } else {
        &["--no-default-features"]
    }
}

/// The `demo` scenario of cache-stampede protection (`demo stampede [ARGS...]`).
const STAMPEDE: &str = "stampede";

/// `demo stampede`: runs the `stampede` binary of `xtask/stampede-demo`
/// (release), which serves both stampede apps in-process, drives the two
/// phases and exits non-zero on FAIL. Built on its own, so lock-harness comes
/// without its `servers` feature: no etcd client, no `protoc`.
fn run_stampede(args: &[String]) -> Result<()> {
    let mut cargo = cmd::cargo();
    cargo.args([
        "run",
        "--release",
        "-p",
        "stampede-demo",
        "--bin",
        STAMPEDE,
        "--",
    ]);
    run_with_stack(cargo, args)
}

/// The `demo` scenario of idempotent endpoints (`demo idempotency [ARGS...]`).
const IDEMPOTENCY: &str = "idempotency";

/// `demo idempotency`: runs the `idempotency` binary of `xtask/payments-demo`,
/// which serves both payments apps in-process, fires duplicates and retries and
/// exits non-zero on FAIL. On memory it is built without its `servers` feature
/// (no sqlx: nothing but the Rust toolchain); redis and postgres need it, for
/// the ledger in PostgreSQL.
fn run_idempotency(args: &[String]) -> Result<()> {
    let mut cargo = cmd::cargo();
    cargo.args([
        "run",
        "--release",
        "-p",
        "payments-demo",
        "--bin",
        IDEMPOTENCY,
    ]);
    if backends(args).iter().all(|b| *b == "memory") {
        cargo.arg("--no-default-features");
    }
    cargo.arg("--");
    run_with_stack(cargo, args)
}

/// The `demo` scenario of payments killed at their end (`demo crash [ARGS...]`).
const CRASH: &str = "crash";

/// `demo crash`: builds the `payments` app binary and the `crash` driver of
/// `xtask/payments-demo` (release), then runs the driver, which starts and kills
/// `payments` processes next to it.
fn run_crash(args: &[String]) -> Result<()> {
    let mut build = cmd::cargo();
    build.args([
        "build",
        "--release",
        "-p",
        "payments-demo",
        "--bin",
        "payments",
        "--bin",
        CRASH,
    ]);
    cmd::run(&mut build)?;
    let target = target_dir();
    run_with_stack(Command::new(target.join("release").join(CRASH)), args)
}

/// The `demo` scenario of a scheduled job on several instances (`demo leader [ARGS...]`).
const LEADER: &str = "leader";

/// `demo leader`: builds `flash-sale-axum` (release), then runs lock-harness's `leader`
/// binary (without its `servers` feature), which starts the instances and watches their
/// scheduled job.
fn run_leader(args: &[String]) -> Result<()> {
    let mut build = cmd::cargo();
    build.args(["build", "--release", "-p", "flash-sale-axum"]);
    cmd::run(&mut build)?;
    let mut cargo = cmd::cargo();
    cargo.args([
        "run",
        "--release",
        "-p",
        "lock-harness",
        "--no-default-features",
    ]);
    cargo.args(["--bin", LEADER, "--"]);
    run_with_stack(cargo, args)
}

/// The `demo` scenario of the operator's tools (`demo operator [ARGS...]`).
const OPERATOR: &str = "operator";

/// `demo operator`: builds the flash-sale app (axum), `lockctl` and the `operator` driver of
/// `xtask/operator-demo` (debug: nothing here is timed), then runs the driver, which starts
/// the app with its admin console on the stack's Redis, holds a lock with waiters, and runs
/// `lockctl show`, `release --reason` and `audit` against it. lockctl speaks to every store,
/// etcd's client included, whose build needs `protoc`: installed first when missing.
fn run_operator(args: &[String]) -> Result<()> {
    stack::ensure_build_tools()?;
    let mut build = cmd::cargo();
    build.args([
        "build",
        "-p",
        "flash-sale-axum",
        "-p",
        "lockctl",
        "-p",
        "operator-demo",
    ]);
    cmd::run(&mut build)?;
    let debug = target_dir().join("debug");
    let mut driver = Command::new(debug.join(OPERATOR));
    driver
        .arg("--app")
        .arg(debug.join("flash-sale-axum"))
        .arg("--lockctl")
        .arg(debug.join("lockctl"));
    run_with_stack(driver, args)
}

/// Where cargo puts what it builds: `CARGO_TARGET_DIR`, else `target/` at the root.
fn target_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || cmd::project_root().join("target"),
        std::path::PathBuf::from,
    )
}

/// Whether `args` (before a bare `--`) has `--name` or `--name=...`.
fn has_flag(args: &[String], name: &str) -> bool {
    args.iter()
        .take_while(|arg| *arg != "--")
        .any(|arg| arg == name || arg.strip_prefix(name).is_some_and(|v| v.starts_with('=')))
}

/// Builds and runs the harness binary `bin`.
fn run_bin(bin: HarnessBin, args: &[String]) -> Result<()> {
    let mut cargo = cmd::cargo();
    cargo.arg("run");
    let features = if bin == HarnessBin::Demo {
        harness_features(args)
    } else {
        cargo.arg("--release");
        &[]
    };
    cargo.args(features);
    // With lock-harness's default `servers` feature the build compiles etcd's client, whose
    // build script runs protoc: on a fresh machine `bench --backend redis` needs it too.
    if features.is_empty() {
        stack::ensure_build_tools()?;
    }
    // `bench --allocations`: the allocation profile, a binary of its own (DHAT's allocator
    // would slow the timing figures down), beside the same floors as `bench`.
    if bin == HarnessBin::Bench && has_flag(args, ALLOCATIONS) {
        cargo.args(["-p", "lock-harness", "--bin", "allocations", "--"]);
        let rest: Vec<String> = args.iter().filter(|a| *a != ALLOCATIONS).cloned().collect();
        return run_with_stack(cargo, &rest);
    }
    // `bench` compares with another lock crate (lock-harness's `compare` feature).
    if bin == HarnessBin::Bench {
        cargo.args(["--features", "compare"]);
    }
    cargo.args(["-p", "lock-harness", "--bin", bin.name(), "--"]);
    run_with_stack(cargo, args)
}

/// `bench --allocations`: allocations per cycle and their sites instead of the timings.
const ALLOCATIONS: &str = "--allocations";

/// Runs `cargo run ... --` with the binary's `args` and the env vars of every
/// running server, so a server started earlier with `stack up` is found
/// without extra flags.
fn run_with_stack(mut cargo: Command, args: &[String]) -> Result<()> {
    cargo.args(args);
    for (key, value) in stack::env_vars()? {
        cargo.env(key, value);
    }
    let status = cmd::status(&mut cargo)?;
    if status.success() {
        Ok(())
    } else {
        // The binary (or cargo) has already explained the failure on the
        // terminal; just pass its exit code through.
        Err(Error::exit(cmd::exit_code(status), ""))
    }
}

/// The values of every `--backend X` / `--backend=X` in `args` (a value may
/// be a comma-separated list), stopping at a bare `--` like a conventional
/// parser would.
fn backends(args: &[String]) -> Vec<&str> {
    let mut found = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--" {
            break;
        }
        if arg == "--backend" {
            if let Some(value) = iter.next() {
                found.push(value.as_str());
            }
        } else if let Some(value) = arg.strip_prefix("--backend=") {
            found.push(value);
        }
    }
    found
        .into_iter()
        .flat_map(|value| value.split(','))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{backends, has_flag};

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|&a| a.to_owned()).collect()
    }

    #[test]
    fn flags_are_found_before_a_bare_double_dash_only() {
        let given = args(&["stampede", "--backend=redis", "--redis-url", "redis://x/"]);
        assert!(has_flag(&given, "--redis-url"));
        assert!(has_flag(&args(&["--redis-url=redis://x/"]), "--redis-url"));
        assert!(!has_flag(&args(&["--redis-urls"]), "--redis-url"));
        assert!(!has_flag(&args(&["--", "--redis-url"]), "--redis-url"));
        assert_eq!(backends(&given), ["redis"]);
    }
}
