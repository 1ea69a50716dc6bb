//! Granting, renewing and releasing leases in memory: the [`LockBackend`] side of
//! [`MemoryBackend`]; each primitive's grant rule is in `state.rs`.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::{sleep_until, Instant};

use super::queue::Registration;
use super::state::{Family, Holder, Verdict, Waiter};
use super::{MemoryBackend, MemoryLease, Slot};
use crate::backend::{
    Abandoned, AcquireRequest, Capabilities, Grant, LeaseKind, LockBackend, OptionalTraits,
};
use crate::sync::lock;
use crate::{FencingToken, LossSignal, OwnerToken, Result};

impl LockBackend for MemoryBackend {
    type Lease = MemoryLease;

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            cross_process: false,
            ..Capabilities::full("memory")
        }
    }

    async fn acquire(&self, request: AcquireRequest<'_>) -> Result<Option<Grant<MemoryLease>>> {
        let family = Family::of(request.kind);
        let slot: Slot = (family, request.key.full().to_owned());
        let mut registration: Option<Registration<'_>> = None;
        loop {
            let now = Instant::now();
            // Read each time: `set_permits` may have changed it while this request waited.
            let size = match request.kind {
                LeaseKind::Permits { limit, .. } => self.size_of(&slot.1, limit),
                _ => 0,
            };
            let retry_at = {
                let mut keys = lock(&self.shared.keys);
                let state = keys.entry(slot.clone()).or_default();
                if state.expire(now) {
                    state.wake_front();
                }
                // A retry of our own grant: hand back the same lease.
                if let Some(holder) = state.holder_mut(request.owner) {
                    holder.expires_at = now + request.ttl;
                    let (fence, loss) = (holder.fence, holder.loss.clone());
                    let lease = self.lease(family, &slot.1, request.owner, fence);
                    return Ok(Some(
                        Grant::new(lease, FencingToken::new(fence), now).with_loss(loss),
                    ));
                }
                let waiter = registration.as_ref().map(|r| r.waiter.id);
                match state.verdict(&request, waiter, size) {
                    Err(error) => {
                        if state.is_idle() {
                            keys.remove(&slot);
                        }
                        return Err(error);
                    }
                    Ok(Verdict::Grant) => {
                        let fence = self.shared.fences.fetch_add(1, Ordering::Relaxed) + 1;
                        let loss = LossSignal::new();
                        state.holders.push(Holder {
                            owner: request.owner,
                            fence,
                            expires_at: now + request.ttl,
                            loss: loss.clone(),
                            kind: request.kind,
                            participant: request.participant.map(Arc::from),
                            label: request.label.cloned(),
                            acquired_at: std::time::SystemTime::now(),
                        });
                        if let Some(id) = waiter {
                            state.waiters.retain(|w| w.id != id);
                            // Readers and permits behind us may fit too: the next one looks.
                            state.wake_front();
                        }
                        drop(keys);
                        if family == Family::Leader {
                            self.shared.elections.notify_waiters();
                        }
                        if let Some(mut registration) = registration.take() {
                            // Already out of the queue: leaving must not wake anyone again.
                            registration.waiter.id = u64::MAX;
                        }
                        let lease = self.lease(family, &slot.1, request.owner, fence);
                        return Ok(Some(
                            Grant::new(lease, FencingToken::new(fence), now).with_loss(loss),
                        ));
                    }
                    Ok(Verdict::Wait) => {
                        if request.deadline_passed() {
                            return Ok(None);
                        }
                        if registration.is_none() {
                            let waiter = Waiter {
                                id: self.shared.waiter_ids.fetch_add(1, Ordering::Relaxed),
                                wake: Arc::new(Notify::new()),
                                kind: request.kind,
                                label: request.label.cloned(),
                                since: now,
                            };
                            state.waiters.push_back(waiter.clone());
                            registration = Some(Registration {
                                shared: &self.shared,
                                slot: &slot,
                                waiter,
                            });
                        }
                        let expiry = state.next_expiry().unwrap_or(now + request.ttl);
                        request.deadline.map_or(expiry, |d| d.min(expiry))
                    }
                }
            };
            let wake = registration
                .as_ref()
                .map(|r| r.waiter.wake.clone())
                .unwrap_or_default();
            tokio::select! {
                () = wake.notified() => {}
                () = sleep_until(retry_at) => {}
            }
        }
    }

    async fn renew(&self, lease: &MemoryLease, ttl: Option<Duration>) -> Result<bool> {
        let now = Instant::now();
        let mut keys = lock(&self.shared.keys);
        let Some(state) = keys.get_mut(&(lease.family, lease.key.clone())) else {
            return Ok(false);
        };
        if !state.holds(lease.owner, lease.fence, now) {
            return Ok(false);
        }
        if let (Some(holder), Some(ttl)) = (state.holder_mut(lease.owner), ttl) {
            holder.expires_at = now + ttl;
        }
        Ok(true)
    }

    async fn release(&self, lease: &MemoryLease) -> Result<bool> {
        let now = Instant::now();
        let slot = (lease.family, lease.key.clone());
        let mut keys = lock(&self.shared.keys);
        let Some(state) = keys.get_mut(&slot) else {
            return Ok(false);
        };
        let expired = state.expire(now);
        let held = state.remove_holder(lease.owner, Some(lease.fence));
        if held || expired {
            state.wake_front();
        }
        if state.is_idle() {
            keys.remove(&slot);
        }
        if held && lease.family == Family::Leader {
            self.shared.elections.notify_waiters();
        }
        Ok(held)
    }

    /// Every await of [`acquire`](LockBackend::acquire) here is a wait with nothing granted,
    /// so a dropped acquire leaves only its queue entry, which its registration removes; this
    /// still frees a grant under `owner`, should a caller drop the future the moment it was
    /// granted.
    async fn release_abandoned(&self, abandoned: &Abandoned) -> Result<bool> {
        let slot = (Family::of(abandoned.kind), abandoned.key.full().to_owned());
        let mut keys = lock(&self.shared.keys);
        let Some(state) = keys.get_mut(&slot) else {
            return Ok(false);
        };
        let found = state.remove_holder(abandoned.owner, None);
        if found {
            state.wake_front();
        }
        if state.is_idle() {
            keys.remove(&slot);
        }
        if found && slot.0 == Family::Leader {
            self.shared.elections.notify_waiters();
        }
        Ok(found)
    }

    fn optional_traits(&self) -> OptionalTraits<'_> {
        OptionalTraits::all(self).with_operator(self)
    }
}

impl MemoryBackend {
    fn lease(&self, family: Family, key: &str, owner: OwnerToken, fence: u64) -> MemoryLease {
        MemoryLease {
            family,
            key: key.to_owned(),
            owner,
            fence,
        }
    }
}
