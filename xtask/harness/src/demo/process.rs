//! Starting an example app's binary as a process (the inventory instances, the payments
//! apps): with `--port 0`, found by the `listening on http://...` line it prints first.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

/// An app process that announced where it listens.
pub(crate) struct Listening {
    /// The process, killed when dropped.
    pub(crate) child: Child,
    /// `http://127.0.0.1:port`.
    pub(crate) base: String,
    /// Its stdout after the `listening on` line: the caller keeps reading it, so the app
    /// never blocks on a full pipe.
    pub(crate) lines: Lines<BufReader<ChildStdout>>,
}

/// Starts `binary` with `args` plus `--port 0` and waits (up to 60 s) for its
/// `listening on http://...` line.
pub(crate) async fn launch(binary: &Path, args: &[String]) -> Result<Listening, String> {
    let mut child = Command::new(binary)
        .args(args)
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .map_err(|_| format!("{} did not start within 60 s", binary.display()))?
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{} exited before listening", binary.display()))?;
    let base = first
        .strip_prefix("listening on ")
        .ok_or_else(|| format!("unexpected first line {first:?}"))?
        .to_owned();
    Ok(Listening { child, base, lines })
}
