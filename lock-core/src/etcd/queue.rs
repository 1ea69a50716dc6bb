//! The waiting line of one primitive: our entry in it, where it stands by
//! [`queue_rule::admit`](crate::backend::queue_rule::admit), waiting on the shared watch
//! stream, and claiming the grant.
//!
//! An entry waits under the backend's session lease. When the rule admits it, it *claims* (see
//! `claim.rs`): one transaction, guarded by the entry's create revision (its place and fencing
//! token, which a re-put keeps), puts it again under a per-lock lease with the holding mark,
//! and reads the queue ahead of it to confirm the admission at that revision. A request that
//! finds the queue empty puts its entry holding at once (one transaction, a compare over the
//! range).
//!
//! A waiter watches what the rule says it waits for: the deletion of one entry (the entry
//! just ahead, or the last writer ahead) or any change in the range (a semaphore). It watches
//! from *now* and looks at the queue once etcd has created the watch (see `watch.rs` for why),
//! and looks again on a capped, jittered timer in case an event is lost.
//!
//! Counting a queue's waiters ([`QueueBackend`]) reads its range: the entries not marked
//! holding.

use std::time::Duration;

use tokio::time::{sleep_until, Instant};

use super::claim::{Claim, Enqueued};
use super::leases::LockLease;
use super::look::Spec;
use super::watch::{Fired, Target, Watch};
use super::EtcdBackend;
use crate::backend::queue_rule::Admission;
use crate::backend::{LeaseKind, QueueBackend};
use crate::{LockKey, Result};

/// Our entry while it waits: dropping this (a cancelled or failed acquire) deletes it in a
/// spawned task, so the waiter behind us is not held up by an orphan.
pub(super) struct Queued {
    backend: EtcdBackend,
    pub(super) key: String,
    pub(super) create_revision: i64,
    armed: bool,
}

impl Queued {
    /// Our entry `key`, put at `create_revision`.
    pub(super) fn new(backend: EtcdBackend, key: String, create_revision: i64) -> Self {
        Self {
            backend,
            key,
            create_revision,
            armed: true,
        }
    }

    /// The entry now holds under a lease of its own: keep it.
    pub(super) fn keep(mut self) -> String {
        self.armed = false;
        std::mem::take(&mut self.key)
    }

    /// Deletes the entry and waits for the answer (a try that failed: the next try must not
    /// find the stale entry ahead of it); if etcd cannot be reached, goes on trying in the
    /// background (see [`EtcdBackend::delete_entry`]).
    pub(super) async fn remove(mut self) {
        self.armed = false;
        let key = std::mem::take(&mut self.key);
        if self.backend.try_delete(&key).await.is_err() {
            let backend = self.backend.clone();
            tokio::spawn(async move { backend.delete_entry(key).await });
        }
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        if self.armed {
            let (backend, key) = (self.backend.clone(), std::mem::take(&mut self.key));
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move { backend.delete_entry(key).await });
            }
        }
    }
}

/// How many entry puts one backend has in flight at most (see [`EtcdBackend::take_turn`]).
pub(super) const ENQUEUES_IN_FLIGHT: usize = 32;

/// How many acquisitions of this backend are under way, per queue prefix. While others of ours
/// are, a new entry is bound to wait behind them, so it is put waiting without first granting
/// a per-lock lease for the empty-queue fast path: that grant, one Raft write per waiter,
/// doubled what a crowd arriving at once cost etcd (`cargo xtask chaos --scenario 10`).
#[derive(Default)]
pub(super) struct LocalAcquires(std::sync::Mutex<std::collections::HashMap<String, usize>>);

/// One acquisition under way (counted until dropped).
pub(super) struct Acquiring<'a> {
    local: &'a LocalAcquires,
    prefix: String,
    /// The other acquisitions of this backend under way for the same queue when this began.
    pub(super) others: usize,
}

impl LocalAcquires {
    /// Counts an acquisition on `prefix` until the returned value is dropped.
    pub(super) fn enter(&self, prefix: &str) -> Acquiring<'_> {
        let mut counts = crate::sync::lock(&self.0);
        let count = counts.entry(prefix.to_owned()).or_insert(0);
        *count += 1;
        Acquiring {
            local: self,
            prefix: prefix.to_owned(),
            others: *count - 1,
        }
    }
}

impl Drop for Acquiring<'_> {
    fn drop(&mut self) {
        let mut counts = crate::sync::lock(&self.local.0);
        if let Some(count) = counts.get_mut(&self.prefix) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.prefix);
            }
        }
    }
}

/// What waiting came to.
pub(super) enum Turn {
    /// Our entry holds under `lease`, trusted from `sent`, as of `revision`.
    Holds {
        queued: Queued,
        lease: LockLease,
        sent: Instant,
        revision: i64,
    },
    /// Still not admitted when the deadline passed.
    Busy(Queued),
    /// Our entry is gone (its session lease ran out, or it was deleted): queue again.
    Lost,
}

impl EtcdBackend {
    /// Puts our entry and waits until it holds, the deadline passes, or it is gone.
    pub(super) async fn take_turn(&self, spec: &Spec<'_, '_>) -> Result<Turn> {
        // While other acquisitions of ours are under way for this queue, ours is bound to wait
        // behind them: no empty-queue fast path.
        let acquiring = self.shared.acquiring.enter(&spec.prefix);
        // At most `ENQUEUES_IN_FLIGHT` puts of this backend at a time: a crowd arriving at once
        // otherwise queues a thousand writes in etcd, and the last ones outlive the response
        // timeout (`cargo xtask chaos --scenario 10`); the rest wait here, where no timeout runs.
        let enqueued = {
            let _turn = self.shared.enqueues.acquire().await.map_err(|_| {
                crate::LockError::unavailable(super::BACKEND, "the backend is shutting down")
            })?;
            self.enqueue(spec, acquiring.others == 0).await?
        };
        let (queued, mut look) = match enqueued {
            Enqueued::Holds(turn) => return Ok(turn),
            Enqueued::Waits(queued, look) => (queued, look),
        };
        // The watch in place, and the entry (or range) it watches.
        let mut watching: Option<(Vec<u8>, Watch)> = None;
        loop {
            if look.size.is_none() && spec.is_semaphore() {
                self.create_size(spec).await?;
                look = match self.look(spec, &queued).await? {
                    Some(look) => look,
                    None => return Ok(Turn::Lost),
                };
                continue;
            }
            let admission = match look.admission(spec) {
                Ok(admission) => admission,
                Err(error) => {
                    queued.remove().await;
                    return Err(error);
                }
            };
            let next = match admission {
                Admission::Granted => self.claim(spec, &queued).await?,
                _ if spec.request.deadline_passed() => return Ok(Turn::Busy(queued)),
                _ => {
                    let (target, precise) = match admission {
                        Admission::WaitFor(index) if index < look.entries.len() => {
                            (look.entries[index].key.clone(), true)
                        }
                        _ => (spec.prefix.clone().into_bytes(), false),
                    };
                    let mut recheck_at =
                        Instant::now() + crate::jitter::jitter(self.shared.config.poll_cap);
                    if let Some(deadline) = spec.request.deadline {
                        recheck_at = recheck_at.min(deadline);
                    }
                    let watch = match watching.take() {
                        Some((watched, watch)) if watched == target => watch,
                        _ => {
                            // A new watch, from now: once etcd has it, look again, so what
                            // happened since the last look is read and what happens next is
                            // an event.
                            let kind = Target::InQueue {
                                range: spec.prefix.clone().into_bytes(),
                                deleted: precise.then(|| target.clone()),
                            };
                            let mut watch = self.shared.watches.watch(kind, None);
                            let created = tokio::select! {
                                created = watch.created() => created,
                                () = sleep_until(recheck_at) => true,
                            };
                            if !created {
                                pause(recheck_at).await;
                            } else {
                                watching = Some((target, watch));
                            }
                            match self.look(spec, &queued).await? {
                                Some(again) => look = again,
                                None => return Ok(Turn::Lost),
                            }
                            continue;
                        }
                    };
                    let ahead = precise.then_some(target.as_slice());
                    self.wait(spec, &queued, watch, ahead, recheck_at).await?
                }
            };
            match next {
                Claim::Holds(lease, sent, revision) => {
                    return Ok(Turn::Holds {
                        queued,
                        lease,
                        sent,
                        revision,
                    })
                }
                Claim::Waits(again) => look = again,
                Claim::Gone => return Ok(Turn::Lost),
            }
        }
    }

    /// Waits for `watch` or the recheck timer, then claims (the exact entry we waited for,
    /// `ahead`, is gone: the claim confirms the admission at its own revision) or looks again.
    /// Waiting for one entry, the recheck timer (should an event be lost) checks that entry
    /// and our own, one request of two count-only reads, and waits on while both exist: a look at the whole queue
    /// on that timer made a crowd cost etcd O(waiters²) (500 waiters: timeouts and 640 ms
    /// handoffs, `cargo xtask chaos --scenario 10`).
    async fn wait(
        &self,
        spec: &Spec<'_, '_>,
        queued: &Queued,
        mut watch: Watch,
        ahead: Option<&[u8]>,
        mut recheck_at: Instant,
    ) -> Result<Claim> {
        let fired = loop {
            let fired = tokio::select! {
                fired = watch.fired() => Some(fired),
                () = sleep_until(recheck_at) => None,
            };
            match (fired, ahead) {
                (None, Some(ahead)) if !spec.request.deadline_passed() => {
                    let (ahead_there, ours_there) = self.both_exist(ahead, &queued.key).await?;
                    if !ours_there {
                        // Deleted behind our back (its session lease gone): the look finds
                        // it gone, and the caller queues again.
                        break None;
                    }
                    if !ahead_there {
                        break Some(Fired::Event);
                    }
                    recheck_at =
                        Instant::now() + crate::jitter::jitter(self.shared.config.poll_cap);
                    if let Some(deadline) = spec.request.deadline {
                        recheck_at = recheck_at.min(deadline);
                    }
                }
                (fired, _) => break fired,
            }
        };
        drop(watch);
        match fired {
            Some(Fired::Event) if ahead.is_some() => return self.claim(spec, queued).await,
            Some(Fired::Interrupted) => pause(recheck_at).await,
            _ => {}
        }
        Ok(match self.look(spec, queued).await? {
            Some(look) => Claim::Waits(look),
            None => Claim::Gone,
        })
    }

    /// Whether `ahead` and `ours` exist (two count-only reads in one request).
    async fn both_exist(&self, ahead: &[u8], ours: &str) -> Result<(bool, bool)> {
        let count_only = || Some(etcd_client::GetOptions::new().with_count_only());
        let txn = etcd_client::Txn::new().and_then([
            etcd_client::TxnOp::get(ahead.to_vec(), count_only()),
            etcd_client::TxnOp::get(ours, count_only()),
        ]);
        let reply = self
            .call("acquire", |mut c| {
                let txn = txn.clone();
                async move { c.txn(txn).await }
            })
            .await?;
        let counts: Vec<bool> = reply
            .op_responses()
            .into_iter()
            .map(|op| match op {
                etcd_client::TxnOpResponse::Get(get) => get.count() > 0,
                _ => false,
            })
            .collect();
        Ok((counts.first() == Some(&true), counts.get(1) == Some(&true)))
    }

    /// Keeps `lease_id` alive once: `false` when etcd no longer has it.
    pub(super) async fn keep_alive(&self, lease_id: i64) -> Result<bool> {
        self.call("renew", |mut c| async move {
            match c.lease_keep_alive(lease_id).await {
                Ok(_) => Ok(true),
                Err(error) if super::lease_gone(&error) => Ok(false),
                Err(error) => Err(error),
            }
        })
        .await
    }

    /// Deletes `key` (an entry of ours, by its owner token), logging failures.
    pub(super) async fn delete_quietly(&self, key: String) -> bool {
        match self.try_delete(&key).await {
            Ok(found) => found,
            Err(error) => {
                tracing::debug!(%error, "deleting an etcd queue entry failed");
                false
            }
        }
    }

    /// Deletes `key`; whether it was there.
    pub(super) async fn try_delete(&self, key: &str) -> Result<bool> {
        let deleted = self
            .call("release", |mut c| {
                let key = key.to_owned();
                async move { c.delete(key, None).await }
            })
            .await?;
        Ok(deleted.deleted() > 0)
    }

    /// Deletes our waiting entry `key`, trying again (every 50 ms, doubling up to 1 s) while
    /// etcd cannot be reached. The entry lives under the session lease: a delete given up
    /// while the server was away left an entry that the reconnected session kept alive,
    /// holding up the lock's queue for good (found by `cargo xtask chaos --scenario 12`, a
    /// client's only member killed and restarted). Stops once the delete goes through, the
    /// session lease is gone (the entry went with it), or three session TTLs have passed.
    pub(super) async fn delete_entry(&self, key: String) {
        let started = Instant::now();
        let mut pause = Duration::from_millis(50);
        loop {
            match self.try_delete(&key).await {
                Ok(_) => return,
                Err(error) => {
                    let session_gone = !self.shared.session.is_open().await;
                    if session_gone || started.elapsed() > self.shared.session.ttl() * 3 {
                        tracing::debug!(%error, "deleting an etcd queue entry failed; its session's end removes it");
                        return;
                    }
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }
}

impl QueueBackend for EtcdBackend {
    async fn queue_length(&self, key: &LockKey, kind: LeaseKind) -> Result<usize> {
        let listing = self.listing(key, kind).await?;
        Ok(listing.entries.iter().filter(|(_, holds)| !holds).count())
    }
}

/// A short pause before looking again after the watch stream failed, so a broken stream is
/// not a busy loop.
async fn pause(recheck_at: Instant) {
    sleep_until(recheck_at.min(Instant::now() + Duration::from_millis(50))).await;
}
