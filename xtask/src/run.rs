//! `cargo xtask demo|stress|bench`: shortcuts for the `lock-harness`
//! binaries in `examples/harness`.
//!
//! `stress` and `bench` are built in release mode (debug numbers are
//! meaningless for them); `demo` is not, to keep its first run quick. When
//! the arguments select a backend that is a stack server (`--backend redis`)
//! that server is brought up first, and stopped afterwards if this run
//! started it.

use crate::flags::HarnessBin;
use crate::stack::{self, Server};
use crate::{cmd, Error, Result};

/// Runs harness binary `bin` with `args`, passing its exit code through.
pub(crate) fn run(bin: HarnessBin, args: &[String]) -> Result<()> {
    let needed: Vec<&'static dyn Server> = backends(args)
        .into_iter()
        .filter_map(stack::by_name)
        .collect();
    let started = if needed.is_empty() {
        Vec::new()
    } else {
        stack::up(&needed)?
    };

    let result = run_bin(bin, args);

    let stopped = stack::down(&started);
    result.and(stopped)
}

/// Builds and runs the binary with the env vars of every running server, so
/// a server started earlier with `stack up` is found without extra flags.
fn run_bin(bin: HarnessBin, args: &[String]) -> Result<()> {
    let mut cargo = cmd::cargo();
    cargo.arg("run");
    if bin != HarnessBin::Demo {
        cargo.arg("--release");
    }
    cargo.args(["-p", "lock-harness", "--bin", bin.name(), "--"]);
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
