//! The embedded memory backend: the same lease semantics inside one process, no server.
//!
//! It is the default for examples, the first-run demo and unit tests. Leases expire on tokio's
//! clock (so paused-time tests work), a release wakes one waiter, and a loss is pushed to the
//! holder at once. It offers every primitive: the grant rules of each are in [`state`], the
//! count-down latch in [`latch`]. It excludes tasks of one process only.

mod latch;
mod state;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::{sleep_until, Instant};

use self::latch::Latches;
use self::state::{Family, Holder, KeyState, Verdict, Waiter};
use crate::backend::{
    AcquireRequest, Capabilities, Grant, LeaseKind, LockBackend, Primitives, SemaphoreState,
};
use crate::lock::held::lock;
use crate::{FencingToken, LockKey, LossSignal, LostReason, OwnerToken, Result};

/// Locks (and fair locks, read-write locks, semaphores, latches) held in this process's memory.
///
/// ```
/// use lock_core::{LockClient, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(MemoryBackend::new());
/// let first = locks.lock("k").await?;
/// first.release().await?;
/// let second = locks.lock("k").await?;
/// assert!(second.fencing_token() > lock_core::FencingToken::new(1));
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct MemoryBackend {
    shared: Arc<Shared>,
}

type Slot = (Family, String);

#[derive(Default)]
struct Shared {
    keys: Mutex<HashMap<Slot, KeyState>>,
    /// Semaphore sizes set so far; they outlive the semaphore's leases.
    sizes: Mutex<HashMap<String, u32>>,
    latches: Latches,
    /// One counter for every key: strictly increasing per key, and nothing to keep per key
    /// once it is idle.
    fences: AtomicU64,
    waiter_ids: AtomicU64,
}

/// A lease held in a [`MemoryBackend`].
#[derive(Debug)]
pub struct MemoryLease {
    family: Family,
    key: String,
    owner: OwnerToken,
    fence: u64,
}

/// A waiter's place in a key's queue; leaving it (by grant, timeout or drop) removes it and
/// lets the next waiter look again.
struct Registration<'a> {
    shared: &'a Shared,
    slot: &'a Slot,
    waiter: Waiter,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut keys = lock(&self.shared.keys);
        let Some(state) = keys.get_mut(self.slot) else {
            return;
        };
        let was_front = state
            .waiters
            .front()
            .is_some_and(|w| w.id == self.waiter.id);
        state.waiters.retain(|w| w.id != self.waiter.id);
        state.expire(Instant::now());
        if was_front {
            // Whatever held the queue up may have been this waiter: the next one looks again.
            state.wake_front();
        }
        if state.is_idle() {
            keys.remove(self.slot);
        }
    }
}

impl MemoryBackend {
    /// An empty backend.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Deletes `full_key`'s lock as an operator's `DEL` would on a server, firing the holder's
    /// lost signal. For fault-injection tests; returns whether a lock was held.
    pub fn simulate_external_delete(&self, full_key: &str) -> bool {
        self.simulate_external_delete_of(LeaseKind::Exclusive, full_key)
    }

    /// [`simulate_external_delete`](Self::simulate_external_delete) for the primitive of
    /// `kind` (every holder of it goes).
    pub fn simulate_external_delete_of(&self, kind: LeaseKind, full_key: &str) -> bool {
        let mut keys = lock(&self.shared.keys);
        let Some(state) = keys.get_mut(&(Family::of(kind), full_key.to_owned())) else {
            return false;
        };
        let found = !state.holders.is_empty();
        for holder in state.holders.drain(..) {
            holder.loss.fire(LostReason::NotOwner);
        }
        state.wake_front();
        found
    }

    /// How many waiters are queued on `full_key`'s lock (for tests that check nothing is left
    /// behind).
    #[must_use]
    pub fn waiter_count(&self, full_key: &str) -> usize {
        self.queued(Family::Lock, full_key)
    }

    /// How many keys have any state (held or waited on), every primitive counted.
    #[must_use]
    pub fn active_keys(&self) -> usize {
        lock(&self.shared.keys).len() + self.shared.latches.len()
    }

    fn queued(&self, family: Family, full_key: &str) -> usize {
        lock(&self.shared.keys)
            .get(&(family, full_key.to_owned()))
            .map_or(0, |s| s.waiters.len())
    }

    fn size_of(&self, key: &str, limit: u32) -> u32 {
        *lock(&self.shared.sizes)
            .entry(key.to_owned())
            .or_insert(limit)
    }
}

impl LockBackend for MemoryBackend {
    type Lease = MemoryLease;

    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::new("memory");
        caps.cross_process = false;
        caps.push_wakeups = true;
        caps.loss_push = true;
        caps.primitives = Primitives::ALL;
        caps
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
                        });
                        if let Some(id) = waiter {
                            state.waiters.retain(|w| w.id != id);
                            // Readers and permits behind us may fit too: the next one looks.
                            state.wake_front();
                        }
                        drop(keys);
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
        Ok(held)
    }

    /// Every await of [`acquire`](LockBackend::acquire) here is a wait with nothing granted,
    /// so a dropped acquire leaves only its queue entry, which its registration removes; this
    /// still frees a grant under `owner`, should a caller drop the future the moment it was
    /// granted.
    async fn release_abandoned(
        &self,
        key: &LockKey,
        kind: LeaseKind,
        owner: OwnerToken,
    ) -> Result<bool> {
        let slot = (Family::of(kind), key.full().to_owned());
        let mut keys = lock(&self.shared.keys);
        let Some(state) = keys.get_mut(&slot) else {
            return Ok(false);
        };
        let found = state.remove_holder(owner, None);
        if found {
            state.wake_front();
        }
        if state.is_idle() {
            keys.remove(&slot);
        }
        Ok(found)
    }

    async fn queue_length(&self, key: &LockKey, kind: LeaseKind) -> Result<usize> {
        Ok(self.queued(Family::of(kind), key.full()))
    }

    async fn set_permits(&self, key: &LockKey, permits: u32) -> Result<()> {
        lock(&self.shared.sizes).insert(key.full().to_owned(), permits);
        // A larger size may let the first waiter in.
        if let Some(state) =
            lock(&self.shared.keys).get(&(Family::Semaphore, key.full().to_owned()))
        {
            state.wake_front();
        }
        Ok(())
    }

    async fn semaphore_state(&self, key: &LockKey) -> Result<SemaphoreState> {
        let permits = lock(&self.shared.sizes).get(key.full()).copied();
        let mut keys = lock(&self.shared.keys);
        let held = keys
            .get_mut(&(Family::Semaphore, key.full().to_owned()))
            .map_or(0, |state| {
                state.expire(Instant::now());
                state.permits_held()
            });
        Ok(SemaphoreState::new(permits, held))
    }

    async fn latch_create(&self, key: &LockKey, count: u64, expire: Duration) -> Result<bool> {
        Ok(self.shared.latches.create(key.full(), count, expire))
    }

    async fn latch_count_down(&self, key: &LockKey) -> Result<u64> {
        Ok(self.shared.latches.count_down(key.full()))
    }

    async fn latch_count(&self, key: &LockKey) -> Result<u64> {
        Ok(self.shared.latches.count(key.full()))
    }

    async fn latch_wait(&self, key: &LockKey, deadline: Option<Instant>) -> Result<bool> {
        Ok(self.shared.latches.wait(key.full(), deadline).await)
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
