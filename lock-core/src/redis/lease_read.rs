//! One try at a lock's lease that also reads a key once the lease is granted, in one script:
//! the cache's miss takes its computation lease and reads the entry again (another instance
//! may have stored while this one read and asked) in one round trip instead of two. The read
//! runs after the grant in the same script, so it sees everything stored before the lease was
//! granted, as the separate read after the grant did. The lease is a lock's like any other:
//! the lock client adopts the grant (watchdog, lost signal, clean-up, metrics).

use std::sync::LazyLock;

use redis::Script;
use tokio::time::Instant;

use super::connection::hash_tag;
use super::keys::LockKeys;
use super::script_call::ScriptCall;
use super::{
    availability, millis, protocol, scripts, to_lock_error, RedisBackend, RedisLease, BACKEND,
    FENCE_RETENTION,
};
use crate::backend::{AcquireRequest, Grant, LeaseKind};
use crate::{FencingToken, Result};

/// `acquire.lua` tried once (no queueing), then, when granted, a `GET` of `KEYS[4]`.
/// Answers `{1, fence, value or nil}` when granted, `{0, pttl, nil}` when busy. A key that
/// cannot be read (another program's value of another type) reads as nothing, as a failed
/// read after the grant did: the lease stands, and the store's own checks meet the key next.
static ACQUIRE_THEN_READ: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{}\nlocal function acquire()\n{}\nend\n{}",
        scripts::LOCK_FENCE,
        include_str!("lua/acquire.lua"),
        "local granted = acquire()\n\
         if granted[1] ~= 1 then\n  return {0, granted[2], false}\nend\n\
         local value = redis.pcall('GET', KEYS[4])\n\
         if type(value) ~= 'string' then\n  value = false\nend\n\
         return {1, granted[2], value}"
    ))
});

impl RedisBackend {
    /// Tries the lock lease of `request` once and, when it is granted, reads `key` (a Redis
    /// key of this server) right after: the grant, if any, and the value read then. Only a
    /// plain lock's lease is read through (`LockError::Unsupported` for another kind).
    pub(crate) async fn acquire_then_read(
        &self,
        request: AcquireRequest<'_>,
        key: &str,
    ) -> Result<(Option<Grant<RedisLease>>, Option<Vec<u8>>)> {
        if request.kind != LeaseKind::Exclusive {
            return Err(request.kind.unsupported(BACKEND));
        }
        let keys = LockKeys::new(&self.shared.prefix, request.key.full());
        let retention = request.fence_retention.unwrap_or(FENCE_RETENTION);
        if self.shared.connection.is_cluster() && hash_tag(&keys.lock) != hash_tag(key) {
            // On a Redis Cluster one script touches one slot: the lease, then the read.
            let sent = Instant::now();
            let attempt = self.attempt(&keys, &request, None, false);
            let Ok(fence) = attempt.await? else {
                return Ok((None, None));
            };
            let grant = self.lock_grant(keys, request.owner, fence, sent);
            let mut get = redis::cmd("GET");
            get.arg(key);
            // As the script's `pcall`: a key that cannot be read reads as nothing.
            self.shared
                .commands
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let mut connection = self.shared.connection.clone();
            let read = get.query_async::<Option<Vec<u8>>>(&mut connection);
            let value = match availability::through(&self.shared.breaker, read).await? {
                Ok(value) => value,
                Err(error) if error.code().is_some() => None,
                Err(error) => return Err(to_lock_error(error)),
            };
            return Ok((Some(grant), value));
        }
        let mut call = ScriptCall::new(&ACQUIRE_THEN_READ, 4);
        call.key(&*keys.lock)
            .key_from_parts(&keys.fence())
            .key_from_parts(&keys.waiters())
            .key(key)
            .arg_fmt(request.owner.hex())
            .arg(millis(request.ttl))
            .arg("")
            .arg("0")
            .arg(millis(request.ttl))
            .arg(millis(retention))
            .arg_fmt(self.holder_record(request.label));
        let sent = Instant::now();
        let (granted, fence, value): (i64, i64, Option<Vec<u8>>) =
            self.run("acquire", &call).await?;
        match granted {
            1 => {
                let fence = u64::try_from(fence)
                    .map_err(|_| protocol(format!("negative fencing token {fence}")))?;
                let grant = self.lock_grant(keys, request.owner, FencingToken::new(fence), sent);
                Ok((Some(grant), value))
            }
            0 => Ok((None, None)),
            other => Err(protocol(format!("acquire script answered {other}"))),
        }
    }
}
