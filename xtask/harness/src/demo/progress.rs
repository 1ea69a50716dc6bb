//! The demos' live progress line on stderr: requests answered, requests per second, and one
//! counter of the demo's (the origin's hits, the handler's runs).
//!
//! ```
//! use std::sync::Arc;
//! use lock_harness::demo::progress::{Live, ProgressLine};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let live = Arc::new(Live::default());
//! let line = ProgressLine::start(false, "cold key", live.clone(), "origin hits", || 1);
//! live.answered();
//! assert_eq!(live.done(), 1);
//! line.finish(); // prints nothing: not enabled
//! # }
//! ```

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Requests answered so far in a run, for the progress line.
#[derive(Debug, Default)]
pub struct Live {
    done: AtomicU64,
}

impl Live {
    /// Requests answered (or failed) so far.
    #[must_use]
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::SeqCst)
    }

    /// Counts one more request answered (or failed).
    pub fn answered(&self) {
        self.done.fetch_add(1, Ordering::SeqCst);
    }
}

/// A progress line on stderr, redrawn every 250 ms on a terminal (a line a second in logs):
/// requests answered, requests per second, and the demo's counter, such as
/// `  cold key:       1000 requests     812 req/s  origin hits 1`.
pub struct ProgressLine {
    task: Option<JoinHandle<()>>,
    line: Arc<dyn Fn() -> String + Send + Sync>,
}

impl ProgressLine {
    /// Starts drawing `label`'s line for `live`, with `counter()` named `counter_label`
    /// (nothing when `enabled` is false).
    pub fn start(
        enabled: bool,
        label: &str,
        live: Arc<Live>,
        counter_label: &'static str,
        counter: impl Fn() -> u64 + Send + Sync + 'static,
    ) -> Self {
        let started = Instant::now();
        let label = format!("{label}:");
        let line: Arc<dyn Fn() -> String + Send + Sync> = Arc::new(move || {
            let done = live.done();
            let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-3);
            format!(
                "  {label:<12} {done:>6} requests  {rate:>7.0} req/s  {counter_label} {}",
                counter()
            )
        });
        let task = enabled.then(|| {
            let line = line.clone();
            tokio::spawn(async move {
                let terminal = std::io::stderr().is_terminal();
                let mut ticks = 0u64;
                loop {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                    ticks += 1;
                    if terminal {
                        eprint!("\r{}", line());
                        std::io::stderr().flush().ok();
                    } else if ticks.is_multiple_of(4) {
                        eprintln!("{}", line());
                    }
                }
            })
        });
        Self { task, line }
    }

    /// Stops redrawing and prints the final line.
    pub fn finish(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let clear = if std::io::stderr().is_terminal() {
                "\r"
            } else {
                ""
            };
            eprintln!("{clear}{}", (self.line)());
        }
    }
}
