//! The operator's view of an etcd backend ([`OperatorBackend`]).
//!
//! - **Inspection** (`inspect.rs`): the primitive's range read in create-revision order, in
//!   pages: holders are the entries marked holding, waiters the others in queue order, each
//!   with the label, request time and grant time its value carries (`keys.rs`; the client's
//!   clock: etcd keeps no time). A holder's fencing token is its entry's mod revision (the
//!   write that put it in holding, see `held.rs`); its lease left is its etcd lease's time to
//!   live (`LeaseTimeToLive`, one request per holder, for the first [`MAX_LEASES_READ`]
//!   holders), rounded to whole seconds by etcd and at most the lock's TTL rounded up (the
//!   holder's process ends the lease at its exact TTL).
//! - **Listing** (`list.rs`): keys-only ranged reads with a limit, from a start key, over each
//!   primitive's part of the keyspace under the prefix; each key found is inspected.
//! - **Forced release** (`force.rs`): one transaction, guarded by the holder entry's mod
//!   revision, deletes it and puts the audit record under an etcd lease of the request's
//!   retention. The revision of that transaction is the token the release took; every later
//!   grant is a later write, so its token is larger. The holder's watch on its entry fires,
//!   reads the record and reports [`LostReason::Revoked`](crate::LostReason::Revoked); the
//!   waiter behind is woken by the deletion, as by any release.
//! - **Audit** (`audit.rs`): `<prefix>/~audit/<key>/<owner token>`, read newest first by
//!   create revision.

mod audit;
mod force;
mod inspect;
mod list;

use super::EtcdBackend;
use crate::backend::{
    AuditRecord, ForceRelease, InspectionPage, KeyInspection, ListRequest, OperatorBackend,
    Primitive,
};
use crate::{LockKey, OwnerToken, Result};

/// The most waiters one inspection lists.
const MAX_WAITERS_LISTED: usize = 100;
/// The most holders whose lease left one inspection asks etcd for.
const MAX_LEASES_READ: usize = 8;

impl OperatorBackend for EtcdBackend {
    async fn inspect(&self, key: &LockKey, primitive: Primitive) -> Result<KeyInspection> {
        if primitive == Primitive::Latch {
            return self.inspect_latch(key.full()).await;
        }
        let seen = self.read_queue(primitive, key.full()).await?;
        Ok(self.inspection(&seen).await)
    }

    async fn list(&self, request: ListRequest<'_>) -> Result<InspectionPage> {
        crate::backend::validate_limit(request.limit)?;
        self.list_keys(request).await
    }

    async fn force_release(&self, request: ForceRelease<'_>) -> Result<AuditRecord> {
        self.force_release_holder(request).await
    }

    async fn audit(
        &self,
        key: Option<&LockKey>,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<AuditRecord>> {
        crate::backend::validate_limit(limit)?;
        let range = match key {
            Some(key) => super::keys::audit_prefix(&self.shared.prefix, key.full()),
            None => super::keys::audit_range(&self.shared.prefix, prefix),
        };
        self.records_in(range, limit).await
    }

    /// One read of the record's key (named by the owner token).
    async fn revocation(&self, key: &LockKey, owner: OwnerToken) -> Result<Option<AuditRecord>> {
        let at = super::keys::audit_key(&self.shared.prefix, key.full(), owner);
        self.revocation_at(&at).await
    }
}
