//! The stress drivers' worker processes: each started with its stdout piped, each printing one
//! JSON report line when it is done.

use std::process::Stdio;

use example_support::flags::usage_error;
use tokio::process::Command;

/// Starts every command (its stdout piped, the process killed if the driver drops it), waits
/// for all of them, and returns each worker's JSON report, in the commands' order. Exits with
/// a usage error when a worker cannot start or does not print a report.
///
/// ```no_run
/// use tokio::process::Command;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let mut worker = Command::new("echo");
/// worker.arg(r#"{"sections": 3}"#);
/// let reports = lock_harness::stress::worker_reports::worker_reports(vec![worker]).await;
/// assert_eq!(reports[0]["sections"], 3);
/// # }
/// ```
pub async fn worker_reports(commands: Vec<Command>) -> Vec<serde_json::Value> {
    let mut children = Vec::new();
    for mut command in commands {
        command.stdout(Stdio::piped()).kill_on_drop(true);
        children.push(
            command
                .spawn()
                .unwrap_or_else(|e| usage_error(&format!("cannot start worker: {e}"))),
        );
    }
    let mut reports = Vec::new();
    for child in children {
        let output = child.wait_with_output().await.expect("worker output");
        let line = String::from_utf8_lossy(&output.stdout);
        reports.push(serde_json::from_str(line.trim()).unwrap_or_else(|_| {
            usage_error(&format!("worker failed ({}): {line}", output.status))
        }));
    }
    reports
}
