//! Reading an election's leader: the [`ElectionBackend`] side of [`ZooKeeperBackend`].
//!
//! An election `jobs` is the directory `<root>/jobs%leader`, laid out as Curator's
//! `LeaderLatch` lays out its latch path: each candidate an `EPHEMERAL_SEQUENTIAL` node
//! `_c_<uuid>-latch-<sequence>` holding its participant id, the lowest sequence leading. A Java
//! `LeaderLatch` started on that path campaigns in the same election, and each side reads the
//! other's id as the leader's.

use zookeeper_client as zk;

use super::kinds::Family;
use super::path::sort_queue;
use super::{to_lock_error, ZooKeeperBackend};
use crate::backend::{ElectionBackend, Leader};
use crate::{FencingToken, LockKey, Result};

/// How many times the first node may vanish between the listing and its read before the
/// answer is "nobody leads" (a leader stepping down as it is read; the next look finds the next).
const LOOKS: usize = 3;

impl ElectionBackend for ZooKeeperBackend {
    async fn leader(&self, key: &LockKey) -> Result<Option<Leader>> {
        let dir = self.primitive_dir(Family::Leader, key.full());
        let session = self.session().await?;
        for _ in 0..LOOKS {
            let mut children = self.children(&session, &dir).await?;
            sort_queue(&mut children);
            let Some(first) = children.first() else {
                return Ok(None);
            };
            let path = format!("{dir}/{first}");
            match self.retry(|| session.client.get_data(&path)).await {
                Ok((data, stat)) => {
                    // A czxid is never negative; the fallback only keeps a corrupt reply from
                    // panicking.
                    let term = FencingToken::new(u64::try_from(stat.czxid).unwrap_or_default());
                    let participant = String::from_utf8_lossy(&data).into_owned();
                    return Ok(Some(Leader::new(participant, term)));
                }
                Err(zk::Error::NoNode) => {}
                Err(error) => return Err(to_lock_error(error)),
            }
        }
        Ok(None)
    }
}
