//! The audit trail: one key per forced release, `<prefix>/~audit/<key>/<owner token>` (owner
//! tokens are drawn anew for every lease, so a lease is released by force at most once), put
//! in the transaction that deletes the holder's entry, under an etcd lease of the request's
//! retention, which deletes it when the retention ends. The record's create revision is that
//! transaction's revision, the token the release took; its value holds the rest as lines of
//! text (`backend/audit_text.rs`, with the time of the release). Read newest first by create
//! revision, with a limit, in one ranged read.

use std::time::SystemTime;

use etcd_client as etcd;

use super::inspect::unix_ms;
use crate::backend::audit_text::StoredAudit;
use crate::backend::AuditRecord;
use crate::etcd::EtcdBackend;
use crate::{FencingToken, Result};

impl EtcdBackend {
    /// The records in the key range `range` (a prefix), newest first, at most `limit`.
    pub(super) async fn records_in(&self, range: String, limit: usize) -> Result<Vec<AuditRecord>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let reply = self
            .call("audit", |mut c| {
                let range = range.clone();
                let options = etcd::GetOptions::new()
                    .with_prefix()
                    .with_sort(etcd::SortTarget::Create, etcd::SortOrder::Descend)
                    .with_limit(limit);
                async move { c.get(range, Some(options)).await }
            })
            .await?;
        // A value that does not parse (written by hand, or by a later version) is skipped.
        Ok(reply.kvs().iter().filter_map(decode).collect())
    }

    /// The record at the key `at`, if there is one.
    pub(in crate::etcd) async fn revocation_at(&self, at: &str) -> Result<Option<AuditRecord>> {
        let reply = self
            .call("audit", |mut c| {
                let at = at.to_owned();
                async move { c.get(at, None).await }
            })
            .await?;
        Ok(reply.kvs().first().and_then(decode))
    }
}

/// A record read back (see `backend/audit_text.rs`): its token is the key's create revision;
/// `None` for a value that is not a record of this format.
fn decode(kv: &etcd::KeyValue) -> Option<AuditRecord> {
    let stored = StoredAudit::decode(kv.value())?;
    let new_token = FencingToken::new(u64::try_from(kv.create_revision()).ok()?);
    let at = stored.at_ms.map_or(SystemTime::UNIX_EPOCH, unix_ms);
    Some(stored.into_record(at, new_token))
}
