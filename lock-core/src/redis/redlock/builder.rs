//! [`RedLockBuilder`]: the nodes and timings of a [`RedLock`].

use std::sync::Arc;
use std::time::Duration;

use super::node::Node;
use super::token::NODE_SLOTS;
use super::{Inner, RedLock};
use crate::{LockError, RedisBackend, Result};

/// The fewest nodes a RedLock takes: with fewer, one node down stops it (2 of 2) or one node
/// is the whole lock.
pub(super) const MIN_NODES: usize = 3;

/// Configures a [`RedLock`]; from [`RedLock::builder`].
#[derive(Debug)]
#[must_use]
pub struct RedLockBuilder {
    nodes: Vec<Node>,
    node_timeout: Duration,
    retry_delay: Duration,
}

impl RedLockBuilder {
    pub(super) fn new(nodes: Vec<RedisBackend>) -> Self {
        let nodes = nodes
            .into_iter()
            .enumerate()
            .map(|(i, backend)| Node::connected(i, backend))
            .collect();
        Self::from_nodes(nodes)
    }

    /// Over nodes some of which may still be connecting ([`RedLock::connect`]).
    pub(super) fn from_nodes(nodes: Vec<Node>) -> Self {
        Self {
            nodes,
            node_timeout: Duration::from_millis(50),
            retry_delay: Duration::from_millis(20),
        }
    }

    /// How long one node may take to answer one call (50 ms by default): a node slower than
    /// that counts as not answering, so a stalled node costs an acquisition this much, not
    /// the connection's response timeout. Keep it well below the lease TTL (RedLock's
    /// advice: milliseconds for a lease of seconds).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # fn f(nodes: Vec<lock_core::RedisBackend>) -> lock_core::RedLockBuilder {
    /// lock_core::RedLock::builder(nodes).node_timeout(Duration::from_millis(20))
    /// # }
    /// ```
    pub fn node_timeout(mut self, timeout: Duration) -> Self {
        self.node_timeout = timeout;
        self
    }

    /// About how long a waiting acquisition pauses between attempts (20 ms by default,
    /// spread ±20% so contenders do not retry together).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # fn f(nodes: Vec<lock_core::RedisBackend>) -> lock_core::RedLockBuilder {
    /// lock_core::RedLock::builder(nodes).retry_delay(Duration::from_millis(5))
    /// # }
    /// ```
    pub fn retry_delay(mut self, delay: Duration) -> Self {
        self.retry_delay = delay;
        self
    }

    /// The RedLock.
    ///
    /// # Errors
    /// [`LockError::InvalidConfig`] for fewer than 3 nodes, more than 16, the same backend
    /// (or a clone of it) twice, or a zero node timeout.
    pub fn build(self) -> Result<RedLock> {
        let count = self.nodes.len();
        if !(MIN_NODES..=NODE_SLOTS).contains(&count) {
            return Err(LockError::InvalidConfig(format!(
                "a RedLock takes {MIN_NODES} to {NODE_SLOTS} independent Redis nodes, not {count}"
            )));
        }
        for (i, node) in self.nodes.iter().enumerate() {
            let Some(node) = node.backend() else { continue };
            let same = |earlier: &Node| earlier.backend().is_some_and(|e| e.same_as(node));
            if self.nodes[..i].iter().any(same) {
                return Err(LockError::InvalidConfig(format!(
                    "RedLock node {i} is the same backend as an earlier one: each node must be \
                     a server of its own"
                )));
            }
        }
        if self.node_timeout.is_zero() {
            return Err(LockError::InvalidConfig(
                "a RedLock's node timeout must be above zero".to_owned(),
            ));
        }
        Ok(RedLock {
            inner: Arc::new(Inner {
                quorum: count / 2 + 1,
                nodes: self.nodes,
                node_timeout: self.node_timeout,
                retry_delay: self.retry_delay,
            }),
        })
    }
}
