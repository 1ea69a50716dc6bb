//! Reading and following an election's leader: the [`ElectionBackend`] side of
//! [`ZooKeeperBackend`].
//!
//! An election `jobs` is the directory `<root>/jobs%leader`, laid out as Curator's
//! `LeaderLatch` lays out its latch path: each candidate an `EPHEMERAL_SEQUENTIAL` node
//! `_c_<uuid>-latch-<sequence>` holding its participant id, the lowest sequence leading. A Java
//! `LeaderLatch` started on that path campaigns in the same election, and each side reads the
//! other's id as the leader's.
//!
//! The term is the leader node's `mzxid`, which is its `czxid` unless the node took a fresh
//! fencing token when granted after a forced release (see `fence.rs`). Between such a release
//! and the next candidate's fresh token (one round trip of that candidate), observers read
//! the candidate's `czxid`; its campaign returns only with the fresh one.

use tokio::time::{sleep_until, Instant};
use zookeeper_client as zk;

use super::kinds::Family;
use super::path::sort_queue;
use super::session::Session;
use super::{to_lock_error, ZooKeeperBackend};
use crate::backend::{ElectionBackend, Leader, LeaderWait};
use crate::{FencingToken, LockKey, Result};

impl ZooKeeperBackend {
    /// The leader among `children` of `dir`: the first in queue order, its data and `mzxid`
    /// (its term: the `czxid` of a node never written, see `fence.rs`); `None` (look again)
    /// when it went between the listing and the read.
    async fn first_of(
        &self,
        session: &Session,
        dir: &str,
        mut children: Vec<String>,
    ) -> Result<Option<Option<Leader>>> {
        sort_queue(&mut children);
        let Some(first) = children.first() else {
            return Ok(Some(None));
        };
        let path = format!("{dir}/{first}");
        match self.retry(|| session.client.get_data(&path)).await {
            Ok((data, stat)) => {
                // A zxid is never negative; the fallback only keeps a corrupt reply from
                // panicking.
                let term = FencingToken::new(u64::try_from(stat.mzxid).unwrap_or_default());
                let participant = String::from_utf8_lossy(&data).into_owned();
                Ok(Some(Some(Leader::new(participant, term))))
            }
            Err(zk::Error::NoNode) => Ok(None),
            Err(error) => Err(to_lock_error(error)),
        }
    }

    /// Reads the leader of `dir`, setting a watch that fires at the next change of its
    /// candidates (or at the directory's creation when it has none yet).
    async fn watch_leader(
        &self,
        session: &Session,
        dir: &str,
    ) -> Result<(Option<Leader>, zk::OneshotWatcher)> {
        loop {
            let listed = self
                .retry(|| session.client.list_and_watch_children(dir))
                .await;
            let (children, watcher) = match listed {
                Ok(listed) => listed,
                Err(zk::Error::NoNode) => {
                    let (stat, watcher) = self
                        .retry(|| session.client.check_and_watch_stat(dir))
                        .await
                        .map_err(to_lock_error)?;
                    if stat.is_some() {
                        continue; // created meanwhile: list it
                    }
                    (Vec::new(), watcher)
                }
                Err(error) => return Err(to_lock_error(error)),
            };
            if let Some(leader) = self.first_of(session, dir, children).await? {
                return Ok((leader, watcher));
            }
        }
    }
}

impl ElectionBackend for ZooKeeperBackend {
    async fn leader(&self, key: &LockKey) -> Result<Option<Leader>> {
        let dir = self.primitive_dir(Family::Leader, key.full());
        self.guarded(async {
            let session = self.session().await?;
            loop {
                let children = self.children(&session, &dir).await?;
                if let Some(leader) = self.first_of(&session, &dir, children).await? {
                    return Ok(leader);
                }
            }
        })
        .await
    }

    /// Waits on a children watch of the election's directory: a candidate joining, leaving or
    /// its session expiring is an event.
    async fn leader_after(&self, wait: LeaderWait<'_>) -> Result<Option<Leader>> {
        let LeaderWait { key, seen, until } = wait;
        let dir = self.primitive_dir(Family::Leader, key.full());
        self.guarded(async {
            let session = self.session().await?;
            loop {
                let (leader, watcher) = self.watch_leader(&session, &dir).await?;
                if leader.as_ref() != seen || Instant::now() >= until {
                    return Ok(leader);
                }
                tokio::select! {
                    // A change, or the session reporting something: read again.
                    _ = watcher.changed() => {}
                    () = sleep_until(until) => return Ok(leader),
                }
                if !session.is_usable() {
                    return Ok(leader);
                }
            }
        })
        .await
    }
}
