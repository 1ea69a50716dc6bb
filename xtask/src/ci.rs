//! `cargo xtask ci`: everything CI checks, in the order that fails fastest.
//!
//! `.ci/run` calls this. Cheap static checks come first so a formatting slip
//! is reported in seconds, not after a full test build; the last step is the
//! README's test command (`cargo xtask test`), run in-process, and after it the fault
//! catalogue's short form (`cargo xtask chaos --short`) and the stampede, idempotency,
//! inventory and operator demos on Redis.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::flags::HarnessBin;
use crate::{cmd, demo_deps, run, stack, test, Result};

/// Backend features of lock-core. Each must compile on its own (no default
/// features, nothing else enabled) so that feature-gated code cannot come to
/// rely on another backend by accident. Extend when a backend lands.
const BACKEND_FEATURES: &[&str] = &[
    "redis",
    "zookeeper",
    "zookeeper-tls",
    "zookeeper-sasl",
    "etcd",
    "etcd-tls",
    "postgres",
    "postgres-tls",
    "mysql",
    "mysql-tls",
];

/// The crates published to crates.io, whose docs docs.rs builds.
const PUBLISHED: &[&str] = &["lock-macros", "lock-core", "lock-tower", "lock-actix"];

/// Each published crate's docs built as docs.rs builds them, warnings denied: the features its
/// `[package.metadata.docs.rs]` names (or all, or the default ones), and with the nightly
/// toolchain when it is installed, `--cfg docsrs` (the feature badges, `doc_cfg`); without
/// nightly, the same build on the CI toolchain, without the badges.
fn docs_rs_steps() -> Vec<Step> {
    let mut nightly_rustc = cmd::command("rustup", ["run", "nightly", "rustc", "--version"]);
    let nightly = cmd::probe(&mut nightly_rustc).is_some();
    PUBLISHED
        .iter()
        .map(|package| {
            let manifest = cmd::project_root().join(package).join("Cargo.toml");
            let text = std::fs::read_to_string(&manifest).unwrap_or_default();
            let mut doc = cmd::cargo();
            if nightly {
                doc.arg("+nightly");
            }
            doc.args(["doc", "--no-deps", "-p", package]);
            doc.args(docs_rs_features(&text));
            let flags = if nightly {
                "-D warnings --cfg docsrs"
            } else {
                "-D warnings"
            };
            doc.env("RUSTDOCFLAGS", flags);
            let toolchain = if nightly {
                "nightly, --cfg docsrs"
            } else {
                "no nightly: no badges"
            };
            Step {
                name: format!("docs.rs build of {package} ({toolchain})"),
                action: Action::Command(doc),
            }
        })
        .collect()
}

/// The cargo flags for the features a manifest's `[package.metadata.docs.rs]` section names:
/// `features = [..]`, `all-features = true`, or none (the default features).
fn docs_rs_features(manifest: &str) -> Vec<String> {
    let Some(section) = manifest.split("[package.metadata.docs.rs]").nth(1) else {
        return Vec::new();
    };
    let section = section.split("\n[").next().unwrap_or_default();
    for line in section.lines() {
        let line = line.trim();
        if line.replace(' ', "") == "all-features=true" {
            return vec!["--all-features".to_owned()];
        }
        if let Some(list) = line.strip_prefix("features") {
            let names: Vec<&str> = list
                .trim_start_matches([' ', '=', '['])
                .trim_end_matches(']')
                .split(',')
                .map(|name| name.trim().trim_matches('"'))
                .filter(|name| !name.is_empty())
                .collect();
            return vec!["--features".to_owned(), names.join(",")];
        }
    }
    Vec::new()
}

/// One CI step: a name for the summary and what to run.
struct Step {
    /// Label in the summary.
    name: String,
    /// The work itself.
    action: Action,
}

/// What a [`Step`] runs.
enum Action {
    /// An external command (echoed before it runs).
    Command(Command),
    /// The `test` task, run in-process.
    Test,
    /// The check that the demo builds no server client ([`demo_deps`]).
    DemoDeps,
    /// `chaos --short`: the fault catalogue's short form, in-process like `test`.
    Chaos,
    /// A `demo` scenario with these arguments, in-process like `test`: it fails on FAIL.
    Demo(&'static [&'static str]),
}

/// The demos CI runs on Redis after the tests, each the README's scenario on the stack's Redis
/// with two instances of each app: a demo that fails (as the stampede demo did when actix-web's
/// refreshing request waited) fails CI.
const DEMOS: &[&[&str]] = &[
    // A 300 ms origin (the scenario): "as slow as the origin" then means a real wait,
    // not a busy machine's scheduling hiccup against the default 50 ms.
    &[
        "stampede",
        "--backend",
        "redis",
        "--origin-ms",
        "300",
        "--fresh-ms",
        "1000",
        "--swr-ms",
        "5000",
    ],
    &["idempotency", "--backend", "redis"],
    &["inventory", "--backend", "redis"],
    // The operator's tools: the app's admin console and lockctl on the stack's Redis.
    &["operator"],
];

/// Runs the steps in order, stopping at the first failure, then prints how
/// long each took. Fails with the failing step's exit code.
pub(crate) fn run() -> Result<()> {
    // Before clippy builds `--all-features`: the `etcd` feature needs protoc.
    stack::ensure_installed()?;
    let mut steps = vec![
        step("fmt", ["fmt", "--all", "--check"]),
        step(
            "clippy",
            [
                "clippy",
                "--workspace",
                "--all-targets",
                "--all-features",
                "--",
                "-D",
                "warnings",
            ],
        ),
    ];
    for feature in BACKEND_FEATURES {
        steps.push(step(
            &format!("check lock-core --features {feature}"),
            [
                "check",
                "-p",
                "lock-core",
                "--no-default-features",
                "--features",
                feature,
            ],
        ));
    }
    steps.push(step(
        "check lock-core --no-default-features",
        ["check", "-p", "lock-core", "--no-default-features"],
    ));
    // The four published crates package and build from their packages alone, as crates.io
    // would take them (lock-core and lock-macros depend on each other only through lock-core's
    // optional `macros` feature and lock-macros' path-only dev-dependency).
    steps.push(step(
        "package the published crates",
        [
            "package",
            "--allow-dirty",
            "-p",
            "lock-macros",
            "-p",
            "lock-core",
            "-p",
            "lock-tower",
            "-p",
            "lock-actix",
        ],
    ));
    steps.extend(docs_rs_steps());
    steps.push(Step {
        name: "demo needs no server client".to_owned(),
        action: Action::DemoDeps,
    });
    // Doc tests are not a separate step: `cargo test --workspace` in the
    // test task already runs them.
    steps.push(Step {
        name: "test".to_owned(),
        action: Action::Test,
    });
    // After the tests: a fault scenario failing is worth less than a unit test failing, and
    // it needs the release build. One round on Redis, ZooKeeper and RedLock, a few minutes.
    steps.push(Step {
        name: "chaos --short".to_owned(),
        action: Action::Chaos,
    });
    for demo in DEMOS {
        steps.push(Step {
            name: format!("demo {}", demo.join(" ")),
            action: Action::Demo(demo),
        });
    }

    let total = steps.len();
    let mut timings: Vec<(String, Duration, bool)> = Vec::new();
    let mut failure = None;
    for (index, step) in steps.into_iter().enumerate() {
        eprintln!("\n== ci [{}/{total}] {} ==", index + 1, step.name);
        let start = Instant::now();
        let result = match step.action {
            Action::Command(mut command) => cmd::run(&mut command),
            Action::Test => test::run(&[]),
            Action::DemoDeps => demo_deps::check(),
            Action::Chaos => run::run(HarnessBin::Chaos, &["--short".to_owned()]),
            Action::Demo(args) => {
                let args: Vec<String> = args.iter().map(|&arg| arg.to_owned()).collect();
                run::run(HarnessBin::Demo, &args)
            }
        };
        timings.push((step.name, start.elapsed(), result.is_ok()));
        if let Err(err) = result {
            failure = Some(err);
            break;
        }
    }

    print_summary(&timings, total);
    report_disk();
    failure.map_or(Ok(()), Err)
}

/// Prints the target directory's size and the disk space left, so a failure
/// caused by a full disk (a linker dying of SIGBUS, say) shows as one.
fn report_disk() {
    let mut du = Command::new("du");
    du.args(["-sh", "target"]);
    let mut df = Command::new("df");
    df.args(["-h", "."]);
    for mut command in [du, df] {
        // Diagnostics only: a missing `du` must not fail CI.
        if let Err(err) = cmd::run(&mut command) {
            eprintln!("  (disk report unavailable: {err})");
        }
    }
}

/// A step running `cargo <args>` in the workspace root.
fn step<const N: usize>(name: &str, args: [&str; N]) -> Step {
    let mut command = cmd::cargo();
    command.args(args);
    Step {
        name: name.to_owned(),
        action: Action::Command(command),
    }
}

/// Prints one line per step that ran, plus how many were skipped.
fn print_summary(timings: &[(String, Duration, bool)], total: usize) {
    let width = timings
        .iter()
        .map(|(name, ..)| name.len())
        .max()
        .unwrap_or(0);
    eprintln!("\nci summary:");
    for (name, elapsed, ok) in timings {
        let verdict = if *ok { "ok    " } else { "FAILED" };
        eprintln!(
            "  {verdict}  {name:<width$}  {:>7.1}s",
            elapsed.as_secs_f64()
        );
    }
    let skipped = total - timings.len();
    if skipped > 0 {
        eprintln!("  ({skipped} later step(s) skipped after the failure)");
    }
    let all: Duration = timings.iter().map(|(_, elapsed, _)| *elapsed).sum();
    eprintln!("  total {:.1}s", all.as_secs_f64());
}

#[cfg(test)]
mod tests {
    use super::docs_rs_features;

    #[test]
    fn docs_rs_features_come_from_the_manifest_section() {
        let listed = "[package]\nname = \"x\"\n\n[package.metadata.docs.rs]\nfeatures = [\"redis\", \"json\"]\nrustdoc-args = [\"--cfg\", \"docsrs\"]\n\n[features]\nall-features = true\n";
        assert_eq!(docs_rs_features(listed), ["--features", "redis,json"]);
        let all = "[package.metadata.docs.rs]\nall-features = true\n";
        assert_eq!(docs_rs_features(all), ["--all-features"]);
        assert!(docs_rs_features("[package]\nname = \"x\"\n").is_empty());
    }
}
