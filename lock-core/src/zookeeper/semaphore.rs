//! The semaphore: its size node, one snapshot of queue and size, and waiting for permits.
//!
//! The semaphore `k` is the container node `<root>/k%semaphore`. Its size is the persistent
//! child `size` (the number in decimal), created with the first acquirer's `limit` when absent
//! and overwritten by `set_permits`; being persistent, it keeps the size (and the container)
//! after the last lease is gone, as a size set in any other store would stay. Each acquisition
//! is the ephemeral sequential child `_c_<uuid>-permits-<count>-<sequence>` (`kinds.rs`), so
//! one multi-read of the children and `size` (a consistent snapshot) gives every client the
//! whole grant rule, `queue_rule::admit`: an entry holds while the permits of every entry up to
//! and including it fit the size, which makes waiting first come, first served.
//!
//! A waiter whose permits do not fit waits for *any* change: a children watch on the directory
//! (a node ahead left) and a data watch on `size` (a resize), plus the capped re-check timer.
//! A granted node writes `held` into its own data (beside its holder label, `node_data.rs`), so
//! that once the size shrinks below the permits out, [`semaphore_state`](SemaphoreBackend::semaphore_state) and
//! [`queue_length`](crate::backend::QueueBackend::queue_length) still count the leases granted
//! under the larger size as held (the rule alone, at the new size, would call them waiting).
//!
//! A permit's lease is a node like a lock's: it dies with its session, and with its TTL (the
//! holder's expiry timer deletes it, `held.rs`), so a crashed holder's permits come back. Its
//! fencing token is the zxid of that `held` write (the node's `mzxid`): a grant's own write,
//! so it is larger than anything before the grant, a forced release included.

use tokio::time::{sleep_until, Instant};
use zookeeper_client as zk;

use super::kinds::Family;
use super::node_data;
use super::path::sort_queue;
use super::queue::{admitted, entries, Listing, Node};
use super::session::Session;
use super::{to_lock_error, ZooKeeperBackend, BACKEND};
use crate::backend::queue_rule::permits_held;
use crate::backend::{SemaphoreBackend, SemaphoreState};
use crate::{LockError, LockKey, Result};

/// The child of a semaphore's directory that holds its size.
pub(super) const SIZE_NODE: &str = "size";

impl ZooKeeperBackend {
    /// The semaphore's queue (without the size node) and size, in one consistent read.
    pub(super) async fn semaphore_listing(&self, session: &Session, dir: &str) -> Result<Listing> {
        let size_path = size_path(dir);
        let (client, size_path) = (&session.client, size_path.as_str());
        let results = self
            .retry(|| async move {
                let mut reader = client.new_multi_reader();
                reader.add_get_children(dir)?;
                reader.add_get_data(size_path)?;
                reader.commit().await
            })
            .await
            .map_err(to_lock_error)?;
        let mut listing = Listing::default();
        for result in results {
            match result {
                zk::MultiReadResult::Children { children } => {
                    listing.queue = children.into_iter().filter(|c| c != SIZE_NODE).collect();
                }
                zk::MultiReadResult::Data { data, .. } => listing.size = Some(parse_size(&data)?),
                zk::MultiReadResult::Error {
                    err: zk::Error::NoNode,
                } => {}
                zk::MultiReadResult::Error { err } => return Err(to_lock_error(err)),
                other => {
                    return Err(LockError::Protocol {
                        backend: BACKEND,
                        detail: format!("unexpected reply to a multi-read: {other:?}"),
                    })
                }
            }
        }
        sort_queue(&mut listing.queue);
        Ok(listing)
    }

    /// The semaphore's size, set to `limit` first when it has none.
    pub(super) async fn ensure_size(
        &self,
        session: &Session,
        dir: &str,
        limit: u32,
    ) -> Result<u32> {
        let path = size_path(dir);
        let mut failures = 0;
        loop {
            let error = match self.retry(|| session.client.get_data(&path)).await {
                Ok((data, _)) => return parse_size(&data),
                Err(zk::Error::NoNode) => match self.create_size(session, dir, limit).await {
                    Ok(()) => return Ok(limit),
                    // Someone else set it first: read theirs.
                    Err(zk::Error::NodeExists) => continue,
                    Err(error) => error,
                },
                Err(error) => error,
            };
            self.write_failed(&mut failures, error).await?;
        }
    }

    /// Creates the size node with `permits` (and the semaphore's container when missing).
    async fn create_size(
        &self,
        session: &Session,
        dir: &str,
        permits: u32,
    ) -> std::result::Result<(), zk::Error> {
        let path = size_path(dir);
        let data = permits.to_string();
        let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        match session
            .client
            .create(&path, data.as_bytes(), &persistent)
            .await
        {
            Err(zk::Error::NoNode) => {
                let containers = zk::CreateMode::Container.with_acls(zk::Acls::anyone_all());
                match session.client.mkdir(dir, &containers).await {
                    Ok(()) | Err(zk::Error::NodeExists) => {}
                    Err(error) => return Err(error),
                }
                session
                    .client
                    .create(&path, data.as_bytes(), &persistent)
                    .await
                    .map(drop)
            }
            created => created.map(drop),
        }
    }

    /// Writes `data` (the `held` mark and the node's label) into a node the rule just granted:
    /// the zxid of the write (the permit's fencing token), `None` when the node is gone.
    pub(super) async fn mark_held(
        &self,
        session: &Session,
        node: &Node,
        data: &[u8],
    ) -> Result<Option<i64>> {
        // Setting the same data twice is harmless, so a lost reply is simply sent again.
        match self
            .retry(|| session.client.set_data(&node.path, data, None))
            .await
        {
            Ok(stat) => Ok(Some(stat.mzxid)),
            Err(zk::Error::NoNode) => Ok(None),
            Err(error) => Err(to_lock_error(error)),
        }
    }

    /// Waits until the semaphore's queue or size differs from `seen`, or `recheck_at` passes.
    pub(super) async fn wait_for_change(
        &self,
        session: &Session,
        dir: &str,
        seen: &Listing,
        recheck_at: Instant,
    ) -> Result<()> {
        let size_path = size_path(dir);
        let (mut queue, queue_changed) = match self
            .retry(|| session.client.list_and_watch_children(dir))
            .await
        {
            Ok(watched) => watched,
            Err(zk::Error::NoNode) => return Ok(()),
            Err(error) => return Err(to_lock_error(error)),
        };
        let (size, size_changed) = match self
            .retry(|| session.client.get_and_watch_data(&size_path))
            .await
        {
            Ok((data, _, watcher)) => (parse_size(&data)?, watcher),
            Err(zk::Error::NoNode) => return Ok(()),
            Err(error) => return Err(to_lock_error(error)),
        };
        queue.retain(|c| c != SIZE_NODE);
        sort_queue(&mut queue);
        if queue != seen.queue || Some(size) != seen.size {
            // It changed between the look and the watches: look again now.
            return Ok(());
        }
        tokio::select! {
            _ = queue_changed.changed() => {}
            _ = size_changed.changed() => {}
            () = sleep_until(recheck_at) => {}
        }
        Ok(())
    }

    /// Sets the size of the semaphore `key` to `permits`.
    async fn write_size(&self, key: &LockKey, permits: u32) -> Result<()> {
        if permits == 0 {
            return Err(LockError::InvalidInput {
                what: "semaphore size",
                reason: "0: a semaphore has at least 1 permit".into(),
            });
        }
        let dir = self.primitive_dir(Family::Semaphore, key.full());
        let path = size_path(&dir);
        let session = self.session().await?;
        let data = permits.to_string();
        let mut failures = 0;
        loop {
            // Setting the same size twice is harmless: a lost reply is sent again.
            let error = match session.client.set_data(&path, data.as_bytes(), None).await {
                Ok(_) => return Ok(()),
                Err(zk::Error::NoNode) => match self.create_size(&session, &dir, permits).await {
                    Ok(()) => return Ok(()),
                    // Created by an acquirer in between: overwrite it.
                    Err(zk::Error::NodeExists) => continue,
                    Err(error) => error,
                },
                Err(error) => error,
            };
            self.write_failed(&mut failures, error).await?;
        }
    }

    /// The semaphore `key`'s size and the permits its holders have.
    async fn read_semaphore(&self, key: &LockKey) -> Result<SemaphoreState> {
        let dir = self.primitive_dir(Family::Semaphore, key.full());
        let session = self.session().await?;
        let listing = self.semaphore_listing(&session, &dir).await?;
        let holding = self.holding(&session, &dir, &listing).await?;
        let held = permits_held(
            entries(&listing.queue)
                .iter()
                .zip(holding)
                .filter(|(_, holds)| *holds)
                .map(|(entry, _)| entry.kind),
        );
        Ok(SemaphoreState::new(listing.size, held))
    }

    /// For each entry of a semaphore's queue, whether it holds permits: the rule admits it at
    /// the current size, or it said it was granted (under a larger size) in its data.
    pub(super) async fn holding(
        &self,
        session: &Session,
        dir: &str,
        listing: &Listing,
    ) -> Result<Vec<bool>> {
        let mut holding = admitted(&listing.queue, listing.size.unwrap_or(0));
        let unsure: Vec<usize> = (0..holding.len()).filter(|&i| !holding[i]).collect();
        if unsure.is_empty() {
            return Ok(holding);
        }
        let paths: Vec<String> = unsure
            .iter()
            .map(|&i| format!("{dir}/{}", listing.queue[i]))
            .collect();
        let results = self.read_data(session, &paths).await?;
        for (index, result) in unsure.into_iter().zip(results) {
            if let zk::MultiReadResult::Data { data, .. } = result {
                holding[index] = node_data::decode(&data).held;
            }
        }
        Ok(holding)
    }
}

/// The size node of the semaphore at `dir`.
fn size_path(dir: &str) -> String {
    format!("{dir}/{SIZE_NODE}")
}

/// Reads a size node's data: a number of permits, at least 1.
fn parse_size(data: &[u8]) -> Result<u32> {
    std::str::from_utf8(data)
        .ok()
        .and_then(|text| text.trim().parse::<u32>().ok())
        .filter(|size| *size > 0)
        .ok_or_else(|| LockError::Protocol {
            backend: BACKEND,
            detail: format!(
                "a semaphore's size node holds {:?}, not a number of permits",
                String::from_utf8_lossy(data)
            ),
        })
}

/// Each call goes through the breaker as a whole.
impl SemaphoreBackend for ZooKeeperBackend {
    async fn set_permits(&self, key: &LockKey, permits: u32) -> Result<()> {
        self.guarded(self.write_size(key, permits)).await
    }

    async fn semaphore_state(&self, key: &LockKey) -> Result<SemaphoreState> {
        self.guarded(self.read_semaphore(key)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_positive_numbers() {
        assert_eq!(parse_size(b"3").unwrap(), 3);
        assert_eq!(parse_size(b" 12\n").unwrap(), 12);
        for bad in [&b""[..], b"0", b"-1", b"x", b"\xff", b"99999999999"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
    }
}
