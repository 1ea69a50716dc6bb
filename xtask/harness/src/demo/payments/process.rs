//! An app process for the cross-process tests: started with `--port 0`, found by its
//! `listening on` line, its later stdout lines readable (the handler's `--announce` lines),
//! killed with SIGKILL on demand or when dropped.

use std::path::Path;
use std::time::Duration;

use tokio::process::Child;
use tokio::sync::mpsc;

use crate::demo::process::{launch, Listening};

/// A running app process.
#[derive(Debug)]
pub struct AppProcess {
    child: Child,
    /// `http://127.0.0.1:port`.
    pub base: String,
    lines: mpsc::UnboundedReceiver<String>,
}

impl AppProcess {
    /// Starts `binary` with `args` plus `--port 0` and waits (up to 60 s) for its `listening
    /// on http://...` line.
    pub async fn launch(binary: &Path, args: &[String]) -> Result<Self, String> {
        let Listening {
            child,
            base,
            mut lines,
        } = launch(binary, args).await?;
        // Keep reading so the app never blocks on a full pipe; the lines go to `next_line`.
        let (send, receive) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            child,
            base,
            lines: receive,
        })
    }

    /// The next line the process prints after `listening on`, within `limit`.
    pub async fn next_line(&mut self, limit: Duration) -> Result<String, String> {
        tokio::time::timeout(limit, self.lines.recv())
            .await
            .map_err(|_| format!("no line from the app within {limit:?}"))?
            .ok_or_else(|| "the app closed its stdout".to_owned())
    }

    /// Kills the process (SIGKILL: no shutdown code runs) and waits for it to be gone.
    pub async fn kill(&mut self) -> Result<(), String> {
        self.child.kill().await.map_err(|e| e.to_string())
    }
}
