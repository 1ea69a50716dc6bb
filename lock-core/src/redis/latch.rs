//! Count-down latches on Redis ([`LatchBackend`]): the count is a string with the latch's expiry as its TTL;
//! waiters register their wake-hub id in a set that the count-down reaching zero publishes to
//! (push), and re-check on a capped, jittered timer as a safety net.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::{sleep_until, Instant};

use super::primitive_keys::LatchKeys;
use super::script_call::ScriptCall;
use super::shard_wakeups::ChannelHold;
use super::{millis, scripts, RedisBackend};
use crate::backend::LatchBackend;
use crate::{LockKey, Result};

/// A latch waiter's registration; dropping it takes its id out of the latch's waiters.
struct LatchWaiter<'a> {
    backend: &'a RedisBackend,
    keys: &'a LatchKeys,
    seq: u64,
    id: String,
    notify: Arc<Notify>,
    /// On a Redis Cluster, the waiter's wake channel, subscribed before it queued.
    _channel: Option<ChannelHold>,
}

impl Drop for LatchWaiter<'_> {
    fn drop(&mut self) {
        self.backend.shared.hub.unregister(self.seq);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (mut connection, waiters, id) = (
            self.backend.shared.connection.clone(),
            self.keys.waiters.clone(),
            std::mem::take(&mut self.id),
        );
        let breaker = self.backend.shared.breaker.clone();
        runtime.spawn(async move {
            // While the server is known to be down nothing reaches it: the entry expires with
            // the latch.
            if breaker.check().is_err() {
                return;
            }
            let removed: redis::RedisResult<i64> = redis::cmd("ZREM")
                .arg(&waiters)
                .arg(&id)
                .query_async(&mut connection)
                .await;
            if let Err(error) = removed {
                tracing::debug!(%error, "leaving a latch failed; its waiters expire with it");
            }
        });
    }
}

impl RedisBackend {
    fn latch_keys(&self, key: &LockKey) -> LatchKeys {
        LatchKeys::new(&self.shared.prefix, key.full())
    }
}

impl LatchBackend for RedisBackend {
    async fn latch_create(&self, key: &LockKey, count: u64, expire: Duration) -> Result<bool> {
        let keys = self.latch_keys(key);
        let mut invocation = ScriptCall::new(&scripts::LATCH_CREATE, 1);
        invocation.key(&keys.count).arg(count).arg(millis(expire));
        let created: i64 = self.run("latch create", &invocation).await?;
        Ok(created == 1)
    }

    async fn latch_count_down(&self, key: &LockKey) -> Result<u64> {
        let keys = self.latch_keys(key);
        let mut invocation = ScriptCall::new(&scripts::LATCH_COUNT_DOWN, 2);
        invocation
            .key(&keys.count)
            .key(&keys.waiters)
            .arg(&self.shared.hub.route);
        let left: i64 = self.run("latch count down", &invocation).await?;
        Ok(u64::try_from(left).unwrap_or(0))
    }

    async fn latch_count(&self, key: &LockKey) -> Result<u64> {
        let keys = self.latch_keys(key);
        let mut get = redis::cmd("GET");
        get.arg(&keys.count);
        let count: Option<i64> = self.query(&get).await?;
        Ok(count.and_then(|c| u64::try_from(c).ok()).unwrap_or(0))
    }

    async fn latch_wait(&self, key: &LockKey, deadline: Option<Instant>) -> Result<bool> {
        let keys = self.latch_keys(key);
        let channel = self.wake_channel(&keys.count).await?;
        let (seq, id, notify) = self.shared.hub.register("");
        let waiter = LatchWaiter {
            _channel: channel,
            backend: self,
            keys: &keys,
            seq,
            id,
            notify,
        };
        loop {
            let mut invocation = ScriptCall::new(&scripts::LATCH_WAIT, 2);
            invocation
                .key(&waiter.keys.count)
                .key(&waiter.keys.waiters)
                .arg(&waiter.id);
            let remaining: i64 = self.run("latch wait", &invocation).await?;
            let Ok(remaining) = u64::try_from(remaining) else {
                return Ok(true);
            };
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(false);
            }
            let poll = Duration::from_millis(remaining.max(1)).min(self.shared.config.poll_cap);
            let mut recheck_at = Instant::now() + crate::jitter::jitter(poll);
            if let Some(deadline) = deadline {
                recheck_at = recheck_at.min(deadline);
            }
            tokio::select! {
                () = waiter.notify.notified() => {}
                () = sleep_until(recheck_at) => {}
            }
        }
    }
}
