//! `bench`'s comparison rows with rslock (Redlock; here on the one Redis the bench uses, so
//! one `SET NX PX` to lock and one Lua release, on its own multiplexed connection), measured in
//! the same run as lock-core's figures, on the same server: what a team would otherwise pick.
//! rslock has no fencing token, no watchdog and no lost signal, so matching its cycles/s is
//! the bar, not a floor.

use std::time::Duration;

use rslock::LockManager;
use tokio::time::Instant;

use crate::bench::floor::Summary;

/// rslock's lock manager on `url` (one Redis).
pub fn manager(url: &str) -> LockManager {
    LockManager::new(vec![url.to_owned()])
}

/// Warms up rslock's connection and script before measuring.
pub async fn warm_up(rslock: &LockManager) {
    for i in 0..200 {
        cycle(rslock, &format!("rslock-warm:{i}"), TTL).await;
    }
}

/// The lease rslock's cycles ask for.
const TTL: Duration = Duration::from_secs(30);

/// `iterations` uncontended lock+unlock cycles of rslock, one task, on the bench's kind of
/// keys (64 of them in turn); warm it up first ([`warm_up`]).
pub async fn cycles(rslock: &LockManager, iterations: usize) -> Summary {
    let ttl = TTL;
    let mut samples = Vec::with_capacity(iterations);
    for i in 0..iterations {
        let key = format!("rslock-solo:{}", i % 64);
        let start = Instant::now();
        cycle(rslock, &key, ttl).await;
        samples.push(start.elapsed());
    }
    Summary::of(&mut samples)
}

/// One lock+unlock of `key`.
async fn cycle(rslock: &LockManager, key: &str, ttl: Duration) {
    let lock = rslock
        .lock(key.as_bytes(), ttl)
        .await
        .unwrap_or_else(|e| panic!("rslock lock {key}: {e:?}"));
    rslock.unlock(&lock).await;
}
