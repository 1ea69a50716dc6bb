//! Granting, renewing and releasing leases on Redis: the [`LockBackend`] side of
//! [`RedisBackend`]. The lock is one key and the `acquire.lua` family of scripts; the other
//! primitives go to `primitives.rs`.

use std::time::Duration;

use tokio::time::{sleep_until, Instant};

use super::batch::Kind;
use super::keys::LockKeys;
use super::primitive_keys::Family;
use super::queue::Waiting;
use super::script_call::ScriptCall;
use super::{millis, protocol, scripts, Held, RedisBackend, RedisLease, BACKEND, FENCE_RETENTION};
use crate::backend::{
    Abandoned, AcquireRequest, Capabilities, Grant, HolderLabel, LockBackend, OptionalTraits,
};
use crate::breaker::Breaker;
use crate::{FencingToken, LossSignal, OwnerToken, Result};

impl RedisBackend {
    /// The grant of a lock's lease that a script set under `owner` with `fence`, sent at
    /// `sent`: entered in the lease book, with the loss signal the book fires.
    pub(super) fn lock_grant(
        &self,
        keys: LockKeys,
        owner: OwnerToken,
        fence: FencingToken,
        sent: Instant,
    ) -> Grant<RedisLease> {
        let value = format!("{}:{}", owner.hex(), fence.get());
        let loss = LossSignal::new();
        let lease = RedisLease {
            _entered: self.shared.leases.enter(&keys.lock, &value, loss.clone()),
            held: Held::Lock { keys, value },
        };
        Grant::new(lease, fence, sent).with_loss(loss)
    }

    /// One acquire attempt: `Ok(Ok(fence))` when granted, `Ok(Err(pttl))` when busy.
    /// `waiter` is the sequence number of this acquisition's waiter registration, if it queues.
    pub(super) async fn attempt(
        &self,
        keys: &LockKeys,
        request: &AcquireRequest<'_>,
        waiter: Option<u64>,
        queued_before: bool,
    ) -> Result<std::result::Result<FencingToken, Option<Duration>>> {
        let (owner, ttl) = (request.owner, request.ttl);
        let fence_retention = request.fence_retention.unwrap_or(FENCE_RETENTION);
        let queue_lifetime = (ttl * 2).max(Duration::from_secs(60));
        let mut call = ScriptCall::new(&scripts::ACQUIRE, 3);
        call.key(&*keys.lock)
            .key_from_parts(&keys.fence())
            .key_from_parts(&keys.waiters())
            .arg_fmt(owner.hex())
            .arg(millis(ttl));
        match waiter {
            Some(seq) => call.arg_fmt(
                self.shared
                    .hub
                    .waiter_id_fmt(seq, request.label.map_or("", HolderLabel::as_stored)),
            ),
            None => call.arg(""),
        };
        call.arg(if queued_before { "1" } else { "0" })
            .arg(millis(queue_lifetime))
            .arg(millis(fence_retention))
            .arg_fmt(self.holder_record(request.label));
        let ((granted, value), short): ((i64, i64), _) =
            if self.shared.config.acknowledgement.is_on() {
                self.run_grant(&call).await?
            } else {
                (
                    self.run_batched(Kind::Acquire, "acquire", call).await?,
                    None,
                )
            };
        match granted {
            1 => {
                let fence = u64::try_from(value)
                    .map_err(|_| protocol(format!("negative fencing token {value}")))?;
                if let Some(short) = short {
                    self.give_back(keys, &format!("{}:{fence}", owner.hex()))
                        .await;
                    return Err(short);
                }
                Ok(Ok(FencingToken::new(fence)))
            }
            0 => Ok(Err(u64::try_from(value).ok().map(Duration::from_millis))),
            other => Err(protocol(format!("acquire script answered {other}"))),
        }
    }
}

impl RedisBackend {
    /// The holder record the lock's value carries after `<owner>:<fence>|` (`acquire.lua`'s
    /// `ARGV[7]`): `<client id>|<unix ms now>|<label>`. The client id is where a forced release pushes
    /// the revocation; the time is this client's clock, for people to read.
    pub(super) fn holder_record<'a>(
        &'a self,
        label: Option<&'a HolderLabel>,
    ) -> impl std::fmt::Display + 'a {
        HolderRecord {
            client: &self.shared.hub.client_id,
            label: label.map_or("", HolderLabel::as_stored),
        }
    }

    /// Releases a lock granted as `value` (`<owner>:<fence>`) that the caller will not get:
    /// its grant was not acknowledged by the replicas asked for.
    async fn give_back(&self, keys: &LockKeys, value: &str) {
        let mut call = ScriptCall::new(&scripts::RELEASE, 2);
        call.key(&*keys.lock)
            .key_from_parts(&keys.waiters())
            .arg(value)
            .arg(&self.shared.hub.route);
        if let Err(error) = self.run::<i64>("release", &call).await {
            tracing::debug!(%error, "giving back an unacknowledged grant failed; its lease runs out");
        }
    }
}

impl LockBackend for RedisBackend {
    type Lease = RedisLease;

    fn capabilities(&self) -> Capabilities {
        Capabilities::full(BACKEND)
    }

    async fn acquire(&self, request: AcquireRequest<'_>) -> Result<Option<Grant<RedisLease>>> {
        if let Some(family) = Family::of(request.kind) {
            return self.acquire_primitive(family, request).await;
        }
        let keys = LockKeys::new(&self.shared.prefix, request.key.full());
        let mut waiting: Option<Waiting<'_>> = None;
        let mut queued_before = false;
        // On a Redis Cluster a waiter subscribes to its wake channel before it queues, so the
        // first attempt goes without queuing: uncontended, an acquire stays one script.
        let mut tried_unqueued = !self.subscribes_per_key();
        loop {
            let queue = request.deadline.is_none_or(|d| Instant::now() < d);
            if queue && waiting.is_none() && tried_unqueued {
                let channel = self.wake_channel(&keys.lock).await?;
                let (seq, notify) = self.shared.hub.register_seq();
                waiting = Some(Waiting {
                    backend: self,
                    keys: keys.clone(),
                    seq,
                    notify,
                    granted: false,
                    label: request
                        .label
                        .map_or(String::new(), |l| l.as_stored().to_owned()),
                    _channel: channel,
                });
            }
            let waiter = waiting.as_ref().map(|w| w.seq);
            let sent = Instant::now();
            match self.attempt(&keys, &request, waiter, queued_before).await? {
                Ok(fence) => {
                    if let Some(mut waiting) = waiting.take() {
                        waiting.granted = true;
                    }
                    return Ok(Some(self.lock_grant(keys, request.owner, fence, sent)));
                }
                Err(remaining) => {
                    queued_before |= waiter.is_some();
                    if !tried_unqueued {
                        tried_unqueued = true;
                        if queue && !request.deadline_passed() {
                            continue; // subscribe, then queue at once
                        }
                    }
                    let Some(waiting) = waiting.as_ref().filter(|_| !request.deadline_passed())
                    else {
                        return Ok(None);
                    };
                    let remaining = remaining.filter(|r| !r.is_zero());
                    let poll = remaining.map_or(Duration::from_millis(5), |r| {
                        r.min(self.shared.config.poll_cap)
                    });
                    // Jittered, but never past the holder's lease: a holder that died frees
                    // the key when its lease runs out, and the waiter looks then (as the SQL
                    // backends' waiters do).
                    let mut pause = crate::jitter::jitter(poll);
                    if let Some(left) = remaining {
                        pause = pause.min(left + Duration::from_millis(1));
                    }
                    let mut recheck_at = Instant::now() + pause;
                    if let Some(deadline) = request.deadline {
                        recheck_at = recheck_at.min(deadline);
                    }
                    tokio::select! {
                        () = waiting.notify.notified() => {}
                        () = sleep_until(recheck_at) => {}
                    }
                }
            }
        }
    }

    async fn renew(&self, lease: &RedisLease, ttl: Option<Duration>) -> Result<bool> {
        let (keys, value) = match &lease.held {
            Held::Lock { keys, value } => (keys, value),
            Held::Primitive { keys, owner, fence } => {
                return self.renew_primitive(keys, owner, *fence, ttl).await
            }
        };
        let mut call = ScriptCall::new(&scripts::RENEW, 1);
        call.key(&*keys.lock).arg(value).arg(ttl.map_or(0, millis));
        let held: i64 = self.run_batched(Kind::Renew, "renew", call).await?;
        Ok(held == 1)
    }

    async fn keep_fence(&self, lease: &RedisLease, at_least: Duration) -> Result<()> {
        // A primitive's counter is kept for FENCE_RETENTION after each grant.
        let Held::Lock { keys, .. } = &lease.held else {
            return Ok(());
        };
        let mut call = ScriptCall::new(&scripts::KEEP_FENCE, 1);
        call.key_from_parts(&keys.fence()).arg(millis(at_least));
        let _: i64 = self.run("keep fence", &call).await?;
        Ok(())
    }

    async fn release(&self, lease: &RedisLease) -> Result<bool> {
        let (keys, value) = match &lease.held {
            Held::Lock { keys, value } => (keys, value),
            Held::Primitive { keys, owner, fence } => {
                return self.release_primitive(keys, owner, *fence).await
            }
        };
        let mut call = ScriptCall::new(&scripts::RELEASE, 2);
        call.key(&*keys.lock)
            .key_from_parts(&keys.waiters())
            .arg(value)
            .arg(&self.shared.hub.route);
        let released: i64 = self.run_batched(Kind::Release, "release", call).await?;
        Ok(released == 1)
    }

    /// Runs on the same multiplexed connection as the abandoned acquisition's commands, so
    /// Redis executes it after any of them that was already sent.
    async fn release_abandoned(&self, abandoned: &Abandoned) -> Result<bool> {
        if let Some(family) = Family::of(abandoned.kind) {
            return self
                .release_abandoned_primitive(family, &abandoned.key, abandoned.owner)
                .await;
        }
        let keys = LockKeys::new(&self.shared.prefix, abandoned.key.full());
        let mut call = ScriptCall::new(&scripts::RELEASE_ABANDONED, 2);
        call.key(&*keys.lock)
            .key_from_parts(&keys.waiters())
            .arg_fmt(abandoned.owner.hex())
            .arg(&self.shared.hub.route);
        let released: i64 = self.run("release", &call).await?;
        Ok(released == 1)
    }

    fn breaker(&self) -> Option<&Breaker> {
        Some(&self.shared.breaker)
    }

    fn optional_traits(&self) -> OptionalTraits<'_> {
        OptionalTraits::all(self).with_operator(self)
    }
}

/// `acquire.lua`'s `ARGV[7]`, written straight into the command.
struct HolderRecord<'a> {
    client: &'a str,
    label: &'a str,
}

impl std::fmt::Display for HolderRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        write!(f, "{}|{now}|{}", self.client, self.label)
    }
}
