//! `cargo xtask bench --against REV [--rounds N] [--iterations N] [--backend redis|memory]`:
//! the lock's uncontended acquire+release of this build against the build at `REV`, in
//! interleaved rounds, the order alternating, so drift on a shared machine hits both alike.
//!
//! `REV` is checked out in a worktree under `target/bench-against/` and its bench built there
//! (release, its own target directory); each round runs both benches' `--only uncontended`
//! and reads their p50 and mean. The figure is the median of the rounds' ratios (this build
//! over `REV`'s): a change that must not cost the hot path anything shows about 1.00×.

use std::path::Path;
use std::process::Command;

use crate::{cmd, stack, Error, Result};

/// The flag that selects this run.
pub(crate) const AGAINST: &str = "--against";

/// Builds both benches and runs the rounds.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let rev = value(args, AGAINST)
        .ok_or_else(|| Error::usage("--against needs a revision (a commit, tag or branch)"))?;
    let rounds = number(args, "--rounds", 7)?;
    let iterations = number(args, "--iterations", 3000)?;
    let backend = value(args, "--backend").unwrap_or("redis");
    let root = cmd::project_root();
    let dir = root.join("target").join("bench-against");
    let tree = dir.join("tree");
    if tree.exists() {
        cmd::run(git(&tree).args(["checkout", "--quiet", "--detach", rev]))?;
    } else {
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::failed(format!("{}: {e}", dir.display())))?;
        cmd::run(
            git(&root)
                .args(["worktree", "add", "--detach"])
                .arg(&tree)
                .arg(rev),
        )?;
    }
    let before_target = dir.join("target");
    build(&tree, Some(&before_target))?;
    build(&root, None)?;
    let before = before_target.join("release").join("bench");
    let after = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), std::path::PathBuf::from)
        .join("release")
        .join("bench");
    let env = stack::env_vars()?;
    println!("\nthe lock's uncontended acquire+release on {backend}: this build against {rev}, {rounds} rounds of {iterations} cycles each, order alternating\n");
    println!(
        "{:>5}  {:>14}  {:>14}  {:>7}",
        "round", "before p50 µs", "after p50 µs", "ratio"
    );
    let mut ratios = Vec::new();
    for round in 0..rounds {
        let figure = |bin: &Path| -> Result<f64> {
            let mut command = Command::new(bin);
            command.args([
                "--backend",
                backend,
                "--only",
                "uncontended",
                "--iterations",
            ]);
            command.arg(iterations.to_string());
            for (key, value) in &env {
                command.env(key, value);
            }
            let output = command
                .output()
                .map_err(|e| Error::failed(format!("{}: {e}", bin.display())))?;
            let text = String::from_utf8_lossy(&output.stdout);
            p50_of(&text).ok_or_else(|| {
                Error::failed(format!(
                    "{} printed no uncontended figure:\n{text}{}",
                    bin.display(),
                    String::from_utf8_lossy(&output.stderr)
                ))
            })
        };
        let (b, a) = if round % 2 == 0 {
            let b = figure(&before)?;
            (b, figure(&after)?)
        } else {
            let a = figure(&after)?;
            (figure(&before)?, a)
        };
        ratios.push(a / b);
        println!("{:>5}  {b:>14.1}  {a:>14.1}  {:>6.3}×", round + 1, a / b);
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    println!("\nafter / before (median of the rounds' ratios): {median:.3}×");
    Ok(())
}

/// `cargo build --release` of the bench in `tree`, into `target` (else the default).
fn build(tree: &Path, target: Option<&Path>) -> Result<()> {
    stack::ensure_build_tools()?;
    let mut cargo = cmd::cargo();
    cargo.current_dir(tree).args([
        "build",
        "--release",
        "-p",
        "lock-harness",
        "--bin",
        "bench",
        "--features",
        "servers,compare",
    ]);
    if let Some(target) = target {
        cargo.env("CARGO_TARGET_DIR", target);
    }
    cmd::run(&mut cargo)
}

fn git(dir: &Path) -> Command {
    let mut git = Command::new("git");
    git.arg("-C").arg(dir);
    git
}

/// The p50 of the bench's `uncontended acquire+release` line, in µs.
fn p50_of(text: &str) -> Option<f64> {
    let line = text
        .lines()
        .find(|l| l.starts_with("uncontended acquire+release"))?;
    let after = line.split("p50").nth(1)?.trim_start();
    after.split_whitespace().next()?.parse().ok()
}

fn value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == name {
            return iter.next().map(String::as_str);
        }
        if let Some(v) = arg.strip_prefix(name).and_then(|v| v.strip_prefix('=')) {
            return Some(v);
        }
    }
    None
}

fn number(args: &[String], name: &str, default: usize) -> Result<usize> {
    value(args, name).map_or(Ok(default), |v| {
        v.parse()
            .map_err(|_| Error::usage(format!("{name} {v:?} is not a number")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_p50_of_the_uncontended_line() {
        let text = "bench: redis\nuncontended acquire+release      mean     120.4 µs  p50      118.2 µs  p99  200.0 µs\n";
        assert_eq!(p50_of(text), Some(118.2));
        assert_eq!(p50_of("nothing"), None);
    }
}
