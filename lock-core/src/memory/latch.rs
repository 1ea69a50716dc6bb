//! Count-down latches in memory ([`LatchBackend`]): a count, an expiry, and the waiters to wake
//! at zero.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::{sleep_until, Instant};

use super::MemoryBackend;
use crate::backend::{LatchBackend, LatchCount};
use crate::sync::lock;
use crate::{LockKey, Result};

struct Latch {
    count: u64,
    expires_at: Instant,
    opened: Arc<Notify>,
}

/// The latches of one memory backend, by full key. A latch at zero or past its expiry is
/// gone: it counts as zero.
#[derive(Default)]
pub(super) struct Latches {
    latches: Mutex<HashMap<String, Latch>>,
}

impl Latches {
    pub(super) fn len(&self) -> usize {
        let mut latches = lock(&self.latches);
        let now = Instant::now();
        latches.retain(|_, latch| latch.expires_at > now);
        latches.len()
    }

    /// Sets `key` to `count` unless it is running; true when set.
    pub(super) fn create(&self, key: &str, count: u64, expire: Duration) -> bool {
        let mut latches = lock(&self.latches);
        let now = Instant::now();
        if latches.get(key).is_some_and(|latch| latch.expires_at > now) {
            return false;
        }
        latches.insert(
            key.to_owned(),
            Latch {
                count,
                expires_at: now + expire,
                opened: Arc::new(Notify::new()),
            },
        );
        true
    }

    /// Takes one off; at zero the latch goes and its waiters wake. Returns what is left.
    pub(super) fn count_down(&self, key: &str) -> u64 {
        let mut latches = lock(&self.latches);
        let now = Instant::now();
        let Some(latch) = latches.get_mut(key).filter(|l| l.expires_at > now) else {
            latches.remove(key);
            return 0;
        };
        latch.count -= 1;
        let left = latch.count;
        if left == 0 {
            if let Some(latch) = latches.remove(key) {
                latch.opened.notify_waiters();
            }
        }
        left
    }

    /// The operator's view of `key`: its count, time left and how many wait (each waiter holds
    /// a clone of the latch's `opened` while it waits); `None` when it counts as zero.
    pub(super) fn inspect(&self, key: &str) -> Option<(LatchCount, usize)> {
        let latches = lock(&self.latches);
        let now = Instant::now();
        let latch = latches.get(key).filter(|latch| latch.expires_at > now)?;
        let count = LatchCount::new(latch.count, Some(latch.expires_at - now));
        Some((count, Arc::strong_count(&latch.opened) - 1))
    }

    /// The full keys of the running latches starting with `prefix`.
    pub(super) fn names(&self, prefix: &str) -> Vec<String> {
        let latches = lock(&self.latches);
        let now = Instant::now();
        latches
            .iter()
            .filter(|(key, latch)| latch.expires_at > now && key.starts_with(prefix))
            .map(|(key, _)| key.clone())
            .collect()
    }

    pub(super) fn count(&self, key: &str) -> u64 {
        let latches = lock(&self.latches);
        latches
            .get(key)
            .filter(|latch| latch.expires_at > Instant::now())
            .map_or(0, |latch| latch.count)
    }

    /// Waits until `key` is at zero or gone; false when `deadline` passed first.
    pub(super) async fn wait(&self, key: &str, deadline: Option<Instant>) -> bool {
        loop {
            let (opened, expires_at) = {
                let latches = lock(&self.latches);
                match latches.get(key) {
                    Some(latch) if latch.expires_at > Instant::now() => {
                        (latch.opened.clone(), latch.expires_at)
                    }
                    _ => return true,
                }
            };
            let notified = opened.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // Counted down between the look and `enable`: look again.
            if self.count(key) == 0 {
                return true;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            let until = deadline.map_or(expires_at, |d| d.min(expires_at));
            tokio::select! {
                () = notified => {}
                () = sleep_until(until) => {}
            }
        }
    }
}

impl LatchBackend for MemoryBackend {
    async fn latch_create(&self, key: &LockKey, count: u64, expire: Duration) -> Result<bool> {
        Ok(self.shared.latches.create(key.full(), count, expire))
    }

    async fn latch_count_down(&self, key: &LockKey) -> Result<u64> {
        Ok(self.shared.latches.count_down(key.full()))
    }

    async fn latch_count(&self, key: &LockKey) -> Result<u64> {
        Ok(self.shared.latches.count(key.full()))
    }

    async fn latch_wait(&self, key: &LockKey, deadline: Option<Instant>) -> Result<bool> {
        Ok(self.shared.latches.wait(key.full(), deadline).await)
    }
}
