//! Scenario 11's fault, inside a worker: every thread of the tokio runtime blocked at once (as
//! a blocking call in async code, or a runtime with too few threads for its work, would do),
//! so the watchdog cannot run; and `chaos hog`, a process that keeps one core busy.

use std::time::{Duration, Instant};

/// Blocks every worker thread of the current runtime, and the calling thread, until `length`
/// has passed (absolute: a blocker that starts late ends with the others).
pub async fn block_runtime(length: Duration) {
    let until = Instant::now() + length;
    let workers = tokio::runtime::Handle::current().metrics().num_workers();
    let blockers: Vec<_> = (0..workers)
        .map(|_| tokio::spawn(async move { block_until(until) }))
        .collect();
    block_until(until);
    for blocker in blockers {
        blocker.await.ok();
    }
}

fn block_until(until: Instant) {
    let left = until.saturating_duration_since(Instant::now());
    std::thread::sleep(left);
}

/// `chaos hog <ms>`: spins one core for `ms` milliseconds.
pub fn hog(ms: u64) {
    let until = Instant::now() + Duration::from_millis(ms);
    let mut spins: u64 = 0;
    while Instant::now() < until {
        spins = std::hint::black_box(spins.wrapping_add(1));
    }
}
