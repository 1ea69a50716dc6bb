//! Reading an election's leader in memory: the [`ElectionBackend`] side of [`MemoryBackend`].

use tokio::time::Instant;

use super::state::Family;
use super::MemoryBackend;
use crate::backend::{ElectionBackend, Leader};
use crate::lock::held::lock;
use crate::{FencingToken, LockKey, Result};

impl ElectionBackend for MemoryBackend {
    async fn leader(&self, key: &LockKey) -> Result<Option<Leader>> {
        let now = Instant::now();
        let keys = lock(&self.shared.keys);
        let leader = keys
            .get(&(Family::Leader, key.full().to_owned()))
            .and_then(|state| state.holders.iter().find(|h| h.expires_at > now))
            .map(|holder| {
                let participant = holder.participant.as_deref().unwrap_or_default();
                Leader::new(participant, FencingToken::new(holder.fence))
            });
        Ok(leader)
    }
}
