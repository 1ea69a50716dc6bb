//! Releasing a holder by force: one transaction, guarded by the holder entry's mod revision as
//! read (a key is rewritten by every claim and every return to waiting, so that names the
//! entry and its state), deletes the entry and puts the audit record under an etcd lease of
//! the request's retention. A holder that went or changed since the read fails the guard: the
//! queue is read and decided again.

use etcd_client as etcd;

use super::inspect::{token_of, unix_ms, SeenEntry};
use crate::backend::audit_text::StoredAudit;
use crate::backend::{check_lease_retention, AuditRecord, ForceRelease};
use crate::etcd::keys::audit_key;
use crate::etcd::look::unix_ms_now;
use crate::etcd::{ttl_seconds, EtcdBackend, BACKEND};
use crate::{FencingToken, LockError, Result};

/// How many times a release reads and tries again when the holders changed under it.
const ATTEMPTS: usize = 5;

impl EtcdBackend {
    pub(super) async fn force_release_holder(
        &self,
        request: ForceRelease<'_>,
    ) -> Result<AuditRecord> {
        check_lease_retention(request.retention, " (etcd's lease TTLs)")?;
        // The record's lease, granted once the release is not refused.
        let mut retention_lease = None;
        let outcome = self.release_holder(&request, &mut retention_lease).await;
        if !matches!(outcome, Ok(Some(_))) {
            // Refused or failed: the record's lease holds nothing.
            if let Some(lease) = retention_lease {
                self.revoke_in_background(lease);
            }
        }
        outcome?.ok_or_else(|| {
            LockError::unavailable(
                BACKEND,
                format!(
                    "the holders of {:?} kept changing while it was being released by force; try again",
                    request.key.name()
                ),
            )
        })
    }

    /// Reads, decides and releases, again while the holder changes under it (at most
    /// [`ATTEMPTS`] times): `None` when it kept changing.
    async fn release_holder(
        &self,
        request: &ForceRelease<'_>,
        retention_lease: &mut Option<i64>,
    ) -> Result<Option<AuditRecord>> {
        for _ in 0..ATTEMPTS {
            let seen = self
                .read_queue(request.primitive, request.key.full())
                .await?;
            let holders: Vec<&SeenEntry> = seen.holders().collect();
            let owners: Vec<_> = holders.iter().map(|holder| holder.owner).collect();
            let holder = holders[request.chosen(&owners)?];
            let lease = match *retention_lease {
                Some(lease) => lease,
                None => {
                    let seconds = ttl_seconds(request.retention);
                    let granted = self
                        .call("force release", |mut c| async move {
                            c.lease_grant(seconds, None).await
                        })
                        .await?;
                    *retention_lease.insert(granted.id())
                }
            };
            if let Some(record) = self.release(request, holder, lease).await? {
                return Ok(Some(record));
            }
        }
        Ok(None)
    }

    /// The transaction: the record, or `None` when the holder changed since it was read.
    async fn release(
        &self,
        request: &ForceRelease<'_>,
        holder: &SeenEntry,
        lease: i64,
    ) -> Result<Option<AuditRecord>> {
        let old = token_of(holder);
        let at_ms = unix_ms_now();
        let record_key = audit_key(&self.shared.prefix, request.key.full(), holder.owner);
        let stored = StoredAudit::of_release(
            request,
            holder.owner,
            holder.info.kind,
            holder.info.label.clone(),
            old,
        )
        .at(at_ms);
        let txn = etcd::Txn::new()
            .when([etcd::Compare::mod_revision(
                holder.key.clone(),
                etcd::CompareOp::Equal,
                holder.mod_revision,
            )])
            .and_then([
                etcd::TxnOp::delete(holder.key.clone(), None),
                etcd::TxnOp::put(
                    record_key.clone(),
                    stored.encode(),
                    Some(etcd::PutOptions::new().with_lease(lease)),
                ),
            ]);
        let reply = self
            .call("force release", |mut c| {
                let txn = txn.clone();
                async move { c.txn(txn).await }
            })
            .await?;
        if !reply.succeeded() {
            // A reply lost and the transaction sent again fails its guard: the first one went
            // through if its record is there.
            let done = self.revocation_at(&record_key).await?;
            return Ok(done.filter(|done| request.wrote(done, old)));
        }
        let revision = reply.header().map_or(0, etcd::ResponseHeader::revision);
        let new_token = FencingToken::new(u64::try_from(revision).unwrap_or_default());
        Ok(Some(stored.into_record(unix_ms(at_ms), new_token)))
    }
}
