//! A waiter's place in a key's queue, and counting the queue ([`QueueBackend`]).

use tokio::time::Instant;

use super::state::{Family, Waiter};
use super::{MemoryBackend, Shared, Slot};
use crate::backend::{LeaseKind, QueueBackend};
use crate::sync::lock;
use crate::{LockKey, Result};

/// A waiter's place in a key's queue; leaving it (by grant, timeout or drop) removes it and
/// lets the next waiter look again.
pub(super) struct Registration<'a> {
    pub(super) shared: &'a Shared,
    pub(super) slot: &'a Slot,
    pub(super) waiter: Waiter,
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
    /// How many waiters are queued on the primitive `family` named `full_key`.
    pub(super) fn queued(&self, family: Family, full_key: &str) -> usize {
        lock(&self.shared.keys)
            .get(&(family, full_key.to_owned()))
            .map_or(0, |s| s.waiters.len())
    }
}

impl QueueBackend for MemoryBackend {
    async fn queue_length(&self, key: &LockKey, kind: LeaseKind) -> Result<usize> {
        Ok(self.queued(Family::of(kind), key.full()))
    }
}
