//! An idempotency claim in one script (`record_claim.lua`): read the record, take the key's
//! lease and mark the record in flight under the new fence; and its end in another
//! (`record_complete.lua`): write the completed record (or the mark of a claim given up) and
//! release the lease. The idempotency client uses it
//! when its records are in a [`RedisResultStore`](super::RedisResultStore) on this
//! backend; the lease it grants is a lock's like any other (the lock client adopts it: the
//! watchdog, the lost signal, cancel-safety and metrics are the lock's).

use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;
use tokio::time::Instant;

use super::entry_layout::lua_entry_layout;
use super::keys::LockKeys;
use super::script_call::ScriptCall;
use super::{
    millis, protocol, scripts, RedisBackend, RedisLease, RedisResultStore, FENCE_RETENTION,
};
use crate::backend::{AcquireRequest, Grant};
use crate::results::{RecordClaim, RecordEnd, RecordSeen};
use crate::{FencingToken, LockKey, OwnerToken, Result};

/// Reads the record and, unless it settles the request, takes the lease and writes the record
/// in flight.
static RECORD_CLAIM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{}\n{}\n{}",
        lua_entry_layout(),
        scripts::LOCK_FENCE,
        include_str!("lua/record_claim.lua")
    ))
});

/// Writes the record a claim ends with and releases its lease.
static RECORD_COMPLETE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{}\n{}\nlocal function put()\n{}\nend\n{}",
        lua_entry_layout(),
        *scripts::WAKE_NEXT,
        include_str!("lua/result_put.lua"),
        include_str!("lua/record_complete.lua")
    ))
});

/// Where an idempotency record lives in the result store, and who hears of its changes.
pub(crate) struct RecordPlace<'a> {
    /// The record's Redis key (the result store's).
    pub(crate) record: String,
    /// The key of the processes waiting for the record's next value.
    pub(crate) watchers: String,
    /// How long the record is kept (the idempotency retention: at least a millisecond).
    pub(crate) keep: Duration,
    /// The channel prefix pushes go to (the result store's).
    pub(crate) push_prefix: &'a str,
    /// The record's key as receivers know it (`namespace:key`).
    pub(crate) key: &'a str,
}

impl<'a> RecordPlace<'a> {
    /// Where the record of `key` is in `store`, kept for `keep`.
    pub(crate) fn of(store: &'a RedisResultStore, key: &'a LockKey, keep: Duration) -> Self {
        let record = store.redis_key(key.full());
        Self {
            watchers: format!("{record}:watchers"),
            record,
            keep,
            push_prefix: store.push_prefix(),
            key: key.full(),
        }
    }
}

impl RedisBackend {
    /// Writes the record `end` describes (if its rule lets it replace the one there) and
    /// releases the lock lease of `lock_key` (`namespace:key`) held by `owner` under `fence`,
    /// if it still is, in one script: whether the record was written.
    pub(crate) async fn end_claim(
        &self,
        place: &RecordPlace<'_>,
        owner: OwnerToken,
        fence: FencingToken,
        end: &RecordEnd<'_>,
    ) -> Result<bool> {
        let keys = LockKeys::new(&self.shared.prefix, end.key.full());
        let mut call = ScriptCall::new(&RECORD_COMPLETE, 4);
        call.key(&place.record)
            .key(&place.watchers)
            .key(&*keys.lock)
            .key_from_parts(&keys.waiters())
            .arg(end.fence_digits)
            .arg(end.entry)
            .arg(millis(place.keep))
            .arg(place.push_prefix)
            .arg(place.key)
            .arg(super::entry_layout::replace_word(end.rule))
            .arg_fmt(format_args!("{}:{}", owner.hex(), fence.get()))
            .arg(&self.shared.hub.route);
        // The script also says whether the lease was still this claim's; either way it is
        // gone, which is all the claim needs.
        let (stored, _released): (i64, i64) = self.run("idempotency completion", &call).await?;
        Ok(stored == 1)
    }

    /// Runs the claim for `request` (a lock's lease, tried once) and `claim`: the grant (when
    /// the lease was taken) and what was found of the record.
    pub(crate) async fn claim_record(
        &self,
        request: AcquireRequest<'_>,
        place: &RecordPlace<'_>,
        claim: &RecordClaim<'_>,
    ) -> Result<(Option<Grant<RedisLease>>, RecordSeen)> {
        let keys = LockKeys::new(&self.shared.prefix, request.key.full());
        let retention = request.fence_retention.unwrap_or(FENCE_RETENTION);
        let mut call = ScriptCall::new(&RECORD_CLAIM, 4);
        call.key(&place.record)
            .key(&place.watchers)
            .key(&*keys.lock)
            .key_from_parts(&keys.fence())
            .arg_fmt(request.owner.hex())
            .arg(millis(request.ttl))
            .arg(millis(retention))
            .arg(claim.in_flight)
            .arg(millis(place.keep))
            .arg(place.push_prefix)
            .arg(place.key)
            .arg(claim.fingerprint)
            .arg_fmt(self.holder_record(request.label));
        let sent = Instant::now();
        let (status, fence, record): (i64, i64, Option<Vec<u8>>) =
            self.run("idempotency claim", &call).await?;
        let granted = |fence: i64| {
            u64::try_from(fence)
                .map(|fence| {
                    self.lock_grant(keys.clone(), request.owner, FencingToken::new(fence), sent)
                })
                .map_err(|_| protocol(format!("negative fencing token {fence}")))
        };
        let missing = || protocol("the idempotency claim answered without the record".to_owned());
        Ok(match status {
            2 => (None, RecordSeen::Settled(record.ok_or_else(missing)?)),
            0 => (None, RecordSeen::Busy(record)),
            1 => (Some(granted(fence)?), RecordSeen::Claimed),
            3 => (
                Some(granted(fence)?),
                RecordSeen::Newer(record.ok_or_else(missing)?),
            ),
            other => return Err(protocol(format!("idempotency claim answered {other}"))),
        })
    }
}
