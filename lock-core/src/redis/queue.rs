//! The lock's waiter queue on Redis: a sorted set of waiter ids by arrival, which a waiter leaves
//! when it stops waiting; and counting the queues ([`QueueBackend`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::keys::LockKeys;
use super::primitive_keys::Family;
use super::shard_wakeups::ChannelHold;
use super::{scripts, RedisBackend};
use crate::backend::{LeaseKind, QueueBackend};
use crate::{LockKey, Result};

/// A waiter's registration: leaving it removes the queue entry, and passes on a wake-up it
/// received but did not use.
pub(super) struct Waiting<'a> {
    pub(super) backend: &'a RedisBackend,
    pub(super) keys: LockKeys,
    pub(super) seq: u64,
    pub(super) notify: Arc<tokio::sync::Notify>,
    pub(super) granted: bool,
    /// The waiter's label in its stored form (part of its id in the queue).
    pub(super) label: String,
    /// On a Redis Cluster, the waiter's wake channel, subscribed before it queued.
    pub(super) _channel: Option<ChannelHold>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.backend.shared.hub.unregister(self.seq);
        if self.granted {
            return; // the acquire script removed the queue entry
        }
        let backend = self.backend.clone();
        let (lock_key, waiters, id) = (
            self.keys.lock.clone(),
            self.keys.waiters_key(),
            self.backend.shared.hub.waiter_id(self.seq, &self.label),
        );
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            // While the server is known to be down nothing reaches it: the entry ends with
            // the queue's lifetime (or with the server's data, after a restart).
            if backend.shared.breaker.check().is_err() {
                return;
            }
            let mut connection = backend.shared.connection.clone();
            backend.shared.commands.fetch_add(2, Ordering::Relaxed);
            let removed: redis::RedisResult<i64> = redis::cmd("ZREM").arg(&waiters).arg(&id).query_async(&mut connection).await;
            // If the entry was already popped, this waiter may have been the one woken: pass it on.
            if matches!(removed, Ok(0)) {
                let passed: redis::RedisResult<i64> = scripts::WAKE
                    .key(&*lock_key)
                    .key(&waiters)
                    .arg(&backend.shared.hub.route)
                    .invoke_async(&mut connection)
                    .await;
                if let Err(error) = passed {
                    tracing::debug!(%error, "passing a wake-up on failed; the next waiter's poll covers it");
                }
            }
        });
    }
}

impl QueueBackend for RedisBackend {
    async fn queue_length(&self, key: &LockKey, kind: LeaseKind) -> Result<usize> {
        if let Some(family) = Family::of(kind) {
            return Ok(self.primitive_info(family, key).await?.0);
        }
        let mut zcard = redis::cmd("ZCARD");
        zcard.arg(LockKeys::new(&self.shared.prefix, key.full()).waiters_key());
        self.query(&zcard).await
    }
}
