//! The semaphore's size and state on Redis ([`SemaphoreBackend`]): the size is the key
//! `lock:sem:{#…}:size`, kept apart from the leases so it outlives them; the permits are leases
//! (`primitives.rs`).

use super::primitive_keys::Family;
use super::{scripts, RedisBackend};
use crate::backend::{SemaphoreBackend, SemaphoreState};
use crate::{LockKey, Result};

impl SemaphoreBackend for RedisBackend {
    async fn set_permits(&self, key: &LockKey, permits: u32) -> Result<()> {
        let keys = self.primitive_keys(Family::Semaphore, key);
        let mut invocation = self.primitive_invocation(&scripts::SET_PERMITS, &keys);
        invocation.arg(permits);
        let _: i64 = self.run("set permits", &invocation).await?;
        Ok(())
    }

    async fn semaphore_state(&self, key: &LockKey) -> Result<SemaphoreState> {
        let (_, size, held) = self.primitive_info(Family::Semaphore, key).await?;
        Ok(SemaphoreState::new(size, held))
    }
}
