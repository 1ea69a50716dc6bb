//! `cargo xtask test`: the README's test command.
//!
//! Runs the whole workspace's tests with every backend feature against a
//! real stack, so the integration suites cannot silently skip: the stack is
//! brought up first (every single server, the Redis Cluster, the Sentinel
//! set and the secure Sentinel set, whose Redis 8 is built on first use; Chromium and its
//! WebDriver installed for the admin console's browser test, which finds them through
//! `LOCK_TEST_CHROMEDRIVER` and `LOCK_TEST_CHROMIUM`) and `LOCK_TEST_REQUIRE_SERVERS=1` turns
//! "server missing" into a failure.

use crate::stack::{self, REQUIRE_SERVERS_ENV};
use crate::{cmd, Result};

/// Cargo jobs for the test build. Fixed rather than "all cores" so the
/// command behaves the same on a 2-core CI box and on a laptop shared with
/// other builds; the test threads themselves keep cargo's default.
const JOBS: &str = "2";

/// Brings the stack up, runs `cargo test --workspace --all-features -j 2
/// <cargo_args>`, then stops the servers this run started (also when the
/// tests fail). Fails with cargo's exit code.
pub(crate) fn run(cargo_args: &[String]) -> Result<()> {
    // Servers and build tools (protoc for the `etcd` feature) first.
    stack::ensure_installed()?;
    // Servers that were already running stay running: they belong to a
    // developer's `stack up` (or another run) that still relies on them.
    let started = stack::up(&stack::for_tests())?;

    let result = cargo_test(cargo_args);

    let stopped = stack::down(&started);
    // A test failure is the more useful message; report a failure to stop
    // only when the tests themselves passed.
    result.and(stopped)
}

/// Runs `cargo test` with the stack's env vars.
fn cargo_test(cargo_args: &[String]) -> Result<()> {
    let mut cargo = cmd::cargo();
    cargo.args(["test", "--workspace", "--all-features", "-j", JOBS]);
    cargo.args(cargo_args);
    for (key, value) in stack::env_vars()? {
        cargo.env(key, value);
    }
    cargo.env(REQUIRE_SERVERS_ENV, "1");
    cmd::run(&mut cargo)
}
