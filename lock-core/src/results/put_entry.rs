//! [`PutEntry`]: what [`ResultStore::put`](super::ResultStore::put) stores, and when.

use std::time::Duration;

use super::Replace;

/// An entry to store with [`ResultStore::put`](super::ResultStore::put): its bytes, its
/// fencing token, how long to keep it and when it may replace the entry there.
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
/// let fence = format!("{:020}", 7);
/// let entry = format!("lc1 V {fence} 9.99");
/// let put = PutEntry {
///     fence_digits: &fence,
///     entry: entry.as_bytes(),
///     keep: Duration::from_secs(60),
///     rule: Replace::Older,
/// };
/// assert!(store.put(&key, put).await?);
/// assert!(!store.put(&key, put).await?, "not older: kept as it is");
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PutEntry<'a> {
    /// The entry's fencing token, as the 20 digits its header holds.
    pub fence_digits: &'a str,
    /// The encoded entry (see the [module docs](super) for the header it starts with).
    pub entry: &'a [u8],
    /// How long it is kept; zero pushes it to the waiting processes without storing it (a
    /// value that must not be shared: the waiters compute their own).
    pub keep: Duration,
    /// When it may replace the entry there (an entry of kind `C` is never replaced).
    pub rule: Replace,
}
