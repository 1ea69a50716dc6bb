//! A granted lease: its TTL timer, the watch on its own key, renewal and release.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client as etcd;
use tokio::time::Instant;

use super::leases::LockLease;
use super::watch::{Fired, Target};
use super::EtcdBackend;
use crate::backend::expiry::Expiry;
use crate::backend::Grant;
use crate::sync::lock;
use crate::{FencingToken, LossSignal, LostReason, Result};

/// A lease held in etcd: our entry and the per-lock etcd lease it is attached to.
#[derive(Debug)]
pub struct EtcdLease {
    key: String,
    create_revision: i64,
    /// The etcd lease, with the time of its last keep-alive.
    lease: Mutex<LockLease>,
    expiry: Arc<Expiry>,
}

/// Our entry, now holding.
pub(super) struct Held {
    /// The entry's key.
    pub(super) key: String,
    /// The per-lock lease it is under.
    pub(super) lease: LockLease,
    /// Its create revision: its place in line, and its identity.
    pub(super) create_revision: i64,
    /// The revision of the write that put it in holding: its fencing token.
    pub(super) revision: i64,
    /// Where a forced release of it leaves its audit record (`operator/audit.rs`).
    pub(super) audit_key: String,
}

/// The longest the watch on a deleted entry waits for the audit record before it reports the
/// loss without it.
const REVOCATION_READ: Duration = Duration::from_secs(2);

impl EtcdBackend {
    /// Turns our entry, now holding, into a granted lease trusted from `sent`: starts its TTL
    /// timer and the watch on the entry itself.
    ///
    /// Its fencing token is the revision of the write that put it in holding (the fast path's
    /// put, or the claim), not its create revision: a waiter queued before a forced release
    /// claims after it, so its token is larger than the release's (the revision of its
    /// delete), as every later grant's must be.
    pub(super) fn grant(&self, held: Held, ttl: Duration, sent: Instant) -> Grant<EtcdLease> {
        let Held {
            key,
            lease,
            create_revision,
            revision,
            audit_key,
        } = held;
        let loss = LossSignal::new();
        let expiry = Arc::new(Expiry::new(sent + ttl));
        tokio::spawn({
            let (backend, expiry, loss) = (self.clone(), expiry.clone(), loss.clone());
            async move {
                if expiry.run_out().await {
                    loss.fire(LostReason::Expired);
                    backend.revoke_quietly(lease.id).await;
                }
            }
        });
        tokio::spawn(watch_own_key(
            self.clone(),
            (key.clone(), audit_key),
            (create_revision, revision),
            expiry.clone(),
            loss.clone(),
        ));
        // A revision is never negative; the fallback only keeps a corrupt reply from panicking.
        let fence =
            FencingToken::new(u64::try_from(revision.max(create_revision)).unwrap_or_default());
        let lease = EtcdLease {
            key,
            create_revision,
            lease: Mutex::new(lease),
            expiry,
        };
        Grant::new(lease, fence, sent).with_loss(loss)
    }

    /// See [`LockBackend::renew`](crate::backend::LockBackend::renew).
    pub(super) async fn renew_held(&self, held: &EtcdLease, ttl: Option<Duration>) -> Result<bool> {
        if held.expiry.is_ended() {
            return Ok(false);
        }
        let sent = Instant::now();
        if ttl.is_some() {
            let lease_id = lock(&held.lease).id;
            if !self.keep_alive(lease_id).await? {
                held.expiry.end();
                return Ok(false);
            }
            lock(&held.lease).kept_alive_at = sent;
        }
        let key = held.key.clone();
        let found = self
            .call("renew", |mut c| {
                let key = key.clone();
                async move { c.get(key, None).await }
            })
            .await?;
        let ours = found
            .kvs()
            .first()
            .is_some_and(|kv| kv.create_revision() == held.create_revision);
        if !ours {
            held.expiry.end();
            return Ok(false);
        }
        Ok(match ttl {
            Some(ttl) => held.expiry.extend(sent + ttl),
            None => !held.expiry.is_ended(),
        })
    }

    /// See [`LockBackend::release`](crate::backend::LockBackend::release).
    pub(super) async fn release_held(&self, held: &EtcdLease) -> Result<bool> {
        // Stop the TTL timer, but delete whether or not the lease had ended already: a release
        // cut short after ending it (its future dropped) is sent again, and must still delete.
        // The delete is owner-checked by the entry's create revision.
        let was_running = held.expiry.end();
        let mut tries = 0;
        let (key, revision) = (held.key.clone(), held.create_revision);
        let deleted = self
            .call("release", |mut c| {
                tries += 1;
                let txn = etcd::Txn::new()
                    .when([etcd::Compare::create_revision(
                        key.clone(),
                        etcd::CompareOp::Equal,
                        revision,
                    )])
                    .and_then([etcd::TxnOp::delete(key.clone(), None)]);
                async move { c.txn(txn).await }
            })
            .await?
            .succeeded();
        let lease = *lock(&held.lease);
        // After a lost reply the first delete may have gone through, or never arrived (a
        // partition) while the lease ran out on the server. Only our delete or the lease's end
        // removes the key, so the lease still being alive says the delete was ours.
        let released = deleted || (tries > 1 && self.lease_alive(lease.id).await);
        if released && was_running {
            // The lease has no key left: the next acquisition reuses it.
            self.spare(lease);
        } else {
            self.revoke_in_background(lease.id);
        }
        Ok(released)
    }
}

impl EtcdBackend {
    /// Whether the etcd lease `id` still exists (an error counts as no: the caller then
    /// reports that nothing was released, the safe answer when it cannot tell).
    async fn lease_alive(&self, id: i64) -> bool {
        self.call("release", |mut c| async move {
            c.lease_time_to_live(id, None).await
        })
        .await
        .is_ok_and(|reply| reply.ttl() > 0)
    }
}

/// Fires the holder's loss signal when its key is deleted (behind its back, or because its
/// etcd lease was revoked or expired); returns when the lease ends in any way. A deleted key is
/// looked up in the audit records first: a forced release, which writes its record in the
/// transaction that deletes the key, is reported as [`LostReason::Revoked`] by this push.
async fn watch_own_key(
    backend: EtcdBackend,
    (key, audit_key): (String, String),
    (create_revision, held_at): (i64, i64),
    expiry: Arc<Expiry>,
    loss: LossSignal,
) {
    // From the revision it held at: nothing before it can be a loss, and a watch that starts
    // close to the present costs etcd no history scan.
    let mut from = held_at.max(create_revision) + 1;
    loop {
        let mut watch = backend
            .shared
            .watches
            .watch(Target::Deleted(key.clone().into_bytes()), Some(from));
        let fired = tokio::select! {
            () = expiry.ended() => return,
            fired = watch.fired() => fired,
        };
        if fired == Fired::Event {
            let reason = backend.lost_because(&audit_key, &expiry).await;
            if expiry.end() {
                loss.fire(reason);
            }
            return;
        }
        // The stream broke or history was compacted: check the key, then watch on.
        tokio::select! {
            () = expiry.ended() => return,
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
        let k = key.clone();
        let found = backend
            .call("renew", |mut c| {
                let k = k.clone();
                async move { c.get(k, None).await }
            })
            .await;
        let Ok(found) = found else { continue };
        let ours = found
            .kvs()
            .first()
            .is_some_and(|kv| kv.create_revision() == create_revision);
        if !ours {
            let reason = backend.lost_because(&audit_key, &expiry).await;
            if expiry.end() {
                loss.fire(reason);
            }
            return;
        }
        from = found.header().map_or(from, |h| h.revision() + 1);
    }
}

impl EtcdBackend {
    /// Why a holder's key went: [`LostReason::Revoked`] when `audit_key` holds the record of a
    /// forced release, else [`LostReason::NotOwner`] (also when the record cannot be read within
    /// [`REVOCATION_READ`], or the lease had ended already).
    async fn lost_because(&self, audit_key: &str, expiry: &Expiry) -> LostReason {
        if expiry.is_ended() {
            return LostReason::NotOwner;
        }
        let read = tokio::time::timeout(REVOCATION_READ, self.revocation_at(audit_key));
        match read.await {
            Ok(Ok(Some(record))) => LostReason::Revoked {
                operator: record.operator,
                reason: record.reason,
            },
            _ => LostReason::NotOwner,
        }
    }
}
