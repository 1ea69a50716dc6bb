//! Reading an election's leader: the [`ElectionBackend`] side of [`RedisBackend`]. An election
//! is a primitive of its own (`prefix:leader:{#ns:key}`), queued and granted as a fair lock is;
//! the grant keeps the leader's participant id beside its lease (`primitive_acquire.lua`).

use super::primitive_keys::Family;
use super::{protocol, scripts, RedisBackend};
use crate::backend::{ElectionBackend, Leader};
use crate::{FencingToken, LockKey, Result};

impl ElectionBackend for RedisBackend {
    async fn leader(&self, key: &LockKey) -> Result<Option<Leader>> {
        let keys = self.primitive_keys(Family::Leader, key);
        let invocation = self.primitive_invocation(&scripts::PRIMITIVE_LEADER, &keys);
        let reply: Vec<String> = self.run("inspect", &invocation).await?;
        let [fence, participant] = reply.as_slice() else {
            return if reply.is_empty() {
                Ok(None)
            } else {
                Err(protocol(format!("leader script answered {reply:?}")))
            };
        };
        let fence = fence
            .parse::<u64>()
            .map_err(|_| protocol(format!("leader script answered the fence {fence:?}")))?;
        Ok(Some(Leader::new(
            participant.clone(),
            FencingToken::new(fence),
        )))
    }
}
