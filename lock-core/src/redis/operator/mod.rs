//! The operator's view of a Redis backend ([`OperatorBackend`]): each key read in one
//! read-only script (`inspect.rs`), listings walked with `SCAN` on every primary (`list.rs`),
//! forced releases in one script each (`force.rs`), and the audit trail, one stream per key
//! beside its keys (`audit.rs`).

mod audit;
mod force;
mod inspect;
mod list;
mod store_key;

use super::RedisBackend;
use crate::backend::{
    AuditRecord, ForceRelease, InspectionPage, KeyInspection, ListRequest, OperatorBackend,
    Primitive,
};
use crate::{LockKey, Result};

/// The most waiters one inspection lists (the count says how many there are in all).
const MAX_WAITERS_LISTED: usize = 100;

impl OperatorBackend for RedisBackend {
    async fn inspect(&self, key: &LockKey, primitive: Primitive) -> Result<KeyInspection> {
        self.inspect_key(primitive, key.full()).await
    }

    async fn list(&self, request: ListRequest<'_>) -> Result<InspectionPage> {
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
        match key {
            Some(key) => self.audit_of(key.full(), limit).await,
            None => self.audit_under(prefix, limit).await,
        }
    }
}
