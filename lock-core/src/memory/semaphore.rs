//! The semaphore's size and state in memory ([`SemaphoreBackend`]); sizes outlive the
//! semaphore's leases.

use tokio::time::Instant;

use super::state::Family;
use super::MemoryBackend;
use crate::backend::{SemaphoreBackend, SemaphoreState};
use crate::sync::lock;
use crate::{LockKey, Result};

impl MemoryBackend {
    /// The size of the semaphore `key`, set to `limit` if it has none yet.
    pub(super) fn size_of(&self, key: &str, limit: u32) -> u32 {
        *lock(&self.shared.sizes)
            .entry(key.to_owned())
            .or_insert(limit)
    }
}

impl SemaphoreBackend for MemoryBackend {
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
}
