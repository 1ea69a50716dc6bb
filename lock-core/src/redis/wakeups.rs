//! Push wake-ups: one pub/sub subscription per backend, routed to the waiting tasks.
//!
//! Each [`RedisBackend`](super::RedisBackend) subscribes to its own channel
//! (`<prefix>:wake:<client id>`). A release pops the first waiter of the lock's queue and
//! publishes that waiter's id on its client's channel, so exactly one task in one process wakes.
//! A message for a waiter that has gone is passed on to the next waiter. When the subscription
//! drops, every local waiter is woken to re-check (messages may have been missed meanwhile) and
//! the subscription is re-established (`subscription.rs`: a short backoff, and while the
//! backend's breaker is open, only as its probe), after
//! which every held lease is re-checked at once (see `leases.rs`); waiters also re-check on a timer, so a lost
//! message costs at most one poll interval.
//!
//! The other primitives' messages carry a third line: a fair lock handed over by its release
//! (`f<fence> <claim ms>`: the waiter wakes up holding it, see `primitives.rs`), a nudge to re-check
//! (`w`), a latch that opened (`l`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{oneshot, Notify};
use tokio_util::sync::CancellationToken;

use super::keys::LockKeys;
use super::leases::LeaseBook;
use super::scripts;
use super::subscription::{self, Listener, PubSubSource};
use super::RedisConnection;
use crate::breaker::Breaker;
use crate::sync::lock;

/// The waiters of one backend, by sequence number.
pub(super) struct WakeHub {
    pub(super) client_id: String,
    pub(super) channel: String,
    pub(super) channel_prefix: String,
    /// What the scripts are told of the wake channels (see `lua/publish_wake.lua`): `P` and
    /// the channel prefix on one server (a channel per client), `S` and the prefix on a Redis
    /// Cluster (a sharded channel per client and key, see `shard_wakeups.rs`).
    pub(super) route: String,
    next_waiter: AtomicU64,
    waiters: Mutex<HashMap<u64, Arc<Notify>>>,
    /// Fair locks handed over to a waiter by the server: waiter sequence → (fence, claim ms).
    handoffs: Mutex<HashMap<u64, (u64, u64)>>,
    /// Publishes received, for the bench's round-trip accounting.
    pub(super) messages: AtomicU64,
}

impl WakeHub {
    /// The hub of client `client_id`, whose wake-ups go on sharded channels when `sharded`
    /// (a Redis Cluster).
    pub(super) fn new(prefix: &str, client_id: String, sharded: bool) -> Self {
        let channel_prefix = format!("{prefix}:wake:");
        Self {
            channel: format!("{channel_prefix}{client_id}"),
            route: format!("{}{channel_prefix}", if sharded { 'S' } else { 'P' }),
            channel_prefix,
            client_id,
            next_waiter: AtomicU64::new(1),
            waiters: Mutex::new(HashMap::new()),
            handoffs: Mutex::new(HashMap::new()),
            messages: AtomicU64::new(0),
        }
    }

    /// Registers a waiter labelled `label` (the stored form; `""` for none); its id goes into
    /// the queue.
    pub(super) fn register(&self, label: &str) -> (u64, String, Arc<Notify>) {
        let (seq, notify) = self.register_seq();
        (seq, self.waiter_id(seq, label), notify)
    }

    /// Registers a waiter without spelling out its id (see [`waiter_id`](Self::waiter_id)),
    /// for a caller that writes the id straight into a command.
    pub(super) fn register_seq(&self) -> (u64, Arc<Notify>) {
        let seq = self.next_waiter.fetch_add(1, Ordering::Relaxed);
        let notify = Arc::new(Notify::new());
        lock(&self.waiters).insert(seq, notify.clone());
        (seq, notify)
    }

    /// The id of waiter `seq`, as the queues hold it: `<client id>:<seq>`, or
    /// `<client id>:<label>:<seq>` with the waiter's label (its stored form, `:` written
    /// `%3A`) for the operator's view. The scripts read the client id up to the first `:`,
    /// the wake-up routing the sequence after the last.
    pub(super) fn waiter_id(&self, seq: u64, label: &str) -> String {
        self.waiter_id_fmt(seq, label).to_string()
    }

    /// [`waiter_id`](Self::waiter_id), to format into a command without a `String`.
    pub(super) fn waiter_id_fmt<'a>(
        &'a self,
        seq: u64,
        label: &'a str,
    ) -> impl std::fmt::Display + 'a {
        WaiterId {
            client: &self.client_id,
            label,
            seq,
        }
    }

    pub(super) fn unregister(&self, seq: u64) {
        lock(&self.waiters).remove(&seq);
        // After the waiter is gone, so that `deliver` cannot record a handoff behind us.
        lock(&self.handoffs).remove(&seq);
    }

    /// The fence of a fair lock the server handed to waiter `seq`, and how long the server
    /// holds it for that waiter (the claim window of the backend that released it), if it did.
    pub(super) fn take_handoff(&self, seq: u64) -> Option<(u64, std::time::Duration)> {
        lock(&self.handoffs)
            .remove(&seq)
            .map(|(fence, ms)| (fence, std::time::Duration::from_millis(ms)))
    }

    /// Routes one message; returns the lock key when its waiter is gone and the wake-up must be
    /// passed on (a lock's). Messages of the other primitives carry a third line:
    /// `f<fence> <claim ms>` for a fair lock handed over, `w` for a nudge to re-check, `l` for a latch that opened.
    /// Those are never passed on here: a waiter that leaves removes its own entry and wakes the
    /// next one itself, releasing a fair lock handed to it too late (`primitive_abandon.lua`).
    pub(super) fn deliver(&self, payload: &str) -> Option<String> {
        self.messages.fetch_add(1, Ordering::Relaxed);
        let mut lines = payload.splitn(3, '\n');
        let (waiter, lock_key, tag) = (lines.next()?, lines.next()?, lines.next());
        let seq: u64 = waiter.rsplit_once(':')?.1.parse().ok()?;
        let waiters = lock(&self.waiters);
        match waiters.get(&seq) {
            Some(notify) => {
                if let Some(handoff) = tag.and_then(parse_handoff) {
                    lock(&self.handoffs).insert(seq, handoff);
                }
                notify.notify_one();
                None
            }
            None => tag.is_none().then(|| lock_key.to_owned()),
        }
    }

    pub(super) fn wake_all(&self) {
        for notify in lock(&self.waiters).values() {
            notify.notify_one();
        }
    }
}

/// `f<fence> <claim ms>`: a fair lock handed over.
fn parse_handoff(tag: &str) -> Option<(u64, u64)> {
    let (fence, claim) = tag.strip_prefix('f')?.split_once(' ')?;
    Some((fence.parse().ok()?, claim.parse().ok()?))
}

/// Runs the wake-up subscription until `stop`; reports on `ready` once it is first up.
pub(super) async fn run(
    source: PubSubSource,
    hub: Arc<WakeHub>,
    leases: Arc<LeaseBook>,
    mut connection: RedisConnection,
    breaker: Breaker,
    stop: CancellationToken,
    ready: oneshot::Sender<redis::RedisResult<()>>,
) {
    let run_id = server_run_id(&mut connection).await;
    let channel = hub.channel.clone();
    let listener = WakeListener {
        hub,
        leases,
        connection,
        run_id,
    };
    subscription::run(source, channel, breaker, stop, ready, listener).await;
}

/// Routes wake-ups to waiters, and catches up after a drop.
struct WakeListener {
    hub: Arc<WakeHub>,
    leases: Arc<LeaseBook>,
    connection: RedisConnection,
    run_id: Option<String>,
}

impl Listener for WakeListener {
    async fn message(&mut self, payload: &[u8]) {
        let Ok(payload) = std::str::from_utf8(payload) else {
            return;
        };
        if self.leases.revoke(payload) {
            return;
        }
        if let Some(lock_key) = self.hub.deliver(payload) {
            pass_on(&mut self.connection, &self.hub, lock_key).await;
        }
    }

    async fn subscribed(&mut self, first: bool) {
        // The first subscription is in place before the backend is handed out, so no waiter
        // predates it and nothing was missed: waking them all would only send a task that
        // registered meanwhile (its backend just connected) an extra look.
        if first {
            return;
        }
        reconnected(&self.leases, &mut self.connection, &mut self.run_id).await;
        // Messages published while we were away are lost: have every waiter look again.
        self.hub.wake_all();
    }

    fn dropped(&mut self) {
        self.hub.wake_all();
    }
}

/// A waiter was woken after it left: wake the next one if the lock is still free.
pub(super) async fn pass_on(connection: &mut RedisConnection, hub: &WakeHub, lock_key: String) {
    let waiters = LockKeys::waiters_of(&lock_key);
    let result: redis::RedisResult<i64> = scripts::WAKE
        .key(&lock_key)
        .key(&waiters)
        .arg(&hub.route)
        .invoke_async(connection)
        .await;
    if let Err(error) = result {
        tracing::debug!(%error, "passing a wake-up on failed; the next waiter's poll covers it");
    }
}

/// The subscription is back after a drop: the server may have restarted or failed over and
/// lost lock keys, so every held lease is checked now rather than at its next renewal.
pub(super) async fn reconnected(
    leases: &LeaseBook,
    connection: &mut RedisConnection,
    run_id: &mut Option<String>,
) {
    let now = server_run_id(connection).await;
    // A restart matters through the leases it lost, reported below (and each lease's own
    // "lease lost"); the outage itself is the breaker's to report.
    let restarted = now.is_some() && run_id.is_some() && now != *run_id;
    if restarted {
        tracing::debug!(before = ?run_id, after = ?now, "the Redis server restarted (run_id changed)");
    }
    if now.is_some() {
        *run_id = now;
    }
    match leases.recheck(connection).await {
        Ok(0) => {}
        Ok(lost) => tracing::warn!(
            lost,
            restarted,
            "leases gone after the Redis connection came back"
        ),
        Err(error) => {
            tracing::debug!(%error, "re-checking leases after a reconnect failed; renewals will tell")
        }
    }
}

/// The server's `run_id` (new at every start), if `INFO server` answers.
pub(super) async fn server_run_id(connection: &mut RedisConnection) -> Option<String> {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(connection)
        .await
        .ok()?;
    info.lines()
        .find_map(|line| line.strip_prefix("run_id:"))
        .map(|id| id.trim().to_owned())
}

/// A waiter id being formatted: `<client id>:<seq>`.
struct WaiterId<'a> {
    client: &'a str,
    label: &'a str,
    seq: u64,
}

impl std::fmt::Display for WaiterId<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.label.is_empty() {
            return write!(f, "{}:{}", self.client, self.seq);
        }
        write!(f, "{}:", self.client)?;
        for part in self.label.split(':').enumerate() {
            if part.0 > 0 {
                f.write_str("%3A")?;
            }
            f.write_str(part.1)?;
        }
        write!(f, ":{}", self.seq)
    }
}

/// The label a waiter id carries (see [`WakeHub::waiter_id`]), in its stored form.
pub(super) fn label_of_waiter(id: &str) -> Option<String> {
    let (_, rest) = id.split_once(':')?;
    let (label, _seq) = rest.rsplit_once(':')?;
    (!label.is_empty()).then(|| label.replace("%3A", ":"))
}
