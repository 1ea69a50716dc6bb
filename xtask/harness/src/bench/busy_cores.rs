//! `bench --load`: a busy process on every core beside the bench, so its ratios show what a
//! service pays on a machine that has other work to do (task hops, wake-ups and extra
//! allocations cost more when every core is taken).

use std::process::{Child, Command, Stdio};

/// The busy processes; dropping this stops them. Each also stops by itself once the bench
/// process is gone (it checks its parent on every turn of its loop), so an exit that skips
/// `Drop` leaves nothing spinning.
pub struct BusyCores {
    children: Vec<Child>,
}

impl BusyCores {
    /// Starts one spinning `sh` per core this process may run on.
    ///
    /// # Panics
    /// When `sh` cannot be started.
    #[must_use]
    pub fn start() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let children = (0..cores)
            .map(|_| {
                Command::new("sh")
                    .args([
                        "-c",
                        "parent=$PPID; while kill -0 \"$parent\" 2>/dev/null; do :; done",
                    ])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("start a busy process (sh)")
            })
            .collect();
        Self { children }
    }

    /// How many busy processes run.
    #[must_use]
    pub fn count(&self) -> usize {
        self.children.len()
    }
}

impl Drop for BusyCores {
    fn drop(&mut self) {
        for child in &mut self.children {
            // Already gone is fine: either way nothing spins after this.
            if child.kill().is_ok() {
                child.wait().ok();
            }
        }
    }
}
