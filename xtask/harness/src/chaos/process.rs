//! The coordinator's handle on a worker process: its events, read from its stdout, and the
//! signals that pause, resume and kill it.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// One `EV <name> <µs> [fields]` line of a worker.
#[derive(Clone, Debug)]
pub struct Event {
    /// What happened (`acquired`, `lost`, ...).
    pub name: String,
    /// When, in wall-clock µs since the epoch.
    pub at: u64,
    /// The rest of the line.
    pub fields: String,
}

/// A running worker; killed when dropped.
pub struct Worker {
    label: String,
    child: Child,
    pid: u32,
    events: mpsc::UnboundedReceiver<Event>,
    seen: Vec<Event>,
}

impl Worker {
    /// Starts `exe worker <args>`, labelled `label` in messages.
    pub fn spawn(exe: &Path, label: &str, args: &[String]) -> Result<Self, String> {
        Self::start(exe, "worker", label, args)
    }

    /// Starts `exe <subcommand> <args>` (`hog`, say), labelled with the subcommand.
    pub fn spawn_command(exe: &Path, subcommand: &str, args: &[String]) -> Result<Self, String> {
        Self::start(exe, subcommand, subcommand, args)
    }

    fn start(exe: &Path, subcommand: &str, label: &str, args: &[String]) -> Result<Self, String> {
        let mut child = Command::new(exe)
            .arg(subcommand)
            .args(args)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let pid = child.id().ok_or("the worker exited at once")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (send, events) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut parts = line.splitn(4, ' ');
                if parts.next() != Some("EV") {
                    continue;
                }
                let name = parts.next().unwrap_or_default().to_owned();
                let at = parts.next().and_then(|t| t.parse().ok()).unwrap_or(0);
                let fields = parts.next().unwrap_or_default().trim().to_owned();
                if send.send(Event { name, at, fields }).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            label: label.to_owned(),
            child,
            pid,
            events,
            seen: Vec::new(),
        })
    }

    /// The first event called `name`, waiting up to `within` for it.
    pub async fn wait_for(&mut self, name: &str, within: Duration) -> Result<Event, String> {
        if let Some(found) = self.seen(name) {
            return Ok(found);
        }
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(event)) => {
                    let hit = event.name == name;
                    self.seen.push(event.clone());
                    if hit {
                        return Ok(event);
                    }
                }
                Ok(None) => {
                    return Err(format!(
                        "{} exited without `{name}`{}",
                        self.label,
                        self.errors()
                    ))
                }
                Err(_) => {
                    return Err(format!(
                        "{} gave no `{name}` within {within:?}{}",
                        self.label,
                        self.errors()
                    ))
                }
            }
        }
    }

    /// The event `name` if it has arrived (without waiting).
    pub fn seen(&mut self, name: &str) -> Option<Event> {
        while let Ok(event) = self.events.try_recv() {
            self.seen.push(event);
        }
        self.seen.iter().find(|e| e.name == name).cloned()
    }

    /// Every event called `name` that has arrived so far.
    pub fn all(&mut self, name: &str) -> Vec<Event> {
        self.seen(name);
        self.seen
            .iter()
            .filter(|e| e.name == name)
            .cloned()
            .collect()
    }

    fn errors(&self) -> String {
        let errors: Vec<&str> = self
            .seen
            .iter()
            .filter(|e| e.name == "error")
            .map(|e| e.fields.as_str())
            .collect();
        if errors.is_empty() {
            String::new()
        } else {
            format!(" (its errors: {})", errors.join("; "))
        }
    }

    /// Sends `signal` (`STOP`, `CONT`, `KILL`) with `kill(1)`.
    pub fn signal(&self, signal: &str) -> Result<(), String> {
        let status = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid.to_string())
            .status()
            .map_err(|e| format!("kill -{signal}: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("kill -{signal} {} failed", self.pid))
        }
    }

    /// Waits up to `within` for the worker to exit; kills it if it does not.
    pub async fn finish(mut self, within: Duration) -> Result<(), String> {
        match tokio::time::timeout(within, self.child.wait()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => {
                self.child.kill().await.ok();
                Err(format!("{} did not exit within {within:?}", self.label))
            }
        }
    }
}
