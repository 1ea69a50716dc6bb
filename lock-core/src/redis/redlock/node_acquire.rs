//! One node's part of a RedLock grant (`node_acquire.lua`): the single-node lock, except that
//! a key the node still holds under the same owner token (an earlier round of the same
//! acquisition, whose give-back did not reach it) gets a fresh fence instead of its old one.
//! The lone client answers its old fence again (a retry of a grant whose reply was lost must
//! not count twice), but a RedLock round's old fence may be older than a token handed out
//! since, and answering it could make the next token smaller.

use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;
use tokio::time::Instant;

use crate::backend::Grant;
use crate::redis::script_call::ScriptCall;
use crate::redis::scripts::LOCK_FENCE;
use crate::redis::{millis, protocol, LockKeys, RedisBackend, RedisLease};
use crate::{FencingToken, LockKey, OwnerToken, Result};

/// `node_acquire.lua`, after `lock_fence.lua`.
pub(super) static NODE_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{LOCK_FENCE}\n{}",
        include_str!("node_acquire.lua")
    ))
});

impl RedisBackend {
    /// This node's grant of `key` under `owner` for `ttl`, sent at `sent`, with a fresh fence;
    /// `None` when another owner holds it.
    pub(super) async fn node_acquire(
        &self,
        key: &LockKey,
        owner: OwnerToken,
        ttl: Duration,
        retention: Duration,
        sent: Instant,
    ) -> Result<Option<Grant<RedisLease>>> {
        let keys = LockKeys::new(&self.shared.prefix, key.full());
        let mut call = ScriptCall::new(&NODE_ACQUIRE, 2);
        call.key(&*keys.lock)
            .key_from_parts(&keys.fence())
            .arg_fmt(owner.hex())
            .arg(millis(ttl))
            .arg(millis(retention));
        let (granted, value): (i64, i64) = self.run("acquire", &call).await?;
        match granted {
            1 => {
                let fence = u64::try_from(value)
                    .map(FencingToken::new)
                    .map_err(|_| protocol(format!("negative fencing token {value}")))?;
                Ok(Some(self.lock_grant(keys, owner, fence, sent)))
            }
            0 => Ok(None),
            other => Err(protocol(format!("acquire script answered {other}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::LockBackend;

    /// A key still held under the same owner token gets a fresh, larger fence (a lone
    /// client's retry would answer the old one); another owner finds it busy.
    #[tokio::test]
    async fn a_key_held_under_the_same_owner_gets_a_fresh_fence() {
        // lock-testing's rule: no server skips loudly, or fails where servers are required.
        // (Its helpers take and give strings only, so the second copy of lock-core a unit
        // test links through it never meets this one.)
        let Some(url) = lock_testing::server_url("LOCK_TEST_REDIS_URL").expect("test server")
        else {
            return;
        };
        let node = RedisBackend::connect(&url).await.unwrap();
        let key = LockKey::new("redlock-unit", &lock_testing::unique("fresh")).unwrap();
        let owner = OwnerToken::random().unwrap();
        let (ttl, retention) = (Duration::from_secs(10), Duration::from_secs(60));
        let acquire = |owner| node.node_acquire(&key, owner, ttl, retention, Instant::now());
        let first = acquire(owner).await.unwrap().expect("granted");
        let again = acquire(owner).await.unwrap().expect("granted again");
        assert!(
            again.fencing_token > first.fencing_token,
            "{} then {}",
            first.fencing_token,
            again.fencing_token
        );
        let other = OwnerToken::random().unwrap();
        assert!(
            acquire(other).await.unwrap().is_none(),
            "another owner got it"
        );
        assert!(node.release(&again.lease).await.unwrap());
        assert!(
            !node.release(&first.lease).await.unwrap(),
            "the old value was replaced"
        );
    }
}
