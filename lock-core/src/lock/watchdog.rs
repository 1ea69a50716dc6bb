//! The watchdog: keeps leases alive (or, for fixed leases, keeps checking them) and fires the
//! lost signal the moment a lease can no longer be confirmed.
//!
//! Every `ttl / 3` a lease is renewed (watchdog mode) or its ownership checked (fixed mode). A
//! renewal that fails is retried with a short backoff while the lease still has time. The lost
//! signal fires when the backend says another owner holds the key, when the backend pushes a
//! loss, or when the trusted validity (`sent_at + ttl − drift`, on the monotonic clock) ends
//! without a confirmed renewal: before the server could hand the key to someone else, not after.
//!
//! One driver task per client sleeps until the earliest due lease, so taking a lock spawns
//! nothing and wakes no other thread: a lease only costs a queue entry until its first renewal
//! is due (10 s for the default lease), and releasing it removes the entry. Renewals themselves
//! run as their own tasks, so one slow backend call never delays another lease's expiry.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::{sleep_until, Instant};

use crate::lease::{renew_interval, valid_until};
use crate::lock::held::HeldLease;
use crate::metrics;
use crate::sync::lock;

/// The pause between two renewal attempts after a failure: short enough to get several tries
/// into the lease's last third, never longer than a second.
fn retry_backoff(ttl: Duration) -> Duration {
    (ttl / 15).clamp(Duration::from_millis(5), Duration::from_secs(1))
}

/// The leases of one client, by when each next needs attention.
#[derive(Default)]
pub(crate) struct Watchdog {
    queue: Mutex<Queue>,
    wake: Notify,
    driver: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Default)]
struct Queue {
    due: BTreeMap<(Instant, u64), Weak<HeldLease>>,
    /// When the driver will next wake by itself (`None`: only when notified).
    target: Option<Instant>,
    closed: bool,
}

impl Watchdog {
    /// Starts watching a freshly granted lease.
    pub(crate) fn watch(self: &Arc<Self>, lease: &Arc<HeldLease>) {
        self.ensure_driver();
        let at = {
            let times = lock(&lease.times);
            times.next_attempt.min(times.valid_until)
        };
        self.schedule(lease, at);
    }

    /// Stops watching (release, abandon): removes the entry, wakes nobody.
    pub(crate) fn forget(&self, lease: &HeldLease) {
        let slot = lock(&lease.times).slot.take();
        if let Some(slot) = slot {
            lock(&self.queue).due.remove(&slot);
        }
    }

    /// Re-plans a lease whose validity changed by hand (extend).
    pub(crate) fn replan(self: &Arc<Self>, lease: &Arc<HeldLease>) {
        let at = {
            let times = lock(&lease.times);
            if times.renewing {
                times.valid_until
            } else {
                times.next_attempt.min(times.valid_until)
            }
        };
        self.schedule(lease, at);
    }

    /// Ends the driver (the client is gone).
    pub(crate) fn close(&self) {
        lock(&self.queue).closed = true;
        self.wake.notify_one();
    }

    fn schedule(&self, lease: &Arc<HeldLease>, at: Instant) {
        let mut times = lock(&lease.times);
        let mut queue = lock(&self.queue);
        if let Some(old) = times.slot.take() {
            queue.due.remove(&old);
        }
        let slot = (at, lease.seq);
        queue.due.insert(slot, Arc::downgrade(lease));
        times.slot = Some(slot);
        // Wake the driver only when this entry is earlier than what it sleeps towards.
        if queue.target.is_none_or(|target| at < target) {
            queue.target = Some(at);
            self.wake.notify_one();
        }
    }

    /// Spawns the driver on the current runtime unless one is running (a runtime that shut
    /// down takes its driver with it; the next lease starts a new one).
    fn ensure_driver(self: &Arc<Self>) {
        let mut driver = lock(&self.driver);
        if driver.as_ref().is_some_and(|d| !d.is_finished()) {
            return;
        }
        lock(&self.queue).target = None;
        *driver = Some(tokio::spawn(drive(self.clone())));
    }
}

/// Runs until [`Watchdog::close`]: sleeps until the earliest entry (or a wake-up for an earlier
/// one) and attends to every lease that is due.
async fn drive(dog: Arc<Watchdog>) {
    loop {
        let now = Instant::now();
        let mut ready = Vec::new();
        let next = {
            let mut queue = lock(&dog.queue);
            if queue.closed {
                return;
            }
            while let Some(entry) = queue.due.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                let slot = *entry.key();
                ready.push((slot, entry.remove()));
            }
            let next = queue.due.first_key_value().map(|(slot, _)| slot.0);
            queue.target = next;
            next
        };
        for (slot, lease) in ready {
            let Some(lease) = lease.upgrade() else {
                continue;
            };
            {
                let mut times = lock(&lease.times);
                if times.slot != Some(slot) {
                    continue; // re-planned meanwhile; the newer entry stands
                }
                times.slot = None;
            }
            attend(&dog, &lease);
        }
        tokio::select! {
            () = dog.wake.notified() => {}
            () = async {
                match next {
                    Some(at) => sleep_until(at).await,
                    None => std::future::pending().await,
                }
            } => {}
        }
    }
}

/// Decides what a due lease needs: loss, a renewal, or nothing yet.
fn attend(dog: &Arc<Watchdog>, lease: &Arc<HeldLease>) {
    if lease.stop.is_cancelled() || lease.loss.is_fired() {
        return;
    }
    let now = Instant::now();
    let mut times = lock(&lease.times);
    if now >= times.valid_until {
        let (reason, in_outage) = times.lost_reason();
        drop(times);
        return lease.lose_to(reason, in_outage);
    }
    if times.renewing || now < times.next_attempt {
        let at = if times.renewing {
            times.valid_until
        } else {
            times.next_attempt.min(times.valid_until)
        };
        drop(times);
        return dog.schedule(lease, at);
    }
    times.renewing = true;
    let until = times.valid_until;
    drop(times);
    // While the renewal is in flight, the entry stands at the validity's end.
    dog.schedule(lease, until);
    tokio::spawn(renew(dog.clone(), lease.clone()));
}

async fn renew(dog: Arc<Watchdog>, lease: Arc<HeldLease>) {
    let mode = lease.mode();
    let ttl = mode.ttl();
    let sent = Instant::now();
    let outcome = tokio::select! {
        biased;
        () = lease.stop.cancelled() => return,
        _ = lease.loss.fired() => return,
        outcome = lease.lease.renew(mode.is_renewed().then_some(ttl)) => outcome,
    };
    {
        let mut times = lock(&lease.times);
        times.renewing = false;
        match &outcome {
            Ok(true) => {
                metrics::renewal(lease.backend, lease.key.namespace(), true);
                times.last_error = None;
                times.last_error_in_outage = false;
                times.next_attempt = sent + renew_interval(ttl);
                if mode.is_renewed() {
                    times.valid_until = times.valid_until.max(valid_until(sent, ttl));
                }
                tracing::trace!(key = %lease.key, renewed = mode.is_renewed(), "lease confirmed");
            }
            Ok(false) => {}
            Err(error) => {
                metrics::renewal(lease.backend, lease.key.namespace(), false);
                let text = error.with_causes();
                if error.is_unavailable() {
                    // The backend's breaker reports the outage once (and refuses renewals at
                    // once while it lasts); a lease that runs out is reported as lost.
                    tracing::debug!(key = %lease.key, error = %text, "lease renewal failed; retrying while the lease lasts");
                } else {
                    tracing::warn!(key = %lease.key, error = %text, "lease renewal failed; retrying while the lease lasts");
                }
                times.last_error = Some(text);
                times.last_error_in_outage = error.is_unavailable();
                times.next_attempt = Instant::now() + retry_backoff(ttl);
            }
        }
    }
    match outcome {
        Ok(false) => {
            let reason = lease.lease.lost_reason(&lease.key, lease.token).await;
            lease.lose(reason);
        }
        _ if lease.stop.is_cancelled() => {}
        _ => dog.replan(&lease),
    }
}
