//! The lookups a cache user reaches for beside `try_get_with`, as moka offers them: the
//! stored value without computing it ([`CacheRequest::get`]), and a value stored as if
//! computed ([`CacheRequest::insert`]). [`Cache::invalidate`](super::Cache::invalidate)
//! removes one.

use std::time::{Duration, SystemTime};

use super::call::cached;
use super::codec::Codec;
use super::entry::{Age, Kind, StoredEntry};
use super::{CacheError, CacheFailure, CacheRequest, CacheStatus, Cached};
use crate::{LockKey, LockOwner};

impl<C> CacheRequest<'_, C> {
    /// The value stored under the key if it is fresh ([`CacheStatus::Hit`]), else `None`
    /// (missing, stale, a remembered failure): one read of the store, no lock, no computation,
    /// no refresh. The request's windows do not matter: a value is fresh as it was stored.
    ///
    /// ```
    /// use lock_core::cache::{Cache, CacheStatus};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let cache = Cache::memory("shop")?;
    /// assert!(cache.entry("product:1").utf8().get().await?.is_none());
    /// cache.entry("product:1").utf8().insert("lamp".to_owned()).await?;
    /// let got = cache.entry("product:1").utf8().get().await?.expect("fresh");
    /// assert_eq!((got.value.as_str(), got.status), ("lamp", CacheStatus::Hit));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`CacheError::Lock`] for a bad key or a store that cannot be read,
    /// [`CacheError::Decode`] for a stored value the codec cannot read.
    pub async fn get<V>(self) -> Result<Option<Cached<V>>, CacheFailure>
    where
        C: Codec<V>,
    {
        let inner = &self.cache.inner;
        let key = LockKey::new(&inner.namespace, &self.key)?;
        let Some(bytes) = inner.store.get(&key).await? else {
            return Ok(None);
        };
        let entry = match StoredEntry::decode(&bytes) {
            Ok(entry) => entry,
            Err(error) => {
                tracing::warn!(%key, error = %error.with_causes(), "ignoring an unreadable cache entry");
                return Ok(None);
            }
        };
        let now = SystemTime::now();
        // A value, or the value a failure kept in place (served as that value, while fresh).
        let value = match entry.kind {
            Kind::Value | Kind::FailedOver => entry.value(),
            Kind::Error | Kind::Pass => None,
        };
        let Some(value) = value.filter(|value| value.age(now) == Age::Fresh) else {
            return Ok(None);
        };
        let found = cached(&value, CacheStatus::Hit, now);
        let decoded = self
            .codec
            .decode(&found.value)
            .map_err(CacheError::Decode)?;
        Ok(Some(found.map(|_| decoded)))
    }

    /// Stores `value` under the key with the request's windows ([`fresh_for`](Self::fresh_for)
    /// and the others), in place of what is there: under the key's lease, as a computation
    /// stores, so it is pushed to the callers waiting for the key, and a computation that was
    /// running meanwhile (under an older lease) does not overwrite it. Waits for that lease
    /// as long as the request waits for another caller's computation
    /// ([`wait_at_most`](Self::wait_at_most)). False when a newer entry was stored meanwhile
    /// (by a caller whose lease came after this one's), which stays.
    ///
    /// ```
    /// use std::time::Duration;
    /// use lock_core::cache::{Cache, CacheStatus};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let cache = Cache::memory("shop")?;
    /// let stored = cache
    ///     .entry("price:7")
    ///     .fresh_for(Duration::from_secs(30))
    ///     .insert(b"9.99".to_vec())
    ///     .await?;
    /// assert!(stored);
    /// let read = cache
    ///     .entry("price:7")
    ///     .try_get_with(|| async { Ok::<_, std::io::Error>(b"never computed".to_vec()) })
    ///     .await?;
    /// assert_eq!((read.value.as_slice(), read.status), (&b"9.99"[..], CacheStatus::Hit));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`CacheError::Lock`] for a bad key or windows, or a backend that cannot be reached;
    /// [`CacheError::WaitTimedOut`] when a computation held the key's lease for the whole
    /// wait; [`CacheError::TooLarge`] over the cache's size limit; [`CacheError::Decode`]
    /// when the codec cannot encode the value.
    pub async fn insert<V>(self, value: V) -> Result<bool, CacheFailure>
    where
        C: Codec<V>,
    {
        let inner = &self.cache.inner;
        let key = LockKey::new(&inner.namespace, &self.key)?;
        let freshness = self.freshness.validate()?;
        super::policy::validate_wait("cache wait", self.wait)?;
        let bytes = self.codec.encode(&value).map_err(CacheError::Decode)?;
        if bytes.len() > inner.max_value_bytes {
            return Err(CacheError::TooLarge {
                size: bytes.len(),
                limit: inner.max_value_bytes,
            });
        }
        // An owner of its own, as a computation's lease has (see `Call::lease`).
        let lease = inner.locks.lock(key.name()).owner(&LockOwner::new());
        let Some(guard) = lease.acquire_within(self.wait).await? else {
            return Err(CacheError::WaitTimedOut(self.wait));
        };
        let entry = StoredEntry::new(
            Kind::Value,
            guard.fencing_token(),
            Duration::ZERO,
            &freshness,
            bytes,
        );
        let keep = entry.keep_for();
        let stored = entry.put_on(&*inner.store, &key, keep).await;
        // As after a computation: the key's fencing state lives as long as its entry, so
        // the next lease's token is larger.
        if matches!(stored, Ok(true)) {
            if let Err(error) = guard.keep_fence_for(keep).await {
                tracing::debug!(%key, error = %error.with_causes(), "keeping a cache key's fencing state failed; the server clock keeps tokens increasing");
            }
        }
        super::call::release(guard).await;
        Ok(stored?)
    }
}
