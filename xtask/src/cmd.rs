//! Small helpers for running commands and locating things.
//!
//! Every command that does real work is echoed as `$ cmd args` (on stderr,
//! so a task's own stdout stays clean) before it runs: when CI fails, the
//! log shows exactly what to paste into a terminal to reproduce it.

use std::env;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use crate::{Error, Result};

/// The workspace root (the directory holding the root `Cargo.toml`).
///
/// Derived from xtask's own manifest dir at compile time, so it does not
/// matter which directory `cargo xtask` is invoked from.
pub(crate) fn project_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    // xtask/ is a direct child of the root; fall back to the manifest dir
    // itself rather than panicking if the layout ever changes.
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// A `cargo` command that runs in the workspace root.
///
/// Uses `cargo` from PATH (rustup's proxy), so `rust-toolchain` files and
/// `RUSTUP_TOOLCHAIN` (which `cargo run` sets for us) pick the toolchain.
pub(crate) fn cargo() -> Command {
    let mut cmd = Command::new("cargo");
    cmd.current_dir(project_root());
    cmd
}

/// Renders `cmd` the way a user would type it in a POSIX shell, including
/// the environment variables it sets, e.g. `FOO=1 cargo test -j 2`.
pub(crate) fn display(cmd: &Command) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (key, value) in cmd.get_envs() {
        // `None` means "removed from the environment"; nothing to show.
        if let Some(value) = value {
            parts.push(format!(
                "{}={}",
                key.to_string_lossy(),
                quote(&value.to_string_lossy())
            ));
        }
    }
    parts.push(quote(&cmd.get_program().to_string_lossy()));
    parts.extend(cmd.get_args().map(|arg| quote(&arg.to_string_lossy())));
    parts.join(" ")
}

/// Quotes `word` for a POSIX shell only when needed, so that plain commands
/// stay readable and `--save ""` still shows up as an empty argument.
fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Prints `$ <command>` to stderr.
pub(crate) fn echo(cmd: &Command) {
    eprintln!("$ {}", display(cmd));
}

/// Echoes and runs `cmd` with inherited stdio; returns its exit status
/// whatever it is (the caller decides whether non-zero is fatal).
pub(crate) fn status(cmd: &mut Command) -> Result<ExitStatus> {
    echo(cmd);
    cmd.status().map_err(|err| {
        Error::failed(format!(
            "could not run `{}`: {err}",
            cmd.get_program().to_string_lossy()
        ))
    })
}

/// Echoes and runs `cmd`; a non-zero exit becomes an error that carries the
/// child's exit code.
pub(crate) fn run(cmd: &mut Command) -> Result<()> {
    let status = status(cmd)?;
    check(cmd, status)
}

/// Turns a child's exit status into `Ok` or an error carrying its code.
pub(crate) fn check(cmd: &Command, status: ExitStatus) -> Result<()> {
    if status.success() {
        Ok(())
    } else {
        Err(Error::exit(
            exit_code(status),
            format!("`{}` failed ({})", display(cmd), describe(status)),
        ))
    }
}

/// The exit code to pass through for `status`, shell style: the child's own
/// code, or 128 + signal number when a signal killed it.
pub(crate) fn exit_code(status: ExitStatus) -> u8 {
    if let Some(code) = status.code() {
        // Exit codes are 0..=255 on Unix; anything else (Windows) maps to 1.
        return u8::try_from(code).unwrap_or(1);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return u8::try_from(128 + signal).unwrap_or(1);
        }
    }
    1
}

/// "exit code 101" or "killed by signal 9", for error messages.
fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit code {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    status.to_string()
}

/// Runs `cmd` without echoing and returns its trimmed stdout if it
/// succeeded. For read-only probes (`id -u`) whose echo would only be noise.
pub(crate) fn probe(cmd: &mut Command) -> Option<String> {
    let output = cmd.output().ok()?;
    if !output.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Looks `program` up on PATH like a shell would.
pub(crate) fn which(program: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is a file we may execute.
pub(crate) fn is_executable(path: &Path) -> bool {
    let Ok(meta) = path.metadata() else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// Whether xtask runs as root (`id -u` prints 0). Decides whether we may
/// install missing packages ourselves or must ask the user to.
pub(crate) fn is_root() -> bool {
    probe(Command::new("id").arg("-u")).is_some_and(|uid| uid == "0")
}

/// A `Command` for `program` with `args`; saves a line at call sites.
pub(crate) fn command<I, S>(program: impl AsRef<OsStr>, args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(program);
    cmd.args(args);
    cmd
}
