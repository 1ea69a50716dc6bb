//! Results in this process's memory, with the same rules as the Redis store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::results::{PutEntry, ResultStore, ValueWatch, Watchers};
use crate::sync::lock;
use crate::{LockKey, Result};

/// Results kept in memory, for one process (tests, the demo, a single instance). Clones
/// share the entries.
///
/// ```
/// use lock_core::cache::Cache;
/// use lock_core::memory::MemoryResultStore;
/// use lock_core::MemoryBackend;
///
/// let cache = Cache::builder(MemoryResultStore::new(), MemoryBackend::new())
///     .namespace("shop")
///     .build()
///     .unwrap();
/// # let _ = cache;
/// ```
#[derive(Clone, Default)]
pub struct MemoryResultStore {
    shared: Arc<Shared>,
}

/// An encoded entry and when the store lets go of it.
type Kept = (Arc<Vec<u8>>, Instant);

#[derive(Default)]
struct Shared {
    entries: Mutex<HashMap<String, Kept>>,
    watchers: Watchers,
}

impl MemoryResultStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// How many entries it holds (expired ones are dropped when read or overwritten).
    #[must_use]
    pub fn len(&self) -> usize {
        lock(&self.shared.entries).len()
    }

    /// True when it holds no entry.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn read(&self, key: &str) -> Option<Vec<u8>> {
        let mut entries = lock(&self.shared.entries);
        match entries.get(key) {
            Some((bytes, until)) if *until > Instant::now() => Some(bytes.as_ref().clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }
}

impl ResultStore for MemoryResultStore {
    fn name(&self) -> &'static str {
        "memory"
    }

    async fn get(&self, key: &LockKey) -> Result<Option<Vec<u8>>> {
        Ok(self.read(key.full()))
    }

    async fn watch(&self, key: &LockKey, _wait: Duration) -> Result<(ValueWatch, Option<Vec<u8>>)> {
        let watch = self.shared.watchers.subscribe(key.full());
        Ok((watch, self.read(key.full())))
    }

    async fn put(&self, key: &LockKey, put: PutEntry<'_>) -> Result<bool> {
        let stored = {
            let mut entries = lock(&self.shared.entries);
            let now = Instant::now();
            let kept_there = entries.get(key.full()).is_some_and(|(bytes, until)| {
                *until > now && !crate::results::may_replace(bytes, put.fence_digits, put.rule)
            });
            if kept_there {
                None
            } else if put.keep.is_zero() {
                // A pass: pushed to the waiters, never stored.
                Some(Arc::new(put.entry.to_vec()))
            } else {
                let bytes = Arc::new(put.entry.to_vec());
                entries.insert(key.full().to_owned(), (bytes.clone(), now + put.keep));
                Some(bytes)
            }
        };
        Ok(match stored {
            Some(bytes) => {
                self.shared.watchers.deliver(key.full(), bytes);
                true
            }
            None => false,
        })
    }

    async fn remove(&self, key: &LockKey) -> Result<()> {
        lock(&self.shared.entries).remove(key.full());
        Ok(())
    }
}
