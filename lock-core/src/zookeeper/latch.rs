//! The count-down latch ([`LatchBackend`]): one persistent node holding the count and when the latch expires.
//!
//! The latch `k` is the node `<root>/k%latch`, whose data is `<count> <expiry> <write id>`:
//! the count left, the absolute expiry in milliseconds since the Unix epoch (so every client
//! agrees on it without a server-side TTL, which ZooKeeper offers only with extended types
//! switched on; clients' clocks are trusted to agree within the latch's lifetime), and a random
//! id of the write that set it. Every change is a versioned write (compare-and-set): a create
//! (`NodeExists`: an expired latch is replaced in place, a running one is left alone), a
//! `setData` per count-down, and a delete at zero, which is what opens the latch. A write whose
//! reply was lost is recognised by its id when the node is read again, so it is not applied
//! twice (unless another write landed in between).
//!
//! Waiting is a data watch on the node (fired by every count-down and by the delete at zero),
//! plus a timer until the latch's expiry, the caller's deadline or the capped re-check, so a
//! lost watch event costs little. A watch leaves nothing to clean up when the wait is dropped.
//! An expired latch counts as zero and is deleted by the next call that reads it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::{sleep_until, Instant};
use zookeeper_client as zk;

use super::queue::{backoff, is_transient};
use super::session::Session;
use super::{to_lock_error, ZooKeeperBackend, BACKEND};
use crate::backend::{KeyInspection, LatchBackend, LatchCount, Waiters};
use crate::{LockError, LockKey, OwnerToken, Result};

/// What follows the lock's path to make a latch's node.
pub(super) const LATCH_SUFFIX: &str = "%latch";

/// A latch as its node's data has it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Latch {
    count: u64,
    /// Milliseconds since the Unix epoch.
    expires_at: u64,
    /// The id of the write that set this.
    write: String,
}

impl Latch {
    fn encode(&self) -> Vec<u8> {
        format!("{} {} {}", self.count, self.expires_at, self.write).into_bytes()
    }

    fn decode(data: &[u8]) -> Result<Self> {
        let text = std::str::from_utf8(data).ok();
        let mut parts = text.unwrap_or_default().split_whitespace();
        let count = parts.next().and_then(|p| p.parse().ok());
        let expires_at = parts.next().and_then(|p| p.parse().ok());
        let write = parts.next().unwrap_or_default().to_owned();
        match (count, expires_at) {
            (Some(count), Some(expires_at)) => Ok(Self {
                count,
                expires_at,
                write,
            }),
            _ => Err(LockError::Protocol {
                backend: BACKEND,
                detail: format!(
                    "a latch node holds {:?}, not `<count> <expiry ms>`",
                    String::from_utf8_lossy(data)
                ),
            }),
        }
    }

    /// True when the latch counts for nothing any more (at zero or expired).
    fn is_open(&self, now_ms: u64) -> bool {
        self.count == 0 || self.expires_at <= now_ms
    }
}

/// Milliseconds since the Unix epoch (0 for a clock set before it).
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A fresh id for one write.
fn write_id() -> Result<String> {
    Ok(OwnerToken::random()?.to_hex())
}

impl ZooKeeperBackend {
    /// The node of the latch `full_key`.
    fn latch_node(&self, full_key: &str) -> String {
        super::path::primitive_path(&self.shared.root, full_key, LATCH_SUFFIX)
    }

    /// Sends a write again after a transient failure, up to the configured attempts; false when
    /// the caller should give up with `error`.
    async fn again(&self, error: &zk::Error, failures: &mut u32) -> bool {
        *failures += 1;
        if !is_transient(error) || *failures >= self.shared.config.attempts {
            return false;
        }
        tokio::time::sleep(backoff(*failures)).await;
        true
    }

    /// The latch's data and version; `None` when there is no node.
    async fn read_latch(&self, session: &Session, path: &str) -> Result<Option<(Latch, i32)>> {
        match self.retry(|| session.client.get_data(path)).await {
            Ok((data, stat)) => Ok(Some((Latch::decode(&data)?, stat.version))),
            Err(zk::Error::NoNode) => Ok(None),
            Err(error) => Err(to_lock_error(error)),
        }
    }

    /// The operator's view of the latch `full`: its count and time left while it counts (its
    /// waiters are watches ZooKeeper does not list).
    pub(super) async fn inspect_latch(
        &self,
        session: &Session,
        full: &str,
    ) -> Result<KeyInspection> {
        let now = now_ms();
        let count = self
            .read_latch(session, &self.latch_node(full))
            .await?
            .filter(|(latch, _)| !latch.is_open(now))
            .map(|(latch, _)| {
                let left = Duration::from_millis(latch.expires_at.saturating_sub(now));
                LatchCount::new(latch.count, Some(left))
            });
        Ok(KeyInspection::latch(full, count, Waiters::NotKept))
    }

    /// Deletes an expired latch at `version`, quietly: whoever touches it next does the same.
    async fn delete_expired(&self, session: &Session, path: &str, version: i32) {
        if let Err(error) = session.client.delete(path, Some(version)).await {
            tracing::debug!(path, %error, "deleting an expired zookeeper latch failed");
        }
    }

    /// See [`LatchBackend::latch_create`].
    async fn create_latch(&self, key: &LockKey, count: u64, expire: Duration) -> Result<bool> {
        if count == 0 {
            return Err(LockError::InvalidInput {
                what: "latch count",
                reason: "0: a latch starts at 1 or more".into(),
            });
        }
        let path = self.latch_node(key.full());
        let session = self.session().await?;
        let expire_ms = u64::try_from(expire.as_millis()).unwrap_or(u64::MAX);
        let latch = Latch {
            count,
            expires_at: now_ms().saturating_add(expire_ms),
            write: write_id()?,
        };
        let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        let mut failures = 0;
        loop {
            let error = match session
                .client
                .create(&path, &latch.encode(), &persistent)
                .await
            {
                Ok(_) => return Ok(true),
                Err(zk::Error::NoNode) if failures < self.shared.config.attempts.max(3) => {
                    // The root does not exist yet (or its empty container was just reaped).
                    failures += 1;
                    let containers = zk::CreateMode::Container.with_acls(zk::Acls::anyone_all());
                    match session.client.mkdir(&self.shared.root, &containers).await {
                        Ok(()) | Err(zk::Error::NodeExists) => continue,
                        Err(error) => error,
                    }
                }
                Err(zk::Error::NodeExists) => {
                    let Some((found, version)) = self.read_latch(&session, &path).await? else {
                        continue;
                    };
                    if found.write == latch.write {
                        return Ok(true); // our own create or replace, whose reply was lost
                    }
                    if !found.is_open(now_ms()) {
                        return Ok(false);
                    }
                    match session
                        .client
                        .set_data(&path, &latch.encode(), Some(version))
                        .await
                    {
                        Ok(_) => return Ok(true),
                        Err(zk::Error::BadVersion | zk::Error::NoNode) => continue,
                        Err(error) => error,
                    }
                }
                Err(error) => error,
            };
            if !self.again(&error, &mut failures).await {
                return Err(to_lock_error(error));
            }
        }
    }

    /// See [`LatchBackend::latch_count_down`].
    async fn count_down_latch(&self, key: &LockKey) -> Result<u64> {
        let path = self.latch_node(key.full());
        let session = self.session().await?;
        let write = write_id()?;
        let mut failures = 0;
        loop {
            let Some((latch, version)) = self.read_latch(&session, &path).await? else {
                return Ok(0);
            };
            if latch.write == write {
                return Ok(latch.count); // our count-down, whose reply was lost
            }
            if latch.is_open(now_ms()) {
                self.delete_expired(&session, &path, version).await;
                return Ok(0);
            }
            let left = latch.count - 1;
            let outcome = if left == 0 {
                session.client.delete(&path, Some(version)).await
            } else {
                let next = Latch {
                    count: left,
                    write: write.clone(),
                    ..latch
                };
                session
                    .client
                    .set_data(&path, &next.encode(), Some(version))
                    .await
                    .map(drop)
            };
            let error = match outcome {
                Ok(()) => return Ok(left),
                // Someone else counted down (or it expired and went) in between: read again.
                Err(zk::Error::BadVersion | zk::Error::NoNode) => continue,
                Err(error) => error,
            };
            if !self.again(&error, &mut failures).await {
                return Err(to_lock_error(error));
            }
        }
    }

    /// See [`LatchBackend::latch_count`].
    async fn latch_count_of(&self, key: &LockKey) -> Result<u64> {
        let path = self.latch_node(key.full());
        let session = self.session().await?;
        match self.read_latch(&session, &path).await? {
            None => Ok(0),
            Some((latch, version)) if latch.is_open(now_ms()) => {
                self.delete_expired(&session, &path, version).await;
                Ok(0)
            }
            Some((latch, _)) => Ok(latch.count),
        }
    }

    /// See [`LatchBackend::latch_wait`].
    async fn wait_latch(&self, key: &LockKey, deadline: Option<Instant>) -> Result<bool> {
        let path = self.latch_node(key.full());
        loop {
            let session = self.session().await?;
            let (latch, watcher) = match self
                .retry(|| session.client.get_and_watch_data(&path))
                .await
            {
                Ok((data, _, watcher)) => (Latch::decode(&data)?, watcher),
                Err(zk::Error::NoNode) => return Ok(true),
                Err(error) => return Err(to_lock_error(error)),
            };
            let now = now_ms();
            if latch.is_open(now) {
                return Ok(true);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(false);
            }
            let expires_in = Duration::from_millis(latch.expires_at.saturating_sub(now));
            let mut recheck_at =
                Instant::now() + crate::jitter::jitter(self.shared.config.poll_cap).min(expires_in);
            if let Some(deadline) = deadline {
                recheck_at = recheck_at.min(deadline);
            }
            tokio::select! {
                _ = watcher.changed() => {}
                () = sleep_until(recheck_at) => {}
            }
        }
    }
}

/// Each call goes through the breaker as a whole.
impl LatchBackend for ZooKeeperBackend {
    async fn latch_create(&self, key: &LockKey, count: u64, expire: Duration) -> Result<bool> {
        self.guarded(self.create_latch(key, count, expire)).await
    }

    async fn latch_count_down(&self, key: &LockKey) -> Result<u64> {
        self.guarded(self.count_down_latch(key)).await
    }

    async fn latch_count(&self, key: &LockKey) -> Result<u64> {
        self.guarded(self.latch_count_of(key)).await
    }

    async fn latch_wait(&self, key: &LockKey, deadline: Option<Instant>) -> Result<bool> {
        self.guarded(self.wait_latch(key, deadline)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latch_data_round_trips_and_bad_data_is_an_error() {
        let latch = Latch {
            count: 3,
            expires_at: 1_700_000_000_000,
            write: "ab".into(),
        };
        assert_eq!(Latch::decode(&latch.encode()).unwrap(), latch);
        assert!(
            Latch::decode(b"2 5").is_ok(),
            "no write id: written by hand"
        );
        for bad in [&b""[..], b"x 1", b"1", b"-1 5", b"\xff\xfe"] {
            assert!(Latch::decode(bad).is_err(), "{bad:?}");
        }
        assert!(latch.is_open(1_700_000_000_000));
        assert!(!latch.is_open(1_699_999_999_999));
        assert!(Latch { count: 0, ..latch }.is_open(0));
    }
}
