//! What a RedLock grant holds: the lease of each node that granted it.

use crate::backend::{Abandoned, LeaseKind};
use crate::redis::RedisLease;
use crate::{LockKey, OwnerToken};

/// A lease held on a quorum of a [`RedLock`](super::RedLock)'s nodes.
#[derive(Debug)]
pub struct RedLockLease {
    /// Each node's lease, in node order; `None` where the node did not grant it (busy, down,
    /// or its answer came too late).
    pub(super) nodes: Vec<Option<RedisLease>>,
    /// The key and the grant's owner token, to clean up nodes whose grant came too late.
    pub(super) abandoned: Abandoned,
}

impl RedLockLease {
    pub(super) fn new(nodes: Vec<Option<RedisLease>>, key: LockKey, owner: OwnerToken) -> Self {
        Self {
            nodes,
            abandoned: Abandoned {
                key,
                kind: LeaseKind::Exclusive,
                owner,
            },
        }
    }
}
