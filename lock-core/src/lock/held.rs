//! The state of one granted backend lease, shared by all re-entrant guards of its owner, and
//! the per-client registry that counts re-entries.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::{sleep_until, Instant};

use crate::backend::{DynLease, LeaseKind};
use crate::lock::owner::OwnerId;
use crate::sync::lock;
use crate::sync::stop_flag::StopFlag;
use crate::{FencingToken, LeaseMode, LockKey, LossSignal, LostReason, OwnerToken};

/// One lease as granted by the backend.
pub(crate) struct HeldLease {
    pub(crate) key: LockKey,
    /// What the lease grants (the lock, a fair lock's turn, a read or write share, permits).
    pub(crate) kind: LeaseKind,
    pub(crate) token: OwnerToken,
    pub(crate) fence: FencingToken,
    pub(crate) backend: &'static str,
    pub(crate) lease: Box<dyn DynLease>,
    pub(crate) loss: LossSignal,
    /// Validity and renewal bookkeeping, shared with the watchdog.
    pub(crate) times: Mutex<Timing>,
    /// Distinguishes this lease in the watchdog's queue.
    pub(crate) seq: u64,
    /// When the grant reached the client, for the hold-time metric.
    pub(crate) granted_at: Instant,
    /// The lease length and whether the watchdog renews it; `extend` changes the length.
    pub(crate) mode: Mutex<LeaseMode>,
    /// Cancelled when the last guard goes, so an in-flight renewal stops.
    pub(crate) stop: StopFlag,
}

/// When a lease is trusted until, and when the watchdog next looks at it.
pub(crate) struct Timing {
    /// Until when the lease is trusted (monotonic clock).
    pub(crate) valid_until: Instant,
    /// When the next renewal (or ownership check) is due.
    pub(crate) next_attempt: Instant,
    /// The last renewal error, reported if the lease runs out.
    pub(crate) last_error: Option<String>,
    /// The last renewal error was the backend being unreachable: an outage its breaker
    /// reports once, so a lease it takes is logged at DEBUG (the lost signal and the
    /// `lock_lost_total` metric still say so).
    pub(crate) last_error_in_outage: bool,
    /// A renewal is in flight.
    pub(crate) renewing: bool,
    /// The lease's entry in the watchdog queue.
    pub(crate) slot: Option<(Instant, u64)>,
}

impl Timing {
    /// Why a lease whose validity ended is lost, and whether an outage did it.
    pub(crate) fn lost_reason(&self) -> (LostReason, bool) {
        match &self.last_error {
            Some(error) => (
                LostReason::RenewalFailed(error.clone()),
                self.last_error_in_outage,
            ),
            None => (LostReason::Expired, false),
        }
    }

    pub(crate) fn new(valid_until: Instant, next_attempt: Instant) -> Self {
        Self {
            valid_until,
            next_attempt,
            last_error: None,
            last_error_in_outage: false,
            renewing: false,
            slot: None,
        }
    }
}

impl HeldLease {
    pub(crate) fn valid_until(&self) -> Instant {
        lock(&self.times).valid_until
    }

    pub(crate) fn mode(&self) -> LeaseMode {
        *lock(&self.mode)
    }

    /// Why the lease is lost, or `None` while it is still trusted. A lease whose trusted
    /// validity has ended is lost even if nothing has said so yet (the watchdog's task may not
    /// have run: the process was paused, the runtime is busy): this fires the lost signal then,
    /// so every "is it still mine?" check agrees with the clock.
    pub(crate) fn lost_reason(&self) -> Option<LostReason> {
        if let Some(reason) = self.loss.reason() {
            return Some(reason);
        }
        let (reason, in_outage) = {
            let times = lock(&self.times);
            if Instant::now() < times.valid_until {
                return None;
            }
            times.lost_reason()
        };
        self.lose_to(reason, in_outage);
        self.loss.reason()
    }

    /// Resolves when the lease is lost: when a backend or the watchdog fires the signal, or
    /// when the trusted validity ends, whichever comes first.
    pub(crate) async fn lost(&self) -> LostReason {
        loop {
            if let Some(reason) = self.lost_reason() {
                return reason;
            }
            let until = self.valid_until();
            tokio::select! {
                reason = self.loss.fired() => return reason,
                () = sleep_until(until) => {}
            }
        }
    }

    /// Fires the lost signal with `reason` (the first reason stays), logging the loss once.
    pub(crate) fn lose(&self, reason: LostReason) {
        self.lose_to(reason, false);
    }

    /// [`lose`](Self::lose), at DEBUG when the loss comes of an outage (renewals refused or
    /// failing because the backend is unreachable): the backend's breaker reports the outage
    /// once, and each lease it takes would otherwise add a WARN.
    pub(crate) fn lose_to(&self, reason: LostReason, in_outage: bool) {
        if self.loss.fire(reason.clone()) {
            if in_outage {
                tracing::debug!(key = %self.key, fence = %self.fence, backend = self.backend, %reason, "lease lost in a backend outage");
            } else {
                tracing::warn!(key = %self.key, fence = %self.fence, backend = self.backend, %reason, "lease lost");
            }
        }
    }

    pub(crate) fn set_ttl(&self, ttl: Duration) {
        let mut mode = lock(&self.mode);
        *mode = match *mode {
            LeaseMode::Watchdog { .. } => LeaseMode::watchdog(ttl),
            LeaseMode::Fixed { .. } => LeaseMode::fixed(ttl),
        };
    }
}

struct Entry {
    lease: Arc<HeldLease>,
    count: usize,
}

/// The leases held by this client, by owner, key and kind, with their hold counts. Semaphore
/// permits are never registered: each acquisition is a permit of its own.
#[derive(Default)]
pub(crate) struct HeldRegistry {
    entries: Mutex<HashMap<(OwnerId, LockKey, LeaseKind), Entry>>,
}

impl HeldRegistry {
    /// Counts a re-entry when `owner` already holds `key`, returning the shared lease and the
    /// new hold count.
    pub(crate) fn reenter(
        &self,
        owner: OwnerId,
        key: &LockKey,
        kind: LeaseKind,
    ) -> Option<(Arc<HeldLease>, usize)> {
        let mut entries = lock(&self.entries);
        let entry = entries.get_mut(&(owner, key.clone(), kind))?;
        entry.count += 1;
        Some((entry.lease.clone(), entry.count))
    }

    /// The owner token of `owner`'s lease of `kind` on `key`, if it holds one.
    pub(crate) fn token_of(
        &self,
        owner: OwnerId,
        key: &LockKey,
        kind: LeaseKind,
    ) -> Option<OwnerToken> {
        lock(&self.entries)
            .get(&(owner, key.clone(), kind))
            .map(|entry| entry.lease.token)
    }

    /// Records a fresh grant with a hold count of one (permits are not recorded).
    pub(crate) fn insert(&self, owner: OwnerId, lease: Arc<HeldLease>) {
        if matches!(lease.kind, LeaseKind::Permits { .. }) {
            return;
        }
        let slot = (owner, lease.key.clone(), lease.kind);
        lock(&self.entries).insert(slot, Entry { lease, count: 1 });
    }

    /// Gives back one hold; returns true when it was the last, and the lease must be released.
    pub(crate) fn leave(&self, owner: OwnerId, lease: &Arc<HeldLease>) -> bool {
        let mut entries = lock(&self.entries);
        let slot = (owner, lease.key.clone(), lease.kind);
        match entries.get_mut(&slot) {
            Some(entry) if Arc::ptr_eq(&entry.lease, lease) => {
                entry.count -= 1;
                if entry.count == 0 {
                    entries.remove(&slot);
                    true
                } else {
                    false
                }
            }
            // Not registered (already removed): nothing else shares it.
            _ => true,
        }
    }

    /// How many holds `owner` has on this lease.
    pub(crate) fn count(&self, owner: OwnerId, lease: &Arc<HeldLease>) -> usize {
        if matches!(lease.kind, LeaseKind::Permits { .. }) {
            // Not registered: one hold, until released.
            return usize::from(!lease.stop.is_cancelled());
        }
        lock(&self.entries)
            .get(&(owner, lease.key.clone(), lease.kind))
            .filter(|entry| Arc::ptr_eq(&entry.lease, lease))
            .map_or(0, |entry| entry.count)
    }

    /// How many distinct leases this client holds.
    pub(crate) fn len(&self) -> usize {
        lock(&self.entries).len()
    }
}
