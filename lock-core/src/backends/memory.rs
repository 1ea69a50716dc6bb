//! The embedded memory backend: the same lease semantics inside one process, no server.
//!
//! It is the default for examples, the first-run demo and unit tests. Leases expire on tokio's
//! clock (so paused-time tests work), a release wakes exactly one waiter, and a loss is pushed
//! to the holder at once. It excludes tasks of one process only.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::{sleep_until, Instant};

use crate::backend::{AcquireRequest, Capabilities, Grant, LockBackend};
use crate::lock::held::lock;
use crate::{FencingToken, LockKey, LossSignal, LostReason, OwnerToken, Result};

/// Locks held in this process's memory.
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

#[derive(Default)]
struct Shared {
    keys: Mutex<HashMap<String, KeyState>>,
    /// One counter for every key: strictly increasing per key, and nothing to keep per key
    /// once it is idle.
    fences: AtomicU64,
    waiter_ids: AtomicU64,
}

#[derive(Default)]
struct KeyState {
    holder: Option<Holder>,
    /// Waiters in arrival order; a release pops and wakes the first.
    waiters: VecDeque<Waiter>,
}

struct Holder {
    owner: OwnerToken,
    fence: u64,
    expires_at: Instant,
    loss: LossSignal,
}

#[derive(Clone)]
struct Waiter {
    id: u64,
    wake: Arc<Notify>,
}

/// A lease held in a [`MemoryBackend`].
#[derive(Debug)]
pub struct MemoryLease {
    key: String,
    owner: OwnerToken,
    fence: u64,
}

impl KeyState {
    /// Drops a holder whose lease has run out, telling it so.
    fn expire(&mut self, now: Instant) {
        if self.holder.as_ref().is_some_and(|h| h.expires_at <= now) {
            if let Some(holder) = self.holder.take() {
                holder.loss.fire(LostReason::Expired);
            }
        }
    }

    fn is_held_by(&self, owner: OwnerToken, fence: u64, now: Instant) -> bool {
        self.holder
            .as_ref()
            .is_some_and(|h| h.owner == owner && h.fence == fence && h.expires_at > now)
    }

    /// Wakes the first waiter, which re-checks the lock; no herd.
    fn wake_one(&mut self) {
        if let Some(waiter) = self.waiters.pop_front() {
            waiter.wake.notify_one();
        }
    }

    fn is_idle(&self) -> bool {
        self.holder.is_none() && self.waiters.is_empty()
    }
}

/// A waiter's place in a key's queue; leaving it (by grant, timeout or drop) removes it, and a
/// waiter that was woken but leaves without the lock passes the wake-up on.
struct Registration<'a> {
    shared: &'a Shared,
    key: &'a str,
    waiter: Waiter,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut keys = lock(&self.shared.keys);
        let Some(state) = keys.get_mut(self.key) else {
            return;
        };
        let before = state.waiters.len();
        state.waiters.retain(|w| w.id != self.waiter.id);
        let was_queued = state.waiters.len() != before;
        state.expire(Instant::now());
        if !was_queued && state.holder.is_none() {
            // We were woken for a free lock we are not taking: hand the wake-up on.
            state.wake_one();
        }
        if state.is_idle() {
            keys.remove(self.key);
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
        let mut keys = lock(&self.shared.keys);
        let Some(state) = keys.get_mut(full_key) else {
            return false;
        };
        let Some(holder) = state.holder.take() else {
            return false;
        };
        holder.loss.fire(LostReason::NotOwner);
        state.wake_one();
        true
    }

    /// How many waiters are queued on `full_key` (for tests that check nothing is left behind).
    #[must_use]
    pub fn waiter_count(&self, full_key: &str) -> usize {
        lock(&self.shared.keys)
            .get(full_key)
            .map_or(0, |s| s.waiters.len())
    }

    /// How many keys have any state (held or waited on).
    #[must_use]
    pub fn active_keys(&self) -> usize {
        lock(&self.shared.keys).len()
    }
}

impl LockBackend for MemoryBackend {
    type Lease = MemoryLease;

    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::new("memory");
        caps.cross_process = false;
        caps.push_wakeups = true;
        caps.loss_push = true;
        caps
    }

    async fn acquire(&self, request: AcquireRequest<'_>) -> Result<Option<Grant<MemoryLease>>> {
        let key = request.key.full();
        let mut registration: Option<Registration<'_>> = None;
        loop {
            let now = Instant::now();
            let retry_at = {
                let mut keys = lock(&self.shared.keys);
                let state = keys.entry(key.to_owned()).or_default();
                state.expire(now);
                match &mut state.holder {
                    None => {
                        let fence = self.shared.fences.fetch_add(1, Ordering::Relaxed) + 1;
                        let loss = LossSignal::new();
                        state.holder = Some(Holder {
                            owner: request.owner,
                            fence,
                            expires_at: now + request.ttl,
                            loss: loss.clone(),
                        });
                        drop(keys);
                        let lease = MemoryLease {
                            key: key.to_owned(),
                            owner: request.owner,
                            fence,
                        };
                        return Ok(Some(
                            Grant::new(lease, FencingToken::new(fence), now).with_loss(loss),
                        ));
                    }
                    // A retry of our own grant: hand back the same lease.
                    Some(holder) if holder.owner == request.owner => {
                        holder.expires_at = now + request.ttl;
                        let lease = MemoryLease {
                            key: key.to_owned(),
                            owner: request.owner,
                            fence: holder.fence,
                        };
                        let grant = Grant::new(lease, FencingToken::new(holder.fence), now)
                            .with_loss(holder.loss.clone());
                        return Ok(Some(grant));
                    }
                    Some(holder) => {
                        let expires_at = holder.expires_at;
                        if request.deadline_passed() {
                            return Ok(None);
                        }
                        let first_time = registration.is_none();
                        let reg = registration.get_or_insert_with(|| Registration {
                            shared: &self.shared,
                            key,
                            waiter: Waiter {
                                id: self.shared.waiter_ids.fetch_add(1, Ordering::Relaxed),
                                wake: Arc::new(Notify::new()),
                            },
                        });
                        if !state.waiters.iter().any(|w| w.id == reg.waiter.id) {
                            if first_time {
                                state.waiters.push_back(reg.waiter.clone());
                            } else {
                                // Woken, then beaten to the lock: keep our place at the front.
                                state.waiters.push_front(reg.waiter.clone());
                            }
                        }
                        request.deadline.map_or(expires_at, |d| d.min(expires_at))
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
        let Some(state) = keys.get_mut(&lease.key) else {
            return Ok(false);
        };
        if !state.is_held_by(lease.owner, lease.fence, now) {
            return Ok(false);
        }
        if let (Some(holder), Some(ttl)) = (state.holder.as_mut(), ttl) {
            holder.expires_at = now + ttl;
        }
        Ok(true)
    }

    async fn release(&self, lease: &MemoryLease) -> Result<bool> {
        let now = Instant::now();
        let mut keys = lock(&self.shared.keys);
        let Some(state) = keys.get_mut(&lease.key) else {
            return Ok(false);
        };
        state.expire(now);
        let held = state.is_held_by(lease.owner, lease.fence, now);
        if held {
            state.holder = None;
            state.wake_one();
        }
        if state.is_idle() {
            keys.remove(&lease.key);
        }
        Ok(held)
    }

    /// Every await of [`acquire`](LockBackend::acquire) here is a wait with nothing granted,
    /// so a dropped acquire leaves only its queue entry, which its registration removes; this
    /// still frees a grant under `owner`, should a caller drop the future the moment it was
    /// granted.
    async fn release_abandoned(&self, key: &LockKey, owner: OwnerToken) -> Result<bool> {
        let mut keys = lock(&self.shared.keys);
        let Some(state) = keys.get_mut(key.full()) else {
            return Ok(false);
        };
        let found = state.holder.as_ref().is_some_and(|h| h.owner == owner);
        if found {
            state.holder = None;
            state.wake_one();
        }
        if state.is_idle() {
            keys.remove(key.full());
        }
        Ok(found)
    }
}
