//! The CI check that the demo needs nothing but the Rust toolchain: the crates
//! `cargo xtask demo` builds on the memory backend (with the features it builds
//! them with) must not depend on a server client, and so on no system package
//! (etcd's client needs `protoc`). Reads `cargo tree`; builds nothing.

use crate::{cmd, Error, Result};

/// What `cargo xtask demo` builds on memory: the lock demo and the inventory
/// load (lock-harness without its `servers` feature), the flash-sale apps, the
/// stampede demo, and the idempotency demo (without its `servers` feature).
const DEMO_CRATES: &[(&str, &[&str])] = &[
    ("lock-harness", &["--no-default-features"]),
    ("flash-sale-axum", &[]),
    ("flash-sale-actix", &[]),
    ("stampede-demo", &[]),
    ("payments-demo", &["--no-default-features"]),
];

/// Crates that mean a server client, or a build that needs a system package.
const FORBIDDEN: &[&str] = &[
    "etcd-client",
    "prost-build",
    "tonic-build",
    "sqlx",
    "zookeeper-client",
];

/// Fails, naming the crates, if any demo crate depends on a forbidden one.
pub(crate) fn check() -> Result<()> {
    let mut found = Vec::new();
    for (package, flags) in DEMO_CRATES {
        let mut tree = cmd::cargo();
        tree.args([
            "tree",
            "-p",
            package,
            "-e",
            "normal,build",
            "--prefix",
            "none",
        ]);
        tree.args(["--format", "{p}"]).args(*flags);
        cmd::echo(&tree);
        let listing = cmd::probe(&mut tree)
            .ok_or_else(|| Error::failed(format!("`cargo tree -p {package}` failed")))?;
        for name in listing
            .lines()
            .filter_map(|line| line.split_whitespace().next())
        {
            if FORBIDDEN.contains(&name) {
                found.push(format!("{package} -> {name}"));
            }
        }
    }
    found.sort();
    found.dedup();
    if found.is_empty() {
        eprintln!("the demo's crates depend on no server client");
        Ok(())
    } else {
        Err(Error::failed(format!(
            "`cargo xtask demo` would build a server client (and need system packages): {}",
            found.join(", ")
        )))
    }
}
