//! Fencing tokens, and how a forced release raises them.
//!
//! A lease's fencing token is its node's `mzxid` when granted: ZooKeeper's transaction id,
//! which increases across the whole ensemble. A lock, fair lock, read-write or election node
//! is never written after its create, so its `mzxid` is its `czxid`, and its token the zxid
//! that created it, which orders it behind every node ahead of it in the queue. A permit node
//! is written when granted (the `held` mark, `semaphore.rs`): its token is that write's zxid.
//!
//! A forced release (`operator/force.rs`) deletes the holder's node and, in the same
//! transaction, writes the primitive's directory: the directory's `mzxid` becomes the zxid of
//! the release, the token the release takes. A node queued before it has a smaller `czxid`,
//! so when such a node is granted, it takes a fresh token: one transaction writes the
//! directory and the node again (the same data), and the node's new `mzxid`, the zxid of that
//! write, is larger than every token before it, the release's included. The acquire sees the
//! directory's `mzxid` in the children listing it makes anyway (`getChildren2`), so a grant
//! costs one more write only right after a forced release, and only for the nodes that were
//! queued at the time; a node queued later has a larger `czxid` than the directory's `mzxid`
//! and keeps it.
//!
//! Why the directory and not only the node: a node granted with a fresh token may be followed
//! by one queued after the release but before that grant, whose `czxid` is smaller than the
//! fresh token; the fresh token's write to the directory makes that node take one too.

use zookeeper_client as zk;

use super::queue::{Listing, Node};
use super::session::Session;
use super::{to_lock_error, ZooKeeperBackend};
use crate::Result;

/// Whether our node, granted by `listing`, must take a fresh token: the directory was written
/// (by a forced release, or a fresh token) after the node was created.
pub(super) fn needs_fresh_token(listing: &Listing, node: &Node) -> bool {
    listing.dir_mzxid.is_some_and(|mzxid| mzxid > node.czxid)
}

impl ZooKeeperBackend {
    /// Writes the directory `dir` and our `node` (again with its `data`) in one transaction:
    /// the zxid of that write, our fencing token; `None` when the node is gone.
    pub(super) async fn fresh_token(
        &self,
        session: &Session,
        dir: &str,
        node: &Node,
        data: &[u8],
    ) -> Result<Option<i64>> {
        let mut failures = 0;
        loop {
            let mut transaction = session.client.new_multi_writer();
            transaction
                .add_set_data(dir, &[], None)
                .and_then(|()| transaction.add_set_data(&node.path, data, None))
                .map_err(to_lock_error)?;
            let error = match transaction.commit().await {
                Ok(results) => {
                    return Ok(results.into_iter().find_map(|result| match result {
                        zk::MultiWriteResult::SetData { stat } if stat.czxid == node.czxid => {
                            Some(stat.mzxid)
                        }
                        _ => None,
                    }));
                }
                Err(zk::MultiWriteError::OperationFailed {
                    source: zk::Error::NoNode,
                    ..
                }) => return Ok(None),
                Err(error) => zk::Error::from(error),
            };
            // Writing the same data again is harmless: a lost reply is sent again.
            self.write_failed(&mut failures, error).await?;
        }
    }
}
