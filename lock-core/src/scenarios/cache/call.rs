//! The algorithm every cache call runs, once its settings are checked.
//!
//! 0. **Flight**: callers of this process wanting the same key at the same time join one
//!    flight ([`flight`](super::flight)); its leader does the rest, the others take what it
//!    lands (a burst on a hot key costs one read per process).
//! 1. **Read** the entry (one round trip, no lock). Fresh: served (an early refresh may start
//!    in the background, XFetch). Stale within stale-while-revalidate: served, and one refresh
//!    starts in the background unless one runs already.
//! 2. **Miss**: the leader tries the key's lease. Granted: it reads once more (another
//!    instance may have just stored), computes, stores the value conditionally on the lease's
//!    fencing token (pushing it to every waiting process), then releases the lease.
//! 3. **Busy**: the leader registers as waiting and waits for the value to be pushed, or for
//!    the lease itself (if the computing caller fails, panics or is cancelled, its lease is
//!    released at once and one waiter takes over), up to the wait deadline.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::entry::{Age, Kind, StoredEntry};
use super::flight::{follow, Joined, Landing};
use super::{Cache, CacheError, CacheStatus, Cached, Freshness, OnBackendError, OnWaitTimeout};
use crate::backend::BoxFuture;
use crate::results::{Replace, FENCE_AT, FENCE_DIGITS};
use crate::{FencingToken, LockError, LockGuard, LockKey};

/// A computation, boxed so the algorithm is written once for every value type: the bytes, and
/// the freshness to store them with (`None`: not to be stored or shared).
pub(super) type Compute<E> = Box<
    dyn FnOnce() -> BoxFuture<'static, Result<(Vec<u8>, Option<Freshness>), Failure<E>>> + Send,
>;

/// Why a computation gave no bytes.
pub(super) enum Failure<E> {
    User(E),
    Encode(String),
}

impl<E: std::fmt::Display> Failure<E> {
    fn message(&self) -> String {
        match self {
            Self::User(e) => e.to_string(),
            Self::Encode(e) => format!("encoding the value failed: {e}"),
        }
    }

    fn into_error(self) -> CacheError<E> {
        match self {
            Self::User(e) => CacheError::Compute(e),
            Self::Encode(e) => CacheError::Decode(e),
        }
    }
}

/// One validated call.
#[derive(Clone)]
pub(super) struct Call {
    pub(super) cache: Cache,
    pub(super) key: LockKey,
    pub(super) freshness: Freshness,
    pub(super) wait: Duration,
    /// Compute anew whatever is stored (see `CacheRequest::recompute`).
    pub(super) recompute: bool,
}

impl Call {
    /// Callers of one process that want the same key at the same time share one flight: its
    /// leader reads (and on a miss computes, or waits for another instance's value); the
    /// others take what it lands, so a burst on a hot key costs one read per process.
    pub(super) async fn run<E>(self, compute: Compute<E>) -> Result<Cached<Vec<u8>>, CacheError<E>>
    where
        E: std::fmt::Display + Send + 'static,
    {
        // Recomputing callers share a flight of their own: they must not be handed a plain
        // read's stored value (`\0` never occurs in a key).
        let flight = if self.recompute {
            format!("\0recompute:{}", self.key.full())
        } else {
            self.key.full().to_owned()
        };
        loop {
            match self.cache.inner.flights.join(&flight) {
                Joined::Follower(slot) => match follow(slot).await {
                    // Not to be shared: compute this caller's own.
                    Some(Ok(landed)) if landed.status == CacheStatus::Uncacheable => {
                        return self.unshared(compute, CacheStatus::Uncacheable).await;
                    }
                    Some(Ok(landed)) => return Ok(as_follower(landed)),
                    Some(Err(message)) => return Err(CacheError::Shared(message)),
                    // The leader went without landing (cancelled, panicked): lead or follow anew.
                    None => continue,
                },
                Joined::Leader(lead) => {
                    let (outcome, refresh) = self.read_or_compute(compute).await;
                    lead.land(landing(&outcome));
                    // After landing, so the refresh can lead a flight of its own.
                    if let Some(compute) = refresh {
                        self.refresh_in_background(compute);
                    }
                    return outcome;
                }
            }
        }
    }

    /// The flight leader's read: a fresh value (perhaps with an early refresh to start), a
    /// stale one (with a refresh to start), or a miss, computed or waited for. Returns the
    /// computation back when a background refresh should run it.
    async fn read_or_compute<E>(
        &self,
        compute: Compute<E>,
    ) -> (Result<Cached<Vec<u8>>, CacheError<E>>, Option<Compute<E>>)
    where
        E: std::fmt::Display + Send + 'static,
    {
        let found = match self.cache.inner.store.get(&self.key).await {
            Ok(found) => found.map(|bytes| StoredEntry::decode(&bytes)).transpose(),
            Err(error) => {
                // Met again at the lease, where the flight fails open (or closed) for every
                // caller of this process at once.
                tracing::debug!(key = %self.key, error = %error.with_causes(), "cache read failed; treating it as a miss");
                return (self.lead(compute, None, None).await, None);
            }
        };
        let found = found.unwrap_or_else(|error| {
            tracing::warn!(key = %self.key, error = %error.with_causes(), "ignoring an unreadable cache entry");
            None
        });
        let now = SystemTime::now();
        if self.recompute {
            let seen = found.as_ref().map(|e| e.fence);
            let fallback = found.filter(|e| e.kind == Kind::Value && e.age(now) != Age::Gone);
            return (self.lead(compute, fallback, seen).await, None);
        }
        if let Some(entry) = &found {
            match (entry.age(now), entry.kind) {
                (Age::Fresh, Kind::Error) => {
                    return (Err(CacheError::Shared(lossy(&entry.payload))), None);
                }
                (Age::Fresh, Kind::Value) => {
                    let beta = self.freshness.early_refresh_beta;
                    let early = entry.refresh_early(now, beta, uniform());
                    return (
                        Ok(cached(entry, CacheStatus::Hit, now)),
                        early.then_some(compute),
                    );
                }
                (Age::Stale, Kind::Value) => {
                    return (Ok(cached(entry, CacheStatus::Stale, now)), Some(compute));
                }
                _ => {}
            }
        }
        let fallback = found.filter(|e| {
            e.kind == Kind::Value && matches!(e.age(now), Age::Stale | Age::StaleIfError)
        });
        (self.lead(compute, fallback, None).await, None)
    }

    /// Gets the key's lease, or waits for the value it produces elsewhere; then computes.
    async fn lead<E>(
        &self,
        compute: Compute<E>,
        fallback: Option<StoredEntry>,
        newer_than: Option<FencingToken>,
    ) -> Result<Cached<Vec<u8>>, CacheError<E>>
    where
        E: std::fmt::Display + Send + 'static,
    {
        let inner = &self.cache.inner;
        let deadline = Instant::now() + self.wait;
        let guard = loop {
            match inner.locks.lock(self.key.name()).try_acquire().await {
                Ok(Some(guard)) => break guard,
                Ok(None) => {}
                Err(error) => return self.backend_failed(error, compute).await,
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return self.wait_timed_out(compute).await;
            }
            let (mut pushes, there) = match inner.store.watch(&self.key, left).await {
                Ok(watched) => watched,
                Err(error) => return self.backend_failed(error, compute).await,
            };
            if let Some(entry) = there.and_then(|bytes| StoredEntry::decode(&bytes).ok()) {
                if entry.age(SystemTime::now()) == Age::Fresh && newer(&entry, newer_than) {
                    return landed_elsewhere(&entry);
                }
            }
            tokio::select! {
                pushed = pushes.next() => match pushed {
                    Some(entry) if entry.kind == Kind::Pass => {
                        return self.unshared(compute, CacheStatus::Uncacheable).await;
                    }
                    Some(entry) => return landed_elsewhere(&entry),
                    None => continue,
                },
                // The computing caller may fail or vanish: its lease frees at once, and one
                // waiter (this one, if first) takes over.
                granted = inner.locks.lock(self.key.name()).acquire_within(left) => match granted {
                    Ok(Some(guard)) => break guard,
                    Ok(None) => return self.wait_timed_out(compute).await,
                    Err(error) => return self.backend_failed(error, compute).await,
                },
            }
        };
        self.compute_under(guard, compute, fallback, newer_than)
            .await
    }

    /// Holding the lease: reads once more, computes, stores, releases.
    async fn compute_under<E>(
        &self,
        guard: LockGuard,
        compute: Compute<E>,
        fallback: Option<StoredEntry>,
        newer_than: Option<FencingToken>,
    ) -> Result<Cached<Vec<u8>>, CacheError<E>>
    where
        E: std::fmt::Display + Send + 'static,
    {
        let inner = &self.cache.inner;
        // Another instance may have stored while this one queued for the lease.
        if let Ok(Some(bytes)) = inner.store.get(&self.key).await {
            if let Ok(entry) = StoredEntry::decode(&bytes) {
                if entry.age(SystemTime::now()) == Age::Fresh
                    && entry.fence < guard.fencing_token()
                    && newer(&entry, newer_than)
                {
                    release(guard).await;
                    return landed_elsewhere(&entry);
                }
            }
        }
        let started = Instant::now();
        let computed = compute().await;
        let computed_in = started.elapsed();
        let fence = guard.fencing_token();
        let (kind, payload, keep, failure) = match computed {
            Ok((bytes, _)) if bytes.len() > inner.max_value_bytes => {
                release(guard).await;
                return Err(CacheError::TooLarge {
                    size: bytes.len(),
                    limit: inner.max_value_bytes,
                });
            }
            Ok((bytes, Some(keep))) => (Kind::Value, bytes, keep, None),
            Ok((bytes, None)) => (Kind::Pass, bytes, self.freshness, None),
            Err(failure) if !self.freshness.negative.is_zero() => (
                Kind::Error,
                failure.message().into_bytes(),
                self.freshness,
                Some(failure),
            ),
            Err(failure) => {
                release(guard).await;
                return match fallback {
                    Some(stale) => Ok(cached(&stale, CacheStatus::StaleIfError, SystemTime::now())),
                    None => Err(failure.into_error()),
                };
            }
        };
        let entry = StoredEntry::new(kind, fence, computed_in, &keep, payload);
        let encoded = entry.encode();
        let digits = std::str::from_utf8(&encoded[FENCE_AT..FENCE_AT + FENCE_DIGITS])
            .unwrap_or_default()
            .to_owned();
        let stored = inner
            .store
            .put(
                &self.key,
                &digits,
                &encoded,
                entry.keep_for(),
                Replace::Older,
            )
            .await;
        // Stored (and pushed) before the lease goes, so waiters get the value, not the lease;
        // the release runs on its own, as this caller and its flight need not wait for it.
        tokio::spawn(release(guard));
        let status = match &stored {
            _ if kind == Kind::Pass => CacheStatus::Uncacheable,
            Ok(true) => CacheStatus::Computed,
            Ok(false) => {
                tracing::debug!(key = %self.key, %fence, "a newer value was stored meanwhile; this one was not");
                CacheStatus::Computed
            }
            // The backend's breaker reports an outage once; each call in it is DEBUG.
            Err(error) if error.is_unavailable() => {
                tracing::debug!(key = %self.key, error = %error.with_causes(), "storing the computed value failed; served without storing");
                CacheStatus::FailOpen
            }
            Err(error) => {
                tracing::warn!(key = %self.key, error = %error.with_causes(), "storing the computed value failed; served without storing");
                CacheStatus::FailOpen
            }
        };
        match failure {
            Some(failure) => match fallback {
                Some(stale) => Ok(cached(&stale, CacheStatus::StaleIfError, SystemTime::now())),
                None => Err(failure.into_error()),
            },
            None => Ok(Cached {
                fence: Some(fence),
                ..cached(&entry, status, entry.stored_at)
            }),
        }
    }

    /// Refreshes the key in a task of its own, unless a refresh of it runs in this process
    /// already; across instances, only the caller that gets the lease computes.
    fn refresh_in_background<E>(self, compute: Compute<E>)
    where
        E: std::fmt::Display + Send + 'static,
    {
        // Refreshes have flights of their own, so readers keep being served the stale value
        // instead of following the refresh (`\0` never occurs in a key).
        let flight = format!("\0refresh:{}", self.key.full());
        if self.cache.inner.flights.in_progress(&flight) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let Joined::Leader(lead) = self.cache.inner.flights.join(&flight) else {
                return;
            };
            let guard = match self.cache.inner.locks.lock(self.key.name()).try_acquire().await {
                Ok(Some(guard)) => guard,
                Ok(None) => return, // another instance refreshes
                Err(error) => {
                    tracing::debug!(key = %self.key, error = %error.with_causes(), "background refresh skipped: backend unreachable");
                    return;
                }
            };
            let outcome = self.compute_under(guard, compute, None, None).await;
            if let Err(error) = &outcome {
                tracing::warn!(key = %self.key, %error, "background refresh failed; the stale value stays");
            }
            lead.land(landing(&outcome));
        });
    }

    /// The wait for another caller's computation ended without a value.
    async fn wait_timed_out<E>(&self, compute: Compute<E>) -> Result<Cached<Vec<u8>>, CacheError<E>>
    where
        E: std::fmt::Display + Send + 'static,
    {
        match self.cache.inner.on_wait_timeout {
            OnWaitTimeout::Fail => Err(CacheError::WaitTimedOut(self.wait)),
            OnWaitTimeout::ComputeWithoutStoring => {
                tracing::info!(key = %self.key, wait = ?self.wait, "wait for another computation ran out; computing without storing");
                self.unshared(compute, CacheStatus::WaitTimedOut).await
            }
        }
    }

    /// The backend failed: compute without collapsing across instances (fail open), or fail.
    async fn backend_failed<E>(
        &self,
        error: LockError,
        compute: Compute<E>,
    ) -> Result<Cached<Vec<u8>>, CacheError<E>>
    where
        E: std::fmt::Display + Send + 'static,
    {
        if error.is_invalid_input() {
            return Err(error.into());
        }
        match self.cache.inner.on_backend_error {
            OnBackendError::FailClosed => Err(error.into()),
            OnBackendError::FailOpen => {
                // An unreachable backend is reported once by its breaker (which then refuses
                // calls at once, so this costs no wait); each call in the outage is DEBUG.
                if error.is_unavailable() {
                    tracing::debug!(key = %self.key, error = %error.with_causes(), "cache backend unavailable; computing without collapsing (fail open)");
                } else {
                    tracing::warn!(key = %self.key, error = %error.with_causes(), "cache backend failed; computing without collapsing (fail open)");
                }
                self.unshared(compute, CacheStatus::FailOpen).await
            }
        }
    }
}

impl Call {
    /// Computes without a lease and without storing.
    async fn unshared<E>(
        &self,
        compute: Compute<E>,
        status: CacheStatus,
    ) -> Result<Cached<Vec<u8>>, CacheError<E>>
    where
        E: std::fmt::Display + Send + 'static,
    {
        unshared(compute, status, self.cache.inner.max_value_bytes).await
    }
}

/// Computes without a lease and without storing.
async fn unshared<E>(
    compute: Compute<E>,
    status: CacheStatus,
    limit: usize,
) -> Result<Cached<Vec<u8>>, CacheError<E>>
where
    E: std::fmt::Display + Send + 'static,
{
    let started = Instant::now();
    let (value, keep) = compute().await.map_err(Failure::into_error)?;
    // A value its computation says must not be shared stays this caller's, whatever the
    // reason it was computed without a lease: followers compute their own.
    let status = if keep.is_none() {
        CacheStatus::Uncacheable
    } else {
        status
    };
    if value.len() > limit {
        return Err(CacheError::TooLarge {
            size: value.len(),
            limit,
        });
    }
    Ok(Cached {
        value,
        status,
        stored_at: SystemTime::now(),
        computed_in: started.elapsed(),
        fresh_for: Duration::ZERO,
        fence: None,
    })
}

/// True when `entry` was stored after the one seen as `than` (always, when none was seen).
fn newer(entry: &StoredEntry, than: Option<FencingToken>) -> bool {
    than.is_none_or(|seen| entry.fence > seen)
}

/// A value another caller stored, as this caller returns it.
fn landed_elsewhere<E>(entry: &StoredEntry) -> Result<Cached<Vec<u8>>, CacheError<E>> {
    match entry.kind {
        Kind::Error => Err(CacheError::Shared(lossy(&entry.payload))),
        Kind::Value => Ok(cached(entry, CacheStatus::Collapsed, SystemTime::now())),
        // Passes are pushed, never stored, and their pushes are handled before this; should
        // one turn up, its value is not this caller's to take.
        Kind::Pass => Err(CacheError::Shared(
            "the value computed elsewhere was not to be shared".into(),
        )),
    }
}

fn cached(entry: &StoredEntry, status: CacheStatus, now: SystemTime) -> Cached<Vec<u8>> {
    Cached {
        value: entry.payload.clone(),
        status,
        stored_at: entry.stored_at,
        computed_in: entry.computed_in,
        fresh_for: entry.fresh_until().duration_since(now).unwrap_or_default(),
        fence: Some(entry.fence),
    }
}

/// What a flight hands its followers.
fn landing<E: std::fmt::Display>(outcome: &Result<Cached<Vec<u8>>, CacheError<E>>) -> Landing {
    match outcome {
        Ok(value) => Ok(value.clone()),
        Err(error) => Err(error.to_string()),
    }
}

/// A follower's view of its leader's value: computed by another caller is collapsed.
fn as_follower(mut landed: Cached<Vec<u8>>) -> Cached<Vec<u8>> {
    if landed.status == CacheStatus::Computed {
        landed.status = CacheStatus::Collapsed;
    }
    landed
}

async fn release(guard: LockGuard) {
    if let Err(error) = guard.release().await {
        tracing::debug!(error = %error.with_causes(), "releasing a cache computation's lease failed; its TTL frees it");
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A uniform draw in (0, 1] for XFetch.
fn uniform() -> f64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        return 1.0;
    }
    let draw = u64::from_le_bytes(bytes) >> 11; // 53 bits
    (draw as f64 + 1.0) / (1u64 << 53) as f64
}
