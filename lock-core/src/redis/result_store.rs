//! Results in Redis (feature `redis`), pushed to waiting processes by pub/sub.
//!
//! Every key and channel is under the key prefix of the backend the store is connected
//! through ([`RedisBackendBuilder::key_prefix`](crate::redis::RedisBackendBuilder::key_prefix),
//! `lock` by default), so a Redis ACL user limited to `~<prefix>:*` and `&<prefix>:*` can use
//! it. For the key `shop:product:42` with the prefix `lock`:
//! - `lock:cache:{#shop:product:42}`: the encoded entry, expiring when its last window ends;
//! - `lock:cache:{#shop:product:42}:watchers`: the ids of the processes waiting for its next
//!   value (expiring with their wait).
//!
//! A fresh read is one `GET`. Storing is one script: compare fencing tokens, `SET`, then
//! `PUBLISH` the entry to each waiting process's channel (`lock:cache:push:<process id>`), so a
//! process waiting with a thousand callers receives one message. Each store holds one
//! subscription (kept up as the lock's wake-ups are); when it drops, waiting callers still get
//! the value through the lease they also queue for.
//!
//! The store sends its commands through the backend's [circuit breaker](crate::breaker), as it
//! shares the backend's connection: while the server is known to be down, a read fails at once
//! and the cache computes without collapsing, instead of waiting for the connection's timeouts.

use std::any::Any;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use redis::Script;
use tokio::sync::oneshot;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::fused_paths::RedisFusedPaths;
use super::millis;
use crate::breaker::Breaker;
use crate::redis::availability::through;
use crate::redis::subscription::{self, Listener};
use crate::redis::RedisConnection;
use crate::results::{FusedPaths, PutEntry, ResultStore, ValueWatch, Watchers};
use crate::{LockBackend, LockError, LockKey, OwnerToken, RedisBackend, Result};

const STORE: &str = "redis";

static WATCH: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/result_watch.lua")));

static PUT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{}\n{}",
        super::entry_layout::lua_entry_layout(),
        include_str!("lua/result_put.lua")
    ))
});

/// Results in the Redis server of a [`RedisBackend`], sharing its connection; pushes
/// arrive on a subscription of its own.
///
/// ```no_run
/// use lock_core::cache::Cache;
/// use lock_core::redis::RedisResultStore;
/// use lock_core::RedisBackend;
///
/// # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
/// let backend = RedisBackend::connect("redis://127.0.0.1:6379/").await?;
/// let store = RedisResultStore::from_backend(&backend).await?;
/// let cache = Cache::builder(store, backend).namespace("shop").build()?;
/// # let _ = cache; Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisResultStore {
    shared: Arc<Shared>,
}

struct Shared {
    connection: RedisConnection,
    prefix: String,
    client_id: String,
    channel_prefix: String,
    watchers: Arc<Watchers>,
    /// The backend's breaker: the connection is the backend's.
    breaker: Breaker,
    /// The backend the store was connected through (an idempotency client on it claims in one
    /// script, which reads the record and takes the lease).
    backend: RedisBackend,
    _stop: DropGuard,
}

impl RedisResultStore {
    /// A store on `backend`'s server, its keys and channels under the backend's
    /// [key prefix](RedisBackend::key_prefix) (`<prefix>:cache:…`); subscribes for pushes.
    pub async fn from_backend(backend: &RedisBackend) -> Result<Self> {
        let prefix = format!("{}:cache", backend.key_prefix());
        let client_id = OwnerToken::random()?.to_hex()[..16].to_owned();
        let channel_prefix = format!("{prefix}:push:");
        let watchers = Arc::new(Watchers::default());
        let stop = CancellationToken::new();
        let (ready, subscribed) = oneshot::channel();
        let breaker = backend.breaker().clone();
        tokio::spawn(subscription::run(
            backend.pubsub_source(),
            format!("{channel_prefix}{client_id}"),
            breaker.clone(),
            stop.clone(),
            ready,
            PushListener(watchers.clone()),
        ));
        subscribed
            .await
            .map_err(|_| LockError::Protocol {
                backend: STORE,
                detail: "the cache push subscription ended before subscribing".into(),
            })?
            .map_err(|e| LockError::unavailable(STORE, e))?;
        let mut connection = backend.connection();
        for script in [&*WATCH, &*PUT] {
            script
                .prepare_invoke()
                .load_async(&mut connection)
                .await
                .map_err(|e| LockError::unavailable(STORE, e))?;
        }
        Ok(Self {
            shared: Arc::new(Shared {
                connection,
                prefix,
                client_id,
                channel_prefix,
                watchers,
                breaker,
                backend: backend.clone(),
                _stop: stop.drop_guard(),
            }),
        })
    }

    /// The Redis key holding the entry of `full_key` (`namespace:key`):
    /// `<backend prefix>:cache:{#<full_key>}`.
    #[must_use]
    pub fn redis_key(&self, full_key: &str) -> String {
        format!("{}:{{#{full_key}}}", self.shared.prefix)
    }

    /// The backend the store was connected through.
    pub(crate) fn backend(&self) -> &RedisBackend {
        &self.shared.backend
    }

    /// The prefix of the channels values are pushed to (a process id follows).
    pub(crate) fn push_prefix(&self) -> &str {
        &self.shared.channel_prefix
    }

    fn connection(&self) -> RedisConnection {
        self.shared.connection.clone()
    }
}

impl ResultStore for RedisResultStore {
    fn name(&self) -> &'static str {
        STORE
    }

    /// The one-round-trip paths, when `backend` is the very [`RedisBackend`] this store was
    /// connected through (or a clone of it): scripts may then touch its entries and the
    /// backend's leases together.
    fn fused_with<B: LockBackend>(&self, backend: &B) -> Option<Arc<dyn FusedPaths>> {
        let backend = (backend as &dyn Any).downcast_ref::<RedisBackend>()?;
        let paths = RedisFusedPaths {
            store: self.clone(),
        };
        self.backend()
            .same_as(backend)
            .then(|| Arc::new(paths) as Arc<dyn FusedPaths>)
    }

    async fn get(&self, key: &LockKey) -> Result<Option<Vec<u8>>> {
        let mut connection = self.connection();
        let mut get = redis::cmd("GET");
        get.arg(self.redis_key(key.full()));
        through(&self.shared.breaker, get.query_async(&mut connection))
            .await?
            .map_err(to_lock_error)
    }

    async fn watch(&self, key: &LockKey, wait: Duration) -> Result<(ValueWatch, Option<Vec<u8>>)> {
        // Subscribed locally before registering, so a push right after is not missed.
        let watch = self.shared.watchers.subscribe(key.full());
        let entry = self.redis_key(key.full());
        let mut connection = self.connection();
        let mut invocation = WATCH.prepare_invoke();
        invocation
            .key(&entry)
            .key(format!("{entry}:watchers"))
            .arg(&self.shared.client_id)
            .arg(millis(wait + Duration::from_secs(1)));
        let there: Option<Vec<u8>> = through(
            &self.shared.breaker,
            invocation.invoke_async(&mut connection),
        )
        .await?
        .map_err(to_lock_error)?;
        Ok((watch, there))
    }

    async fn put(&self, key: &LockKey, put: PutEntry<'_>) -> Result<bool> {
        let redis_key = self.redis_key(key.full());
        let mut connection = self.connection();
        let mut invocation = PUT.prepare_invoke();
        invocation
            .key(&redis_key)
            .key(format!("{redis_key}:watchers"))
            .arg(put.fence_digits)
            .arg(put.entry)
            .arg(if put.keep.is_zero() {
                0
            } else {
                millis(put.keep)
            })
            .arg(&self.shared.channel_prefix)
            .arg(key.full())
            .arg(super::entry_layout::replace_word(put.rule));
        let stored: i64 = through(
            &self.shared.breaker,
            invocation.invoke_async(&mut connection),
        )
        .await?
        .map_err(to_lock_error)?;
        Ok(stored == 1)
    }

    async fn remove(&self, key: &LockKey) -> Result<()> {
        let mut connection = self.connection();
        let mut del = redis::cmd("DEL");
        del.arg(self.redis_key(key.full()));
        through(
            &self.shared.breaker,
            del.query_async::<i64>(&mut connection),
        )
        .await?
        .map(drop)
        .map_err(to_lock_error)
    }
}

/// Hands pushed entries to the local waiters of their key. After a drop, waiters that missed
/// a push still get the value through the lease they also queue for.
struct PushListener(Arc<Watchers>);

impl Listener for PushListener {
    async fn message(&mut self, payload: &[u8]) {
        match split_push(payload) {
            Some((key, entry)) => self.0.deliver(key, Arc::new(entry.to_vec())),
            None => tracing::warn!("ignoring a malformed cache push"),
        }
    }

    async fn subscribed(&mut self, _first: bool) {}

    fn dropped(&mut self) {}
}

/// `<key length> <key><entry>` → `(key, entry)`.
fn split_push(payload: &[u8]) -> Option<(&str, &[u8])> {
    let space = payload.iter().position(|&b| b == b' ')?;
    let length: usize = std::str::from_utf8(&payload[..space]).ok()?.parse().ok()?;
    let rest = &payload[space + 1..];
    let key = std::str::from_utf8(rest.get(..length)?).ok()?;
    Some((key, &rest[length..]))
}

fn to_lock_error(error: redis::RedisError) -> LockError {
    LockError::unavailable(STORE, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_carry_any_key() {
        let key = "shop:we ird\nkey";
        let payload = format!("{} {key}lc1 V ...", key.len());
        assert_eq!(
            split_push(payload.as_bytes()),
            Some((key, &b"lc1 V ..."[..]))
        );
        assert_eq!(split_push(b"99 short"), None);
        assert_eq!(split_push(b"x key"), None);
    }
}
