//! RedLock's fencing token: the largest counter a grant saw, made the floor of a quorum of
//! nodes' counters before it is handed out, and made unique by the node that gave it.

use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;

use crate::redis::script_call::ScriptCall;
use crate::redis::{millis, LockKeys, RedisBackend};
use crate::{FencingToken, LockKey, Result};

/// The most nodes a [`RedLock`](super::RedLock) may have: a token is `counter × NODE_SLOTS +
/// node index`, so two grants whose largest counters are equal (which only grants overlapping
/// in time can have) still get different tokens.
pub(super) const NODE_SLOTS: usize = 16;

/// Raises one node's fencing counter to a floor (`raise_fence.lua`).
pub(super) static RAISE_FENCE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("raise_fence.lua")));

/// The token of a grant whose largest counter is `counter`, seen first at node `node`.
pub(super) fn token(counter: u64, node: usize) -> FencingToken {
    // Counters are seeded from a server's clock in microseconds (about 2^51 now), far below
    // u64::MAX / NODE_SLOTS (2^60); saturating keeps a corrupt counter from wrapping around.
    let slots = NODE_SLOTS as u64;
    FencingToken::new(counter.saturating_mul(slots).saturating_add(node as u64))
}

impl RedisBackend {
    /// Raises `key`'s fencing counter on this server to at least `counter`, kept for at least
    /// `retention`.
    pub(super) async fn raise_fence(
        &self,
        key: &LockKey,
        counter: u64,
        retention: Duration,
    ) -> Result<()> {
        let keys = LockKeys::new(&self.shared.prefix, key.full());
        let mut call = ScriptCall::new(&RAISE_FENCE, 1);
        call.key_from_parts(&keys.fence())
            .arg(counter)
            .arg(millis(retention));
        let _: i64 = self.run("raise fence", &call).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_larger_counter_beats_any_node_index() {
        assert!(token(8, NODE_SLOTS - 1) < token(9, 0));
        assert!(token(8, 0) < token(8, 1));
        assert_eq!(token(u64::MAX, 3), FencingToken::new(u64::MAX));
    }
}
