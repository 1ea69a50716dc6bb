//! The operator's view of a ZooKeeper backend ([`OperatorBackend`]).
//!
//! - **Inspection** (`inspect.rs`): the primitive's directory listed, its nodes' data and stats
//!   read in one multi-read: holders by the queue rule (and a permit node's `held` mark),
//!   waiters in queue order, each with the label its node's data carries (`node_data.rs`), the
//!   holder's fencing token (its `mzxid`, see `fence.rs`) and the waiters' time in line (from
//!   their `ctime`). ZooKeeper keeps no lease time for a session-bound node: `lease_left` is
//!   `None`, and `acquired_at` is the node's last write (`mtime`), which for a lock holder is
//!   when it queued: when it was granted if it did not wait.
//! - **Listing** (`list.rs`): the root's children, in one `getChildren` (ZooKeeper cannot page
//!   a node's children, so that one read is bounded only by the server's reply limit,
//!   `jute.maxbuffer`), sorted, then walked in order from the cursor (the last key given),
//!   the non-empty directories found by multi-reads and inspected.
//! - **Forced release** (`force.rs`): one transaction deletes the holder's node (guarded by the
//!   version read), writes the primitive's directory (which raises the fencing token, see
//!   `fence.rs`) and creates the audit record; the holder's watch on its node fires, reads the
//!   record and reports [`LostReason::Revoked`](crate::LostReason::Revoked); the waiter behind
//!   is woken by the deletion, as by any release.
//! - **Audit** (`audit.rs`): persistent sequential nodes under `<root>/%audit/<key>`, their
//!   data lines of text (`record.rs`).

mod audit;
mod force;
mod inspect;
mod list;
mod record;

pub(super) use self::audit::find_revocation;

use super::kinds::Family;
use super::ZooKeeperBackend;
use crate::backend::{
    AuditRecord, ForceRelease, InspectionPage, KeyInspection, LeaseKind, ListRequest,
    OperatorBackend, Primitive,
};
use crate::{LockKey, OwnerToken, Result};

/// The most waiters one inspection lists.
const MAX_WAITERS_LISTED: usize = 100;

/// The directory family of a primitive. The latch holds no lease and has no directory (its
/// one node is read apart, `latch.rs`): it never reaches a caller of this.
fn family_of(primitive: Primitive) -> Family {
    Family::of(primitive.lease_kind().unwrap_or(LeaseKind::Exclusive))
}

impl OperatorBackend for ZooKeeperBackend {
    async fn inspect(&self, key: &LockKey, primitive: Primitive) -> Result<KeyInspection> {
        self.guarded(async {
            let session = self.session().await?;
            if primitive == Primitive::Latch {
                return self.inspect_latch(&session, key.full()).await;
            }
            let seen = self.read_queue(&session, primitive, key.full()).await?;
            Ok(seen.inspection())
        })
        .await
    }

    async fn list(&self, request: ListRequest<'_>) -> Result<InspectionPage> {
        crate::backend::validate_limit(request.limit)?;
        self.guarded(self.list_keys(request)).await
    }

    async fn force_release(&self, request: ForceRelease<'_>) -> Result<AuditRecord> {
        self.guarded(self.force_release_holder(request)).await
    }

    async fn audit(
        &self,
        key: Option<&LockKey>,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<AuditRecord>> {
        crate::backend::validate_limit(limit)?;
        self.guarded(async {
            let session = self.session().await?;
            match key {
                Some(key) => self.records_of(&session, key.full(), limit).await,
                None => self.records_under(&session, prefix, limit).await,
            }
        })
        .await
    }

    /// One listing of the key's audit directory and one read of the record named by `owner`.
    async fn revocation(&self, key: &LockKey, owner: OwnerToken) -> Result<Option<AuditRecord>> {
        self.guarded(async {
            let session = self.session().await?;
            find_revocation(&session.client, &self.audit_dir(key.full()), owner).await
        })
        .await
    }
}
