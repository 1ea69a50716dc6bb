//! Where computed values live, and how they reach the callers waiting for them.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use super::PutEntry;
use crate::backend::BoxFuture;
use crate::{LockKey, Result};

/// A store of results that pushes each stored entry to the processes waiting for it.
/// Implemented by [`MemoryResultStore`](crate::memory::MemoryResultStore) and, with the `redis` and
/// `postgres` features, `RedisResultStore` and `PostgresResultStore`; used through
/// [`Cache`](crate::cache::Cache) and [`Idempotency`](crate::idempotency::Idempotency), which
/// hold it as a [`DynResultStore`].
///
/// A store keeps encoded entries (see the [module docs](super) for the header every entry
/// starts with, the only part a store reads) by [`LockKey`], replaces one only as
/// [`Replace`] says, and pushes every stored entry to the waiting processes; [`Watchers`]
/// is the in-process half of that.
///
/// ```
/// use std::time::Duration;
/// use lock_core::results::{PutEntry, Replace, ResultStore};
/// use lock_core::memory::MemoryResultStore;
/// use lock_core::LockKey;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let store = MemoryResultStore::new();
/// let key = LockKey::new("shop", "price:42")?;
/// let (mut watch, there) = store.watch(&key, Duration::from_secs(5)).await?;
/// assert!(there.is_none());
/// let fence = format!("{:020}", 7);
/// let entry = format!("lc1 V {fence} 9.99");
/// let put = PutEntry { fence_digits: &fence, entry: entry.as_bytes(), keep: Duration::from_secs(60), rule: Replace::Older };
/// assert!(store.put(&key, put).await?);
/// assert_eq!(watch.next_bytes().await.unwrap().as_slice(), entry.as_bytes(), "pushed");
/// assert_eq!(store.get(&key).await?.unwrap(), entry.as_bytes());
/// # Ok(()) }
/// ```
pub trait ResultStore: Send + Sync + 'static {
    /// The store's name, for errors and tracing.
    fn name(&self) -> &'static str;

    /// Reads the entry of `key` (one round trip).
    fn get(&self, key: &LockKey) -> impl Future<Output = Result<Option<Vec<u8>>>> + Send;

    /// Registers this process as waiting for the next entry stored under `key` for up to
    /// `wait`, and returns the entry there now, in one step, so that no push can fall between
    /// the read and the registration.
    fn watch(
        &self,
        key: &LockKey,
        wait: Duration,
    ) -> impl Future<Output = Result<(ValueWatch, Option<Vec<u8>>)>> + Send;

    /// Stores `put.entry` under `key` for `put.keep` if `put.rule` lets it replace the entry
    /// there (an entry of kind `C` is never replaced; see the [module docs](super)); then
    /// pushes it to every waiting process. Returns whether it was stored. A `keep` of zero
    /// pushes without storing.
    fn put(&self, key: &LockKey, put: PutEntry<'_>) -> impl Future<Output = Result<bool>> + Send;

    /// Deletes the entry of `key`.
    fn remove(&self, key: &LockKey) -> impl Future<Output = Result<()>> + Send;

    /// Where an idempotency claim can complete its record inside the application's own
    /// transaction, when the entries are in a database that takes one (a
    /// `PostgresResultStore`'s table): `ClaimInfo::commit_in` then writes there. The default:
    /// `None`, for every other store.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    fn commit_place(&self) -> Option<std::sync::Arc<dyn super::CommitPlace>> {
        None
    }

    /// The one-round-trip paths this store offers with `backend`, the lock backend the
    /// leases are taken on (see [`FusedPaths`](super::FusedPaths)): a `RedisResultStore`
    /// connected through that very backend offers them. The default: `None`.
    #[doc(hidden)]
    fn fused_with<B: crate::LockBackend>(
        &self,
        backend: &B,
    ) -> Option<std::sync::Arc<dyn super::FusedPaths>> {
        let _ = backend;
        None
    }
}

/// The object-safe form of [`ResultStore`], implemented for every `ResultStore`.
pub trait DynResultStore: Send + Sync {
    /// See [`ResultStore::name`].
    fn name(&self) -> &'static str;
    /// See [`ResultStore::get`].
    fn get<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<Option<Vec<u8>>>>;
    /// See [`ResultStore::watch`].
    fn watch<'a>(
        &'a self,
        key: &'a LockKey,
        wait: Duration,
    ) -> BoxFuture<'a, Result<(ValueWatch, Option<Vec<u8>>)>>;
    /// See [`ResultStore::put`].
    fn put<'a>(&'a self, key: &'a LockKey, put: PutEntry<'a>) -> BoxFuture<'a, Result<bool>>;
    /// See [`ResultStore::remove`].
    fn remove<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<()>>;
    /// See [`ResultStore::commit_place`].
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    fn commit_place(&self) -> Option<std::sync::Arc<dyn super::CommitPlace>>;
}

impl<S: ResultStore> DynResultStore for S {
    fn name(&self) -> &'static str {
        ResultStore::name(self)
    }

    fn get<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<Option<Vec<u8>>>> {
        Box::pin(ResultStore::get(self, key))
    }

    fn watch<'a>(
        &'a self,
        key: &'a LockKey,
        wait: Duration,
    ) -> BoxFuture<'a, Result<(ValueWatch, Option<Vec<u8>>)>> {
        Box::pin(ResultStore::watch(self, key, wait))
    }

    fn put<'a>(&'a self, key: &'a LockKey, put: PutEntry<'a>) -> BoxFuture<'a, Result<bool>> {
        Box::pin(ResultStore::put(self, key, put))
    }

    fn remove<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<()>> {
        Box::pin(ResultStore::remove(self, key))
    }

    #[cfg(any(feature = "postgres", feature = "mysql"))]
    fn commit_place(&self) -> Option<std::sync::Arc<dyn super::CommitPlace>> {
        ResultStore::commit_place(self)
    }
}

/// Which entries a [`ResultStore::put`] replaces, by the fencing token of the claim that
/// stored them (`Older` than the put's, or `OlderOrSame`); a final entry (kind `C`) never.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replace {
    /// Only an entry of an older claim: a cache value over a value.
    Older,
    /// An entry of an older claim or of the same one: a claim completing its own record.
    OlderOrSame,
}

/// The entries pushed for one key, as one process receives them; made by
/// [`Watchers::subscribe`].
pub struct ValueWatch {
    pub(crate) receiver: broadcast::Receiver<Arc<Vec<u8>>>,
    /// The entry the watch began with, for stores whose pushes can trail their reads (a
    /// notification of a put the read already saw): a push of it, or of an entry it would
    /// not give way to, is not news.
    seen: Option<Vec<u8>>,
}

impl ValueWatch {
    /// The next pushed entry, encoded; `None` when the store's push channel closed.
    pub async fn next_bytes(&mut self) -> Option<Arc<Vec<u8>>> {
        loop {
            match self.receiver.recv().await {
                Ok(bytes) if self.is_news(&bytes) => return Some(bytes),
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// A pushed entry that has already arrived, without waiting; `None` when there is none
    /// (yet) or the channel closed.
    pub fn try_next_bytes(&mut self) -> Option<Arc<Vec<u8>>> {
        loop {
            match self.receiver.try_recv() {
                Ok(bytes) if self.is_news(&bytes) => return Some(bytes),
                Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) => {}
                Err(_) => return None,
            }
        }
    }

    /// The same watch, ignoring pushes of `there` (what the watch read) and of entries older
    /// than it.
    #[cfg(feature = "postgres")]
    pub(crate) fn after(mut self, there: Option<&[u8]>) -> Self {
        self.seen = there.map(<[u8]>::to_vec);
        self
    }

    fn is_news(&self, pushed: &[u8]) -> bool {
        let Some(seen) = &self.seen else {
            return true;
        };
        if pushed == seen.as_slice() {
            return false;
        }
        let fence = pushed
            .get(super::FENCE_AT..super::FENCE_AT + super::FENCE_DIGITS)
            .and_then(|fence| std::str::from_utf8(fence).ok());
        fence.is_none_or(|fence| super::may_replace(seen, fence, Replace::OlderOrSame))
    }
}

/// The in-process side of a store's pushes: one channel per watched key, shared by every local
/// waiter of that key, dropped when the last one goes. A store subscribes in
/// [`watch`](ResultStore::watch) and delivers what its server pushes (and, for a store in this
/// process alone, what it stores).
///
/// ```
/// use std::sync::Arc;
/// use lock_core::results::Watchers;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let watchers = Watchers::default();
/// let mut watch = watchers.subscribe("shop:price:42");
/// watchers.deliver("shop:price:42", Arc::new(b"lc1 V 00000000000000000007 9.99".to_vec()));
/// assert!(watch.next_bytes().await.is_some());
/// # }
/// ```
#[derive(Default)]
pub struct Watchers {
    keys: std::sync::Mutex<std::collections::HashMap<String, broadcast::Sender<Arc<Vec<u8>>>>>,
}

impl Watchers {
    /// A watch of the entries delivered for `key` (a full key, `namespace:key`) from now on.
    pub fn subscribe(&self, key: &str) -> ValueWatch {
        let mut keys = crate::sync::lock(&self.keys);
        keys.retain(|_, sender| sender.receiver_count() > 0);
        let sender = keys
            .entry(key.to_owned())
            .or_insert_with(|| broadcast::channel(4).0);
        ValueWatch {
            receiver: sender.subscribe(),
            seen: None,
        }
    }

    /// Whether some local waiter watches `key` (so a push naming only the key is worth a read).
    #[cfg(feature = "postgres")]
    pub(crate) fn is_watched(&self, key: &str) -> bool {
        let keys = crate::sync::lock(&self.keys);
        keys.get(key)
            .is_some_and(|sender| sender.receiver_count() > 0)
    }

    /// Hands `entry` to the local waiters of `key`, if any.
    pub fn deliver(&self, key: &str, entry: Arc<Vec<u8>>) {
        let keys = crate::sync::lock(&self.keys);
        if let Some(sender) = keys.get(key) {
            sender.send(entry).ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_that_read_an_entry_ignores_pushes_of_it_and_of_older_ones() {
        let entry = |kind: char, fence: u64, body: &str| {
            format!("lc1 {kind} {fence:020} {body}").into_bytes()
        };
        let mut watch = Watchers::default().subscribe("ns:k");
        assert!(
            watch.is_news(&entry('V', 1, "a")),
            "a fresh watch takes anything"
        );
        watch.seen = Some(entry('I', 5, "in flight"));
        assert!(!watch.is_news(&entry('I', 5, "in flight")));
        assert!(!watch.is_news(&entry('V', 4, "older")));
        assert!(watch.is_news(&entry('C', 5, "completed")));
        assert!(watch.is_news(&entry('V', 6, "newer")));
        assert!(watch.is_news(b"not ours"));
        watch.seen = Some(entry('C', 5, "completed"));
        assert!(!watch.is_news(&entry('V', 9, "after a final one")));
    }
}
