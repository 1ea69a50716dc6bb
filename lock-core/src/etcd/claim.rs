//! Going in holding: an entry that finds its queue empty goes in holding at once; an admitted
//! waiter claims. Both put the entry under a per-lock lease with the holding mark, guarded so
//! that only our own entry, at its place in line, can be moved.

use etcd_client as etcd;
use tokio::time::Instant;

use super::keys::size_key;
use super::leases::LockLease;
use super::look::{gets, read_look, Look, Spec};
use super::queue::{Queued, Turn};
use super::EtcdBackend;
use crate::backend::queue_rule::Admission;
use crate::backend::LeaseKind;
use crate::{LockError, Result};

/// What putting our entry came to.
pub(super) enum Enqueued {
    /// Held at once, or lost at once.
    Holds(Turn),
    /// Waiting, with the queue as read in the same transaction.
    Waits(Queued, Look),
}

/// What a claim came to.
pub(super) enum Claim {
    /// Holds under the lease, trusted from the instant, as of the revision.
    Holds(LockLease, Instant, i64),
    /// Not admitted after all: the queue as the claim read it.
    Waits(Look),
    /// Our entry is gone.
    Gone,
}

impl EtcdBackend {
    /// Puts our entry. On an empty queue (not for semaphores, whose size must be read, nor
    /// when this backend has other acquisitions of the queue under way: not `alone`) the entry
    /// goes in holding, under a per-lock lease, in the same transaction.
    pub(super) async fn enqueue(&self, spec: &Spec<'_, '_>, alone: bool) -> Result<Enqueued> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let session = self.session().await?;
            let fast = if spec.is_semaphore() || !alone {
                None
            } else {
                Some(self.lock_lease(spec.request.ttl).await?)
            };
            let sent = Instant::now();
            let waiting_put = etcd::TxnOp::put(
                spec.key.clone(),
                spec.waiting.clone(),
                Some(etcd::PutOptions::new().with_lease(session)),
            );
            let txn = match fast {
                Some((lease, _)) => etcd::Txn::new()
                    .when([etcd::Compare::create_revision(
                        spec.prefix.clone(),
                        etcd::CompareOp::Equal,
                        0,
                    )
                    .with_prefix()])
                    .and_then([
                        etcd::TxnOp::put(
                            spec.key.clone(),
                            spec.holding(),
                            Some(etcd::PutOptions::new().with_lease(lease.id)),
                        ),
                        etcd::TxnOp::get(spec.key.clone(), None),
                    ])
                    .or_else([
                        waiting_put,
                        etcd::TxnOp::get(spec.key.clone(), None),
                        spec.range(None),
                    ]),
                None => etcd::Txn::new().and_then([
                    waiting_put,
                    etcd::TxnOp::get(spec.key.clone(), None),
                    spec.range(None),
                    spec.size_read(),
                ]),
            };
            let spare = fast.filter(|(_, spare)| *spare).map(|(lease, _)| lease.id);
            let (reply, kept) =
                tokio::join!(self.txn_under_lease(&txn, spec), self.keep_alive_opt(spare));
            let Some(reply) = reply? else {
                // The session lease or the spare is gone: forget both and put again.
                self.shared.session.lost(session).await;
                if let Some((lease, _)) = fast {
                    self.revoke_in_background(lease.id);
                }
                if attempts >= 3 {
                    // Each lease ran out before the command using it arrived: the replies are
                    // slower than the lease, an availability problem, not a protocol error.
                    return Err(LockError::unavailable(
                        super::BACKEND,
                        "every lease granted for the entry ended before it could be used (replies slower than the lease)",
                    ));
                }
                continue;
            };
            let gets = gets(&reply);
            let create_revision = gets
                .first()
                .and_then(|get| get.kvs().first())
                .map(etcd::KeyValue::create_revision)
                .ok_or_else(|| LockError::Protocol {
                    backend: super::BACKEND,
                    detail: "the entry just put is missing (its lease expired at once?)".into(),
                })?;
            let queued = Queued::new(self.clone(), spec.key.clone(), create_revision);
            let revision = reply.header().map_or(0, etcd::ResponseHeader::revision);
            if let (true, Some((mut lease, _))) = (reply.succeeded(), fast) {
                if kept == Some(true) {
                    lease.kept_alive_at = sent;
                }
                // Trusted from the earlier of: the txn sent, the lease last kept alive.
                let sent = sent.min(lease.kept_alive_at);
                return Ok(Enqueued::Holds(Turn::Holds {
                    queued,
                    lease,
                    sent,
                    revision,
                }));
            }
            if let Some((mut lease, _)) = fast {
                // Not needed yet: the claim takes a lease when the entry is admitted.
                if kept == Some(true) {
                    lease.kept_alive_at = sent;
                }
                self.spare(lease);
            }
            let look = match read_look(spec, create_revision, gets.get(1), gets.get(2), false) {
                Some(look) => Some(look),
                // Our entry was there before (a put keeps its create revision), or a key of
                // another writer is in the range: read the whole queue.
                None => self.look_whole(spec, &queued).await?,
            };
            return Ok(match look {
                Some(look) => Enqueued::Waits(queued, look),
                None => {
                    drop(queued);
                    Enqueued::Holds(Turn::Lost)
                }
            });
        }
    }

    /// Moves our admitted entry under a per-lock lease, marked holding, and confirms the
    /// admission from the queue read in the same transaction. If the queue says otherwise
    /// (an entry ahead that was not seen), the entry goes back to waiting.
    pub(super) async fn claim(&self, spec: &Spec<'_, '_>, queued: &Queued) -> Result<Claim> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let (mut lease, spare) = self.lock_lease(spec.request.ttl).await?;
            let guard = etcd::Compare::create_revision(
                queued.key.clone(),
                etcd::CompareOp::Equal,
                queued.create_revision,
            );
            let txn = etcd::Txn::new().when([guard]).and_then([
                etcd::TxnOp::put(
                    queued.key.clone(),
                    spec.holding(),
                    Some(etcd::PutOptions::new().with_lease(lease.id)),
                ),
                spec.range(Some(queued.create_revision)),
                spec.size_read(),
            ]);
            let sent = Instant::now();
            let (reply, kept) = tokio::join!(
                self.txn_under_lease(&txn, spec),
                self.keep_alive_opt(spare.then_some(lease.id)),
            );
            let Some(reply) = reply? else {
                // The spare expired unused: take another.
                self.revoke_in_background(lease.id);
                if attempts >= 3 {
                    // Each lease ran out before the command using it arrived: the replies are
                    // slower than the lease, an availability problem, not a protocol error.
                    return Err(LockError::unavailable(
                        super::BACKEND,
                        "every lease granted for the holder ended before it could be used (replies slower than the lease)",
                    ));
                }
                continue;
            };
            if !reply.succeeded() {
                self.spare(lease);
                return Ok(Claim::Gone);
            }
            if kept == Some(true) {
                lease.kept_alive_at = sent;
            }
            let revision = reply.header().map_or(0, etcd::ResponseHeader::revision);
            let gets = gets(&reply);
            let look = match read_look(
                spec,
                queued.create_revision,
                gets.first(),
                gets.get(1),
                false,
            ) {
                Some(look) => Some(look),
                // A key of another writer in the read of two: read the whole queue.
                None => self.look_whole(spec, queued).await?,
            };
            let Some(look) = look else {
                return Ok(Claim::Gone);
            };
            if matches!(look.admission(spec), Ok(Admission::Granted)) {
                return Ok(Claim::Holds(lease, sent.min(lease.kept_alive_at), revision));
            }
            // Not ours after all: back to waiting under the session lease.
            let session = self.session().await?;
            let (own, waiting, revision) = (
                queued.key.clone(),
                spec.waiting.clone(),
                queued.create_revision,
            );
            let back = self
                .call("acquire", |mut c| {
                    let txn = etcd::Txn::new()
                        .when([etcd::Compare::create_revision(
                            own.clone(),
                            etcd::CompareOp::Equal,
                            revision,
                        )])
                        .and_then([etcd::TxnOp::put(
                            own.clone(),
                            waiting.clone(),
                            Some(etcd::PutOptions::new().with_lease(session)),
                        )]);
                    async move { c.txn(txn).await }
                })
                .await?;
            self.spare(lease);
            return Ok(if back.succeeded() {
                Claim::Waits(look)
            } else {
                Claim::Gone
            });
        }
    }

    /// Creates the semaphore's size key with the request's `limit` unless it exists.
    pub(super) async fn create_size(&self, spec: &Spec<'_, '_>) -> Result<()> {
        let LeaseKind::Permits { limit, .. } = spec.request.kind else {
            return Ok(());
        };
        let key = size_key(&spec.prefix);
        self.call("acquire", |mut c| {
            let txn = etcd::Txn::new()
                .when([etcd::Compare::create_revision(
                    key.clone(),
                    etcd::CompareOp::Equal,
                    0,
                )])
                .and_then([etcd::TxnOp::put(key.clone(), limit.to_string(), None)]);
            async move { c.txn(txn).await }
        })
        .await?;
        Ok(())
    }

    /// Runs `txn`, which puts under a lease: `None` when etcd no longer has that lease.
    async fn txn_under_lease(
        &self,
        txn: &etcd::Txn,
        spec: &Spec<'_, '_>,
    ) -> Result<Option<etcd::TxnResponse>> {
        let owner = spec.request.owner;
        self.call("acquire", |mut c| {
            let txn = txn.clone();
            let in_flight = self.shared.in_flight.clone();
            // In a task of its own, to its end: the clean-up after a caller that went away
            // waits for it (see `release_abandoned`).
            let sent = async move {
                match c.txn(txn).await {
                    Err(error) if super::lease_gone(&error) => Ok(None),
                    other => other.map(Some),
                }
            };
            async move {
                in_flight
                    .run(owner, sent)
                    .await
                    .unwrap_or_else(|failed| Err(etcd::Error::InvalidArgs(failed)))
            }
        })
        .await
    }

    /// A keep-alive of `lease_id` when there is one: `Some(true)` when etcd renewed it.
    async fn keep_alive_opt(&self, lease_id: Option<i64>) -> Option<bool> {
        match lease_id {
            Some(id) => self.keep_alive(id).await.ok(),
            None => None,
        }
    }
}
