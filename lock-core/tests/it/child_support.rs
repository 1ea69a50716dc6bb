//! This test binary started again as a second process: one `#[test]` of it, picked with
//! `--exact`, told its part by an environment variable, its stdout read by lines. The kill,
//! pause and two-process tests of the cache, the election and the SQL stock share it.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

/// A child process running one test of this binary.
pub(crate) struct ChildTest {
    /// The process (stdin piped, killed when dropped).
    pub(crate) process: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl ChildTest {
    /// Starts the test `test` (its full name, as `--exact` wants it) with `variable` set to
    /// `value`.
    pub(crate) fn start(test: &str, variable: &str, value: &str) -> Self {
        let mut process = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env(variable, value)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let lines = BufReader::new(process.stdout.take().unwrap()).lines();
        Self { process, lines }
    }

    /// The child's next line; `None` once its stdout closed.
    pub(crate) async fn next_line(&mut self) -> Option<String> {
        self.lines.next_line().await.unwrap()
    }

    /// Reads the child's stdout until a line holding `word` (libtest may print before it on
    /// the same line); returns the line from `word` on.
    pub(crate) async fn line_with(&mut self, word: &str) -> String {
        loop {
            let line = self.next_line().await.expect("child ended early");
            if let Some(at) = line.find(word) {
                return line[at..].to_owned();
            }
        }
    }

    /// Sends `signal` (`-KILL`, `-STOP`, `-CONT`...) to the child.
    pub(crate) fn signal(&self, signal: &str) {
        let pid = self.process.id().unwrap().to_string();
        let sent = std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap();
        assert!(sent.success(), "kill {signal} {pid}");
    }
}
