//! Several locks taken as one ([`MultiLock`]): all of them or none, in one order every process
//! shares, so two multi-locks over overlapping keys never wait for each other in a circle;
//! held as one [`MultiGuard`].
//!
//! The parts may be on different backends (a Redis lock and a PostgreSQL lock, say), and may
//! be any lock request: a lock, a fair lock, either side of a read-write lock. They are taken
//! one after another in the order of their full keys (then primitive, then backend), whatever
//! order they were given in. When one cannot be had (busy when waiting ends, or an error), the
//! parts already held are released, last first, before the answer returns; when the acquiring
//! future is dropped half-way, the parts it held are released by their guards' drop.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use crate::lock::request::{granted, RequestPlace};
use crate::{LockError, LockGuard, LockKey, LockRequest, LostReason, Result, WaitPolicy};

/// Several lock requests taken together: all or none, in one order every process shares
/// (by full key, then primitive, then backend, whatever order they were given in), so two
/// multi-locks over overlapping keys never wait for each other in a circle. The parts may be
/// on different backends, and may be any lock request (a lock, a fair lock, either side of a
/// read-write lock) with its own settings. When one cannot be had, the parts already taken
/// are released, last first, before the answer returns; an acquisition dropped half-way
/// releases them through their guards' drop.
///
/// ```
/// use std::time::Duration;
/// use lock_core::{LockClient, MemoryBackend, MultiLock};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let orders = LockClient::new(MemoryBackend::new());
/// let stock = LockClient::new(MemoryBackend::new()); // another backend
/// let both = MultiLock::new([orders.lock("order:7"), stock.lock("sku:42")])
///     .acquire_within(Duration::from_secs(1))
///     .await?
///     .expect("nobody else holds them");
/// for part in both.parts() {
///     println!("{} fenced by {:?}", part.key(), part.fencing_token());
/// }
/// assert!(both.release().await?);
/// # Ok(()) }
/// ```
#[must_use = "a multi-lock does nothing until acquired"]
pub struct MultiLock<'a> {
    parts: Vec<LockRequest<'a>>,
}

impl<'a> MultiLock<'a> {
    /// The requests to take together (settings such as the lease or the owner stay each
    /// request's own).
    pub fn new(parts: impl IntoIterator<Item = LockRequest<'a>>) -> Self {
        Self {
            parts: parts.into_iter().collect(),
        }
    }

    /// One more request to take with the others.
    ///
    /// ```
    /// use lock_core::{LockClient, MemoryBackend, MultiLock};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let locks = LockClient::new(MemoryBackend::new());
    /// let guard = MultiLock::new([locks.lock("a")]).and(locks.fair_lock("b")).await?;
    /// assert_eq!(guard.parts().len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn and(mut self, part: LockRequest<'a>) -> Self {
        self.parts.push(part);
        self
    }

    /// Tries each part once: `Ok(None)` when one of them is held by another owner (the others
    /// are released again).
    pub async fn try_acquire(self) -> Result<Option<MultiGuard>> {
        self.acquire_with(WaitPolicy::Try).await
    }

    /// Waits up to `wait` in all: `Ok(None)` when a part was still held by another owner by
    /// then (the parts taken are released again).
    pub async fn acquire_within(self, wait: Duration) -> Result<Option<MultiGuard>> {
        self.acquire_with(WaitPolicy::from(wait)).await
    }

    /// Acquires with the given waiting policy, one deadline for all the parts: `Ok(None)` when
    /// a part was still held by another owner when waiting ended. An error (a part's backend
    /// failing, an invalid key, no parts, the same lock twice) comes back once the parts
    /// already taken are released.
    pub async fn acquire_with(self, wait: WaitPolicy) -> Result<Option<MultiGuard>> {
        let parts = ordered(self.parts)?;
        // One deadline for all the parts (a wait too long to represent has none: each part
        // then waits as long as it takes); trying once tries each part once.
        let deadline = match wait {
            WaitPolicy::Within(_) => wait.deadline(Instant::now()),
            WaitPolicy::Try | WaitPolicy::Forever => None,
        };
        let mut held: Vec<LockGuard> = Vec::with_capacity(parts.len());
        for part in parts {
            let policy = match deadline {
                Some(deadline) => {
                    WaitPolicy::from(deadline.saturating_duration_since(Instant::now()))
                }
                None => wait,
            };
            match part.acquire_with(policy).await {
                Ok(Some(guard)) => held.push(guard),
                Ok(None) => {
                    release_all(held).await.ok();
                    return Ok(None);
                }
                Err(error) => {
                    release_all(held).await.ok();
                    return Err(error);
                }
            }
        }
        Ok(Some(MultiGuard { parts: held }))
    }
}

impl<'a> IntoFuture for MultiLock<'a> {
    type Output = Result<MultiGuard>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<MultiGuard>> + Send + 'a>>;

    /// Waits without limit for every part; only a backend failure or bad input ends the wait
    /// early.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { granted(self.acquire_with(WaitPolicy::Forever).await?) })
    }
}

/// The parts in the order every process takes them in; refuses none, an invalid key, and
/// the same lock twice.
fn ordered(parts: Vec<LockRequest<'_>>) -> Result<Vec<LockRequest<'_>>> {
    if parts.is_empty() {
        return Err(LockError::InvalidInput {
            what: "multi-lock",
            reason: "it has no parts".to_owned(),
        });
    }
    let mut placed: Vec<(RequestPlace, LockRequest<'_>)> = parts
        .into_iter()
        .map(|part| Ok((part.place()?, part)))
        .collect::<Result<_>>()?;
    let twice = placed
        .iter()
        .enumerate()
        .find(|(i, (place, _))| placed[..*i].iter().any(|(seen, _)| seen == place));
    if let Some((_, (place, _))) = twice {
        return Err(LockError::InvalidInput {
            what: "multi-lock",
            reason: format!(
                "the {} {:?} is asked for twice on one client",
                place.primitive, place.full_key
            ),
        });
    }
    // A stable sort on what every process sees alike: one key on two clients (two servers)
    // keeps the order it was given in.
    placed.sort_by(|(a, _), (b, _)| {
        (&a.full_key, a.primitive, a.backend).cmp(&(&b.full_key, b.primitive, b.backend))
    });
    Ok(placed.into_iter().map(|(_, part)| part).collect())
}

/// Releases `parts`, last first: whether each was still held; the first error once all were
/// tried.
async fn release_all(parts: Vec<LockGuard>) -> Result<bool> {
    let mut all_held = true;
    let mut failed = None;
    for part in parts.into_iter().rev() {
        match part.release().await {
            Ok(held) => all_held &= held,
            Err(error) => {
                failed.get_or_insert(error);
            }
        }
    }
    match failed {
        Some(error) => Err(error),
        None => Ok(all_held),
    }
}

/// The parts of a [`MultiLock`], held together. Dropping it releases every part in the
/// background, as dropping a [`LockGuard`] does.
///
/// ```
/// use lock_core::{LockClient, MemoryBackend, MultiLock};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(MemoryBackend::new());
/// let guard = MultiLock::new([locks.lock("b"), locks.lock("a")]).await?;
/// // The canonical order: by full key.
/// let keys: Vec<&str> = guard.parts().iter().map(|p| p.key().name()).collect();
/// assert_eq!(keys, ["a", "b"]);
/// guard.ensure_held()?;
/// assert!(!guard.is_lost());
/// assert!(guard.release().await?);
/// # Ok(()) }
/// ```
#[must_use = "the locks are released as soon as the guard is dropped"]
#[derive(Debug)]
pub struct MultiGuard {
    parts: Vec<LockGuard>,
}

impl MultiGuard {
    /// Each part's guard, in the order they were taken: its key, fencing token, lease and
    /// lost signal.
    pub fn parts(&self) -> &[LockGuard] {
        &self.parts
    }

    /// The guard of the part with this key (the name given, or the full key), if any.
    #[must_use]
    pub fn part(&self, key: &str) -> Option<&LockGuard> {
        self.parts
            .iter()
            .find(|part| part.key().name() == key || part.key().full() == key)
    }

    /// True once any part is lost (see [`LockGuard::is_lost`]).
    #[must_use]
    pub fn is_lost(&self) -> bool {
        self.parts.iter().any(LockGuard::is_lost)
    }

    /// An error for work that must stop because a part is gone (see
    /// [`LockGuard::ensure_held`]).
    pub fn ensure_held(&self) -> Result<()> {
        self.parts.iter().try_for_each(LockGuard::ensure_held)
    }

    /// Resolves when any part is lost, with that part's key and why (see
    /// [`LockGuard::lost`]). The future owns what it needs, so it can be moved into another
    /// task.
    pub fn lost(&self) -> impl Future<Output = PartLost> + Send + 'static {
        let signals: Vec<(LockKey, LostSignal)> = self
            .parts
            .iter()
            .map(|part| (part.key().clone(), Box::pin(part.lost()) as LostSignal))
            .collect();
        FirstLost { signals }
    }

    /// Releases every part, last taken first: `true` when each was still held. Every part
    /// is tried; the first error comes back once all were.
    pub async fn release(self) -> Result<bool> {
        release_all(self.parts).await
    }
}

/// Which part of a [`MultiGuard`] was lost, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartLost {
    /// The lost part's key.
    pub key: LockKey,
    /// Why it was lost.
    pub reason: LostReason,
}

/// One part's lost signal ([`LockGuard::lost`]).
type LostSignal = Pin<Box<dyn Future<Output = LostReason> + Send>>;

/// The first of several lost signals to resolve.
struct FirstLost {
    signals: Vec<(LockKey, LostSignal)>,
}

impl Future for FirstLost {
    type Output = PartLost;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<PartLost> {
        for (key, signal) in &mut self.signals {
            if let Poll::Ready(reason) = signal.as_mut().poll(cx) {
                return Poll::Ready(PartLost {
                    key: key.clone(),
                    reason,
                });
            }
        }
        Poll::Pending
    }
}
