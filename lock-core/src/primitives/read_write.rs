//! The read-write lock: many readers or one writer.

use crate::backend::LeaseKind;
use crate::{LockClient, LockRequest};

/// A read-write lock: any number of readers together, or one writer alone. Made by
/// [`LockClient::read_write_lock`]; cheap to clone.
///
/// - Each reader holds a lease of its own, kept alive by the watchdog: a reader that crashes
///   frees only its share, when its lease runs out.
/// - A waiting writer blocks newer readers, so a stream of readers cannot starve writers.
/// - A task holding the write lock may take the read lock too (to downgrade: take the read
///   lock, then release the write lock). A task holding the read lock that asks for the write
///   lock gets [`LockError::UpgradeRefused`](crate::LockError::UpgradeRefused) at once: two
///   readers doing that would wait for each other forever.
/// - Fencing tokens of reads and writes come from one counter per lock: a writer's token is
///   larger than every token handed out before it.
///
/// It is its own lock in the store: `read_write_lock("k")` and [`LockClient::lock`]`("k")` do
/// not exclude each other.
///
/// ```
/// use lock_core::{LockClient, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(MemoryBackend::new());
/// let prices = locks.read_write_lock("prices");
/// let a = prices.read().await?;
/// let b = tokio::spawn({
///     let prices = prices.clone();
///     async move { prices.read().try_acquire().await }
/// });
/// assert!(b.await.unwrap()?.is_some(), "readers share");
/// assert!(prices.write().try_acquire().await.is_err(), "this task reads: no upgrade");
/// a.release().await?;
/// let writer = prices.write().await?;
/// writer.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ReadWriteLock {
    client: LockClient,
    name: String,
}

impl ReadWriteLock {
    /// The lock named `name`; made by [`LockClient::read_write_lock`].
    pub(crate) fn new(client: LockClient, name: String) -> Self {
        Self { client, name }
    }

    /// Starts a request for a read share.
    ///
    /// ```
    /// # use lock_core::{LockClient, MemoryBackend};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let config = LockClient::new(MemoryBackend::new()).read_write_lock("config");
    /// let reading = config.read().try_acquire().await?.expect("no writer");
    /// # drop(reading); Ok(()) }
    /// ```
    pub fn read(&self) -> LockRequest<'_> {
        LockRequest::of_kind(&self.client, self.name.clone(), LeaseKind::Read)
    }

    /// Starts a request for the write lock.
    ///
    /// ```
    /// # use lock_core::{LockClient, MemoryBackend};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let config = LockClient::new(MemoryBackend::new()).read_write_lock("config");
    /// let writing = config.write().await?;
    /// let reading = config.read().await?; // a writer may read: downgrade
    /// writing.release().await?;
    /// # drop(reading); Ok(()) }
    /// ```
    pub fn write(&self) -> LockRequest<'_> {
        LockRequest::of_kind(&self.client, self.name.clone(), LeaseKind::Write)
    }

    /// The lock's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}
