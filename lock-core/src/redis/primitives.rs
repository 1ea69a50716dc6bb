//! The fair lock, the read-write lock and the semaphore on Redis: leases granted from a
//! server-side FIFO queue, by one set of scripts (`lua/primitive_*.lua`) whose grant rule per
//! kind is the memory backend's.
//!
//! # Layout
//! Per primitive (see `primitive_keys.rs`): a sorted set of holders by lease expiry (each
//! lease its own entry, so a crashed reader or permit holder frees only its share), a hash of
//! each holder's fence, kind and permits, one fencing counter for every kind, the queue (a
//! sorted set by a server-side arrival sequence) and each queue entry's deadline. Expired
//! leases and stale entries are pruned by every script.
//!
//! # Waiting
//! A waiter's first attempt queues it (`<waiter id>|<owner token>|<lease ms>`); it is woken
//! by push through the backend's wake hub and re-checks on a capped, jittered timer. A
//! re-check keeps its place (and refreshes its entry's deadline, so entries of dead processes
//! go). Read-write and semaphore waiters are nudged to re-check: a release wakes the first
//! waiter, and a queued reader or permit request that is granted wakes the next. The fair lock
//! is handed over by the release itself (`wake_head` in `primitive_lib.lua`): the next waiter
//! wakes up holding it for the claim window, with the fence in the message, and the watchdog
//! extends it at once; a waiter that has gone costs the queue at most that window.

use std::sync::Arc;
use std::time::Duration;

use redis::Script;
use tokio::sync::Notify;
use tokio::time::{sleep_until, Instant};

use super::primitive_keys::{kind_code, Family, PrimitiveKeys};
use super::script_call::ScriptCall;
use super::shard_wakeups::ChannelHold;
use super::{millis, protocol, scripts, Held, RedisBackend, RedisLease, FENCE_RETENTION};
use crate::backend::{AcquireRequest, Grant, HolderLabel, LeaseKind};
use crate::{FencingToken, LockError, LockKey, LossSignal, OwnerToken, Result};

/// A waiter's place in a primitive's queue. Leaving without a grant removes the entry, and
/// releases a fair lock handed over too late, waking the next waiter.
struct Waiting<'a> {
    backend: &'a RedisBackend,
    keys: &'a PrimitiveKeys,
    seq: u64,
    entry: String,
    owner: String,
    notify: Arc<Notify>,
    granted: bool,
    /// On a Redis Cluster, the waiter's wake channel, subscribed before it queued.
    _channel: Option<ChannelHold>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.backend.shared.hub.unregister(self.seq);
        if self.granted {
            return; // the acquire script removed the queue entry
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (backend, keys) = (self.backend.clone(), self.keys.clone());
        let (owner, entry) = (
            std::mem::take(&mut self.owner),
            std::mem::take(&mut self.entry),
        );
        runtime.spawn(async move {
            if let Err(error) = backend.abandon(&keys, &owner, &entry).await {
                tracing::debug!(%error, "leaving a queue failed; the entry goes at its deadline");
            }
        });
    }
}

impl RedisBackend {
    /// How long a queue entry lives without a re-check by its waiter.
    fn queue_entry_lifetime(&self) -> Duration {
        (self.shared.config.poll_cap * 5).max(Duration::from_secs(10))
    }

    /// A call of a primitive script with its keys and common arguments.
    pub(super) fn primitive_invocation(
        &self,
        script: &'static Script,
        keys: &PrimitiveKeys,
    ) -> ScriptCall {
        let all = keys.all();
        let mut invocation = ScriptCall::new(script, all.len());
        for key in all {
            invocation.key(key);
        }
        invocation
            .arg(keys.family.name())
            .arg(&self.shared.hub.route)
            .arg(millis(self.shared.config.claim_window))
            .arg(millis(FENCE_RETENTION));
        invocation
    }

    pub(super) fn primitive_keys(&self, family: Family, key: &LockKey) -> PrimitiveKeys {
        PrimitiveKeys::new(&self.shared.prefix, family, key.full())
    }

    /// Acquires a lease of a fair lock, read-write lock or semaphore.
    pub(super) async fn acquire_primitive(
        &self,
        family: Family,
        request: AcquireRequest<'_>,
    ) -> Result<Option<Grant<RedisLease>>> {
        let keys = self.primitive_keys(family, request.key);
        let owner = request.owner.to_hex();
        let (code, count) = kind_code(request.kind);
        let limit = match request.kind {
            LeaseKind::Permits { limit, .. } => limit,
            _ => 1,
        };
        let downgrade = request
            .downgrade_from
            .map(|writer| writer.to_hex())
            .unwrap_or_default();
        // The claim window this backend's releases give (a handoff's message says its own).
        let claim = self.shared.config.claim_window.min(request.ttl);
        let lifetime = millis(self.queue_entry_lifetime());
        let mut cap = self.shared.config.poll_cap;
        if family == Family::Fair {
            // A handed-over lock is trusted from this waiter's last command: keep it recent.
            cap = cap.min(claim / 3);
        }
        let mut waiting: Option<Waiting<'_>> = None;
        // As the lock's (`acquire.rs`): on a Redis Cluster the first attempt goes unqueued.
        let mut tried_unqueued = !self.subscribes_per_key();
        loop {
            let queue = request.deadline.is_none_or(|d| Instant::now() < d);
            if queue && waiting.is_none() && tried_unqueued {
                let channel = self.wake_channel(&keys.holders).await?;
                let label = request.label.map_or("", HolderLabel::as_stored);
                let (seq, id, notify) = self.shared.hub.register(label);
                waiting = Some(Waiting {
                    backend: self,
                    keys: &keys,
                    seq,
                    entry: format!("{id}|{owner}|{}", millis(request.ttl)),
                    owner: owner.clone(),
                    notify,
                    granted: false,
                    _channel: channel,
                });
            }
            let entry = waiting.as_ref().map_or("", |w| w.entry.as_str());
            let mut invocation = self.primitive_invocation(&scripts::PRIMITIVE_ACQUIRE, &keys);
            invocation
                .arg(&owner)
                .arg(millis(request.ttl))
                .arg(entry)
                .arg(code)
                .arg(count)
                .arg(limit)
                .arg(&downgrade)
                .arg(lifetime)
                .arg(request.participant.unwrap_or_default())
                .arg(format!(
                    "{}|{}",
                    self.shared.hub.client_id,
                    request.label.map_or("", HolderLabel::as_stored)
                ));
            let sent = Instant::now();
            let ((status, value), short): ((i64, i64), _) = self.run_grant(&invocation).await?;
            match status {
                1 => {
                    let fence = u64::try_from(value)
                        .map_err(|_| protocol(format!("negative fencing token {value}")))?;
                    if let Some(short) = short {
                        // Not acknowledged: given back, and the waiter leaves the queue.
                        if let Err(error) = self.release_primitive(&keys, &owner, fence).await {
                            tracing::debug!(%error, "giving back an unacknowledged grant failed; its lease runs out");
                        }
                        return Err(short);
                    }
                    if let Some(waiting) = waiting.as_mut() {
                        waiting.granted = true;
                    }
                    return Ok(Some(self.primitive_grant(
                        &keys,
                        &owner,
                        request.kind,
                        FencingToken::new(fence),
                        sent,
                    )));
                }
                -1 => {
                    return Err(LockError::InvalidInput {
                        what: "permit count",
                        reason: format!("{count} is more than the semaphore's {value} permits"),
                    })
                }
                0 => {}
                other => return Err(protocol(format!("acquire script answered {other}"))),
            }
            if !tried_unqueued {
                tried_unqueued = true;
                if queue && !request.deadline_passed() {
                    continue; // subscribe, then queue at once
                }
            }
            let Some(waiting) = waiting.as_mut().filter(|_| !request.deadline_passed()) else {
                return Ok(None);
            };
            let poll = u64::try_from(value)
                .ok()
                .filter(|&ms| ms > 0)
                .map_or(cap, |ms| Duration::from_millis(ms).min(cap));
            let mut recheck_at = Instant::now() + crate::jitter::jitter(poll);
            if let Some(deadline) = request.deadline {
                recheck_at = recheck_at.min(deadline);
            }
            tokio::select! {
                () = waiting.notify.notified() => {}
                () = sleep_until(recheck_at) => {}
            }
            if let Some((fence, claim)) = self.shared.hub.take_handoff(waiting.seq) {
                // Handed over after our last command ran: the lease counts from its sending.
                waiting.granted = true;
                let grant = self.primitive_grant(
                    &keys,
                    &owner,
                    request.kind,
                    FencingToken::new(fence),
                    sent,
                );
                return Ok(Some(grant.with_ttl(claim.min(request.ttl))));
            }
        }
    }

    fn primitive_grant(
        &self,
        keys: &PrimitiveKeys,
        owner: &str,
        kind: LeaseKind,
        fence: FencingToken,
        sent: Instant,
    ) -> Grant<RedisLease> {
        let (code, count) = kind_code(kind);
        let record = format!("{} {code} {count}", fence.get());
        let loss = LossSignal::new();
        let entered = self
            .shared
            .leases
            .enter_field(&keys.leases, owner, &record, loss.clone());
        let lease = RedisLease {
            held: Held::Primitive {
                keys: keys.clone(),
                owner: owner.to_owned(),
                fence: fence.get(),
            },
            _entered: entered,
        };
        Grant::new(lease, fence, sent).with_loss(loss)
    }

    pub(super) async fn renew_primitive(
        &self,
        keys: &PrimitiveKeys,
        owner: &str,
        fence: u64,
        ttl: Option<Duration>,
    ) -> Result<bool> {
        let mut invocation = self.primitive_invocation(&scripts::PRIMITIVE_RENEW, keys);
        invocation.arg(owner).arg(fence).arg(ttl.map_or(0, millis));
        let held: i64 = self.run("renew", &invocation).await?;
        Ok(held == 1)
    }

    pub(super) async fn release_primitive(
        &self,
        keys: &PrimitiveKeys,
        owner: &str,
        fence: u64,
    ) -> Result<bool> {
        let mut invocation = self.primitive_invocation(&scripts::PRIMITIVE_RELEASE, keys);
        invocation.arg(owner).arg(fence);
        let released: i64 = self.run("release", &invocation).await?;
        Ok(released == 1)
    }

    /// Removes `owner`'s queue entry (`entry`, or any of its entries when empty) and lease.
    async fn abandon(&self, keys: &PrimitiveKeys, owner: &str, entry: &str) -> Result<bool> {
        let mut invocation = self.primitive_invocation(&scripts::PRIMITIVE_ABANDON, keys);
        invocation.arg(owner).arg(entry);
        let found: i64 = self.run("release", &invocation).await?;
        Ok(found == 1)
    }

    pub(super) async fn release_abandoned_primitive(
        &self,
        family: Family,
        key: &LockKey,
        owner: OwnerToken,
    ) -> Result<bool> {
        let keys = self.primitive_keys(family, key);
        self.abandon(&keys, &owner.to_hex(), "").await
    }

    /// Waiters queued, the semaphore's size (when set) and the permits held.
    pub(super) async fn primitive_info(
        &self,
        family: Family,
        key: &LockKey,
    ) -> Result<(usize, Option<u32>, u32)> {
        let keys = self.primitive_keys(family, key);
        let invocation = self.primitive_invocation(&scripts::PRIMITIVE_INFO, &keys);
        let (queued, size, held): (u64, i64, u64) = self.run("inspect", &invocation).await?;
        Ok((
            usize::try_from(queued).unwrap_or(usize::MAX),
            u32::try_from(size).ok(),
            u32::try_from(held).unwrap_or(u32::MAX),
        ))
    }
}
