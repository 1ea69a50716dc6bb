//! Reading and following an election's leader in memory: the [`ElectionBackend`] side of
//! [`MemoryBackend`]. Every grant and release of a leadership tells the observers (a
//! `Notify`); a lease that runs out they time themselves.

use std::pin::pin;

use tokio::time::{sleep_until, Instant};

use super::state::Family;
use super::MemoryBackend;
use crate::backend::{ElectionBackend, Leader, LeaderWait};
use crate::sync::lock;
use crate::{FencingToken, LockKey, Result};

impl MemoryBackend {
    /// The leader of `key` and when its lease ends.
    fn read_leader(&self, key: &LockKey) -> Option<(Leader, Instant)> {
        let now = Instant::now();
        let keys = lock(&self.shared.keys);
        let state = keys.get(&(Family::Leader, key.full().to_owned()))?;
        let holder = state.holders.iter().find(|h| h.expires_at > now)?;
        let participant = holder.participant.as_deref().unwrap_or_default();
        let leader = Leader::new(participant, FencingToken::new(holder.fence));
        Some((leader, holder.expires_at))
    }
}

impl ElectionBackend for MemoryBackend {
    async fn leader(&self, key: &LockKey) -> Result<Option<Leader>> {
        Ok(self.read_leader(key).map(|(leader, _)| leader))
    }

    async fn leader_after(&self, wait: LeaderWait<'_>) -> Result<Option<Leader>> {
        let LeaderWait { key, seen, until } = wait;
        let mut changed = pin!(self.shared.elections.notified());
        // Registered before the read: a change after it wakes this wait.
        changed.as_mut().enable();
        let read = self.read_leader(key);
        let leader = read.as_ref().map(|(leader, _)| leader.clone());
        if leader.as_ref() != seen {
            return Ok(leader);
        }
        let wake = read.map_or(until, |(_, ends)| ends.min(until));
        tokio::select! {
            () = changed => {}
            () = sleep_until(wake) => {}
        }
        Ok(self.read_leader(key).map(|(leader, _)| leader))
    }
}
