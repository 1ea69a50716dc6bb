//! Where computed values live, and how they reach the callers waiting for them.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use crate::backend::BoxFuture;
use crate::{LockKey, Result};

/// A store of results that pushes each stored entry to the processes waiting for it.
/// Implemented by [`MemoryResultStore`](super::MemoryResultStore) and, with the `redis` and
/// `postgres` features, `RedisResultStore` and `PostgresResultStore`; used through
/// [`Cache`](crate::cache::Cache) and [`Idempotency`](crate::idempotency::Idempotency).
pub trait ResultStore: Send + Sync + 'static {
    /// The store's name, for errors and tracing.
    fn name(&self) -> &'static str;

    /// Reads the entry of `key` (one round trip).
    #[doc(hidden)]
    fn get<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<Option<Vec<u8>>>>;

    /// Registers this process as waiting for the next entry stored under `key` for up to
    /// `wait`, and returns the entry there now, in one step, so that no push can fall between
    /// the read and the registration.
    #[doc(hidden)]
    fn watch<'a>(
        &'a self,
        key: &'a LockKey,
        wait: Duration,
    ) -> BoxFuture<'a, Result<(ValueWatch, Option<Vec<u8>>)>>;

    /// Stores `entry` (encoded) for `keep` if `rule` lets it replace the entry there (an
    /// entry of kind `C` is never replaced; see the [module docs](super)); then pushes it to
    /// every waiting process. Returns whether it was stored. A `keep` of zero pushes without
    /// storing (a value that must not be shared: the waiters compute their own).
    #[doc(hidden)]
    fn put<'a>(
        &'a self,
        key: &'a LockKey,
        fence_digits: &'a str,
        entry: &'a [u8],
        keep: Duration,
        rule: Replace,
    ) -> BoxFuture<'a, Result<bool>>;

    /// Deletes the entry of `key`.
    #[doc(hidden)]
    fn remove<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<()>>;

    /// The PostgreSQL table the entries are kept in, when they are (`PostgresResultStore`):
    /// an idempotency claim then completes its record inside the application's own
    /// transaction ([`ClaimInfo::commit_in`](crate::idempotency::ClaimInfo::commit_in)).
    #[cfg(feature = "postgres")]
    #[doc(hidden)]
    fn postgres_table(&self) -> Option<&str> {
        None
    }
}

/// Which entries a [`ResultStore::put`] replaces, by the fencing token of the claim that
/// stored them (`Older` than the put's, or `OlderOrSame`); a final entry (kind `C`) never.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replace {
    /// Only an entry of an older claim: a cache value over a value.
    Older,
    /// An entry of an older claim or of the same one: a claim completing its own record.
    OlderOrSame,
}

/// The entries pushed for one key, as one process receives them.
#[doc(hidden)]
pub struct ValueWatch {
    pub(crate) receiver: broadcast::Receiver<Arc<Vec<u8>>>,
    /// The entry the watch began with, for stores whose pushes can trail their reads (a
    /// notification of a put the read already saw): a push of it, or of an entry it would
    /// not give way to, is not news.
    seen: Option<Vec<u8>>,
}

impl ValueWatch {
    /// The next pushed entry, encoded; `None` when the store's push channel closed.
    #[doc(hidden)]
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
    #[doc(hidden)]
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

/// The in-process side of pushes: one broadcast channel per watched key, shared by every
/// local waiter of that key; dropped when the last receiver goes.
#[derive(Default)]
pub(crate) struct Watchers {
    keys: std::sync::Mutex<std::collections::HashMap<String, broadcast::Sender<Arc<Vec<u8>>>>>,
}

impl Watchers {
    pub(crate) fn subscribe(&self, key: &str) -> ValueWatch {
        let mut keys = crate::lock::held::lock(&self.keys);
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
        let keys = crate::lock::held::lock(&self.keys);
        keys.get(key)
            .is_some_and(|sender| sender.receiver_count() > 0)
    }

    /// Hands `entry` to the local waiters of `key`, if any.
    pub(crate) fn deliver(&self, key: &str, entry: Arc<Vec<u8>>) {
        let keys = crate::lock::held::lock(&self.keys);
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
