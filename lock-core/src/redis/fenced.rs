//! A fenced value in Redis: written only by a token at least the largest seen for it.

use std::sync::LazyLock;

use super::RedisConnection;
use redis::Script;

use crate::fenced::FencedWrite;
use crate::{FencingToken, LockError, LockKey, RedisBackend, Result};

/// Writes `value` and the token into the hash KEYS[1] unless it holds a larger token.
/// Tokens travel as 20-digit text, so they compare exactly (as text) in Lua, whose numbers
/// lose precision above 2^53.
static WRITE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"-- KEYS[1] the value's hash {fence, value}   ARGV[1] token (20 digits)   ARGV[2] value
-- Returns {1, token} when written, {0, largest token seen} when refused.
local seen = redis.call('HGET', KEYS[1], 'fence')
if seen and seen > ARGV[1] then
  return {0, seen}
end
redis.call('HSET', KEYS[1], 'fence', ARGV[1], 'value', ARGV[2])
return {1, ARGV[1]}",
    )
});

/// Values in Redis that refuse stale writers: each keeps the largest fencing token that wrote
/// it, and a write with a smaller token changes nothing ([`FencedWrite::Refused`]). Equal
/// tokens pass, so one holder may write several times under one lease.
///
/// Use it for the resource a lock protects when that resource is a Redis value, or as the
/// model of the check to put in front of any other store.
///
/// The value of `key` is the hash `<prefix>:fenced:<key>` (fields `fence` and `value`), where
/// `<prefix>` is the key prefix of the backend the store is connected through (`lock` by
/// default), or the one given to [`with_key_prefix`](Self::with_key_prefix).
///
/// ```no_run
/// use lock_core::redis::RedisFencedStore;
/// use lock_core::{LockClient, RedisBackend};
///
/// # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
/// let backend = RedisBackend::connect("redis://127.0.0.1:6379/").await?;
/// let store = RedisFencedStore::from_backend(&backend).await?;
/// let locks = LockClient::new(backend);
/// let guard = locks.lock("report").await?;
/// let write = store.write("report:latest", guard.fencing_token(), b"v2").await?;
/// assert!(write.is_accepted(), "refused: a newer holder wrote first");
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisFencedStore {
    connection: RedisConnection,
    prefix: String,
}

impl RedisFencedStore {
    /// A store on `backend`'s server, its keys under the backend's
    /// [key prefix](RedisBackend::key_prefix): `<prefix>:fenced:<key>`.
    pub async fn from_backend(backend: &RedisBackend) -> Result<Self> {
        Self::from_connection(backend.connection()).with_key_prefix(backend.key_prefix())
    }

    /// A store on a connection you already have (a `ConnectionManager`, a Redis Cluster
    /// connection, or any [`RedisConnection`]), its keys under the default key prefix
    /// `lock` (`lock:fenced:<key>`, as with a backend's default); give it the prefix of your
    /// backend with [`with_key_prefix`](Self::with_key_prefix).
    #[must_use]
    pub fn from_connection(connection: impl Into<RedisConnection>) -> Self {
        Self {
            connection: connection.into(),
            prefix: "lock:fenced".to_owned(),
        }
    }

    /// The store with its keys under `prefix` instead (`<prefix>:fenced:<key>`), as
    /// [`RedisBackendBuilder::key_prefix`](crate::redis::RedisBackendBuilder::key_prefix) places a
    /// backend's: give both the same prefix, and a Redis ACL user limited to `~<prefix>:*`
    /// can use them.
    ///
    /// ```no_run
    /// use lock_core::redis::RedisFencedStore;
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = redis::Client::open("redis://127.0.0.1:6379/")?;
    /// let connection = redis::aio::ConnectionManager::new(client).await?;
    /// let store = RedisFencedStore::from_connection(connection).with_key_prefix("orders")?;
    /// assert_eq!(store.redis_key("report")?, "orders:fenced:report");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`LockError::InvalidConfig`] for an empty prefix or one with `{` or `}`.
    pub fn with_key_prefix(mut self, prefix: &str) -> Result<Self> {
        crate::redis::validate_prefix(prefix)?;
        self.prefix = format!("{prefix}:fenced");
        Ok(self)
    }

    /// Writes `value` to `key` if `fence` is at least the largest token that wrote it.
    pub async fn write(&self, key: &str, fence: FencingToken, value: &[u8]) -> Result<FencedWrite> {
        let key = self.redis_key(key)?;
        let token = format!("{:020}", fence.get());
        let (written, newest): (i64, String) = WRITE
            .key(key)
            .arg(token)
            .arg(value)
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(|e| LockError::unavailable("redis", e))?;
        if written == 1 {
            return Ok(FencedWrite::Accepted);
        }
        Ok(FencedWrite::Refused {
            newest: parse_token(&newest)?,
        })
    }

    /// The value at `key` and the token that wrote it, if any.
    pub async fn read(&self, key: &str) -> Result<Option<(FencingToken, Vec<u8>)>> {
        let key = self.redis_key(key)?;
        let (fence, value): (Option<String>, Option<Vec<u8>>) = redis::cmd("HMGET")
            .arg(key)
            .arg("fence")
            .arg("value")
            .query_async(&mut self.connection.clone())
            .await
            .map_err(|e| LockError::unavailable("redis", e))?;
        match (fence, value) {
            (Some(fence), Some(value)) => Ok(Some((parse_token(&fence)?, value))),
            _ => Ok(None),
        }
    }

    /// The Redis key holding the value of `key`: `<prefix>:fenced:<key>`.
    ///
    /// # Errors
    /// [`LockError::InvalidKey`] for a key a lock could not have (empty, too long).
    pub fn redis_key(&self, key: &str) -> Result<String> {
        let key = LockKey::new("", key)?;
        Ok(format!("{}:{}", self.prefix, key.full()))
    }
}

fn parse_token(text: &str) -> Result<FencingToken> {
    text.parse()
        .map(FencingToken::new)
        .map_err(|_| LockError::Protocol {
            backend: "redis",
            detail: format!("a fenced value holds the token {text:?}"),
        })
}

impl std::fmt::Debug for RedisFencedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisFencedStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}
