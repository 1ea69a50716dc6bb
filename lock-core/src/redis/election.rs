//! Reading and following an election's leader: the [`ElectionBackend`] side of
//! [`RedisBackend`]. An election is a primitive of its own (`prefix:leader:{#ns:key}`), queued
//! and granted as a fair lock is; the grant keeps the leader's participant id beside its lease
//! (`primitive_acquire.lua`), and each grant and release of it is published on the election's
//! channel (`<wake channel prefix>leader:<holders key>`) for its observers.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::time::{sleep_until, Instant};

use super::primitive_keys::Family;
use super::{protocol, scripts, RedisBackend};
use crate::backend::{ElectionBackend, Leader, LeaderWait};
use crate::{FencingToken, LockError, LockKey, Result};

impl RedisBackend {
    /// The leader of `key` and how long its lease has left.
    async fn read_leader(&self, key: &LockKey) -> Result<Option<(Leader, Duration)>> {
        let keys = self.primitive_keys(Family::Leader, key);
        let invocation = self.primitive_invocation(&scripts::PRIMITIVE_LEADER, &keys);
        let reply: Vec<String> = self.run("inspect", &invocation).await?;
        let [fence, participant, left] = reply.as_slice() else {
            return if reply.is_empty() {
                Ok(None)
            } else {
                Err(protocol(format!("leader script answered {reply:?}")))
            };
        };
        let number = |text: &str| {
            text.parse::<u64>()
                .map_err(|_| protocol(format!("leader script answered {reply:?}")))
        };
        let leader = Leader::new(participant.clone(), FencingToken::new(number(fence)?));
        Ok(Some((leader, Duration::from_millis(number(left)?))))
    }
}

impl ElectionBackend for RedisBackend {
    async fn leader(&self, key: &LockKey) -> Result<Option<Leader>> {
        Ok(self.read_leader(key).await?.map(|(leader, _)| leader))
    }

    /// Subscribes to the election's channel, then reads: a change after the read is a message.
    /// A lease that runs out publishes nothing, so the wait also ends when the leader's does.
    async fn leader_after(&self, wait: LeaderWait<'_>) -> Result<Option<Leader>> {
        let LeaderWait { key, seen, until } = wait;
        let unavailable = |error| LockError::unavailable("redis", error);
        let keys = self.primitive_keys(Family::Leader, key);
        let channel = format!("{}leader:{}", self.shared.hub.channel_prefix, keys.holders);
        let mut pubsub = self.shared.pubsub.open().await.map_err(unavailable)?;
        pubsub.subscribe(&channel).await.map_err(unavailable)?;
        let read = self.read_leader(key).await?;
        let leader = read.as_ref().map(|(leader, _)| leader.clone());
        if leader.as_ref() != seen {
            return Ok(leader);
        }
        // A millisecond past the lease's end, so the next read finds it run out.
        let ends = read.map(|(_, left)| Instant::now() + left + Duration::from_millis(1));
        let wake = ends.map_or(until, |ends| ends.min(until));
        let mut messages = pubsub.on_message();
        tokio::select! {
            _ = messages.next() => {}
            () = sleep_until(wake) => {}
        }
        self.leader(key).await
    }
}
