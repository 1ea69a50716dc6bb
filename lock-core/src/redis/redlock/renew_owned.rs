//! Renewing a RedLock grant on a node by its owner token alone: for a node whose grant landed
//! after the quorum had answered (the grant stopped waiting for it), whose lock value (owner
//! and that node's fence) the grant never saw.

use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;

use crate::redis::script_call::ScriptCall;
use crate::redis::{millis, LockKeys, RedisBackend};
use crate::{LockKey, OwnerToken, Result};

/// `renew_owned.lua`.
pub(super) static RENEW_OWNED: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("renew_owned.lua")));

impl RedisBackend {
    /// Whether this server holds `key` under `owner` (any fence); with `Some(ttl)` also sets
    /// its remaining time to `ttl`.
    pub(super) async fn renew_owned(
        &self,
        key: &LockKey,
        owner: OwnerToken,
        ttl: Option<Duration>,
    ) -> Result<bool> {
        let keys = LockKeys::new(&self.shared.prefix, key.full());
        let mut call = ScriptCall::new(&RENEW_OWNED, 1);
        call.key(&*keys.lock)
            .arg_fmt(owner.hex())
            .arg(ttl.map_or(0, millis));
        let held: i64 = self.run("renew", &call).await?;
        Ok(held == 1)
    }
}
