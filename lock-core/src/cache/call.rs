//! The algorithm every cache call runs, once its settings are checked.
//!
//! 0. **Flight**: callers of this process wanting the same key at the same time join one
//!    flight ([`flight`](super::flight)); its leader does the rest, the others take what it
//!    lands (a burst on a hot key costs one read per process).
//! 1. **Read** the entry (one round trip, no lock). Fresh: served (an early refresh may start
//!    in the background, XFetch). Stale within stale-while-revalidate: served, and one refresh
//!    starts in the background unless one runs already. A failure remembered for its negative
//!    TTL is handed on (or, if it kept the value before it, that value is served); a key
//!    marked pass-through is computed by each caller, at once, without a lease.
//! 2. **Miss**: the leader tries the key's lease. Granted: it reads once more (another
//!    instance may have just stored; on Redis, with the store on the lease's own backend, in
//!    the script that grants the lease: `fused_lease.rs`), computes, stores the outcome
//!    conditionally on the lease's fencing token (pushing it to every waiting process), then
//!    releases the lease ([`compute`]: what each outcome stores).
//! 3. **Busy**: the leader registers as waiting and waits for the outcome to be pushed, or
//!    for the lease itself (the computing caller's lease is short and renewed while it
//!    computes: if it fails, panics or is cancelled its lease is released at once, and if its
//!    process dies the lease runs out within seconds; then one waiter takes over and stores),
//!    up to the wait deadline.

mod compute;
mod handed;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub(super) use self::compute::release;
use self::compute::AfterGrant;
pub(super) use self::handed::cached;
use self::handed::{as_follower, landed_elsewhere, landing, own_landing, remembered};
use super::computed::{CallError, Compute, Outcome, Typed};
use super::entry::{Age, Kind, StoredEntry};
use super::flight::{follow, Joined, Landed, Lead};
use super::{Cache, CacheError, CacheStatus, Freshness, OnBackendError, OnWaitTimeout};
use crate::{FencingToken, LockError, LockGuard, LockKey, LockOwner, LockRequest};

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

/// How the flight leader's part ends: with an outcome, or told (by the outcome of the
/// computation it waited for: a value not to be shared) to compute its own, which its
/// followers are told first, so that they compute theirs at the same time.
enum Led<E> {
    Outcome(Outcome<E>),
    Own(Compute<E>),
}

/// What the flight leader's read found.
enum Found {
    /// An entry (or nothing, or nothing readable).
    Entry(Option<StoredEntry>),
    /// The key is marked pass-through: compute at once, without a lease.
    PassThrough,
    /// The store could not be read: met again at the lease, where the call fails open (or
    /// closed) for every caller of this process at once.
    Unreadable,
}

impl Call {
    /// Callers of one process that want the same key at the same time share one flight: its
    /// leader reads (and on a miss computes, or waits for another instance's value); the
    /// others take what it lands, so a burst on a hot key costs one read per process.
    /// With `typed`, a failed computation's error is shared as it is (as an [`AnyError`](super::computed::AnyError))
    /// with the callers of its flight; else they get its message.
    pub(super) async fn run<E>(self, compute: Compute<E>, typed: Option<Typed<E>>) -> Outcome<E>
    where
        E: std::fmt::Display + Send + Sync + 'static,
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
                    Some(Ok(landed))
                        if matches!(
                            landed.status,
                            CacheStatus::Uncacheable | CacheStatus::PassThrough
                        ) =>
                    {
                        return self.unshared(compute, landed.status).await;
                    }
                    Some(Ok(landed)) => return Ok(as_follower(landed)),
                    Some(Err(Landed::Failure(failure))) => return Err(CallError::Shared(failure)),
                    Some(Err(Landed::Error(message))) => {
                        return Err(CacheError::Elsewhere(message).into())
                    }
                    // The leader went without landing (cancelled, panicked): lead or follow anew.
                    None => continue,
                },
                Joined::Leader(lead) => {
                    let found = self.read().await;
                    if let Found::PassThrough = found {
                        // Nobody waits for anybody on a pass-through key: the followers are
                        // told at once, and compute their own.
                        lead.land(Ok(own_landing(CacheStatus::PassThrough)));
                        return self.unshared(compute, CacheStatus::PassThrough).await;
                    }
                    let (led, refresh) = self.serve(found, compute).await;
                    let outcome = match led {
                        Led::Outcome(outcome) => outcome,
                        Led::Own(compute) => {
                            lead.land(Ok(own_landing(CacheStatus::Uncacheable)));
                            return self.unshared(compute, CacheStatus::Uncacheable).await;
                        }
                    };
                    let outcome = land(lead, outcome, typed);
                    // After landing, so the refresh can lead a flight of its own.
                    if let Some((compute, stale)) = refresh {
                        self.refresh_in_background(compute, stale);
                    }
                    return outcome;
                }
            }
        }
    }

    /// A request for the key's computation lease, under an owner of its own. Never the task's
    /// owner: a lease this task took a moment ago may still be held while its release runs in
    /// the background, and re-entering it would compute under the same fencing token, which
    /// the store refuses (an outcome stored only over an older one), so the value would not
    /// be stored.
    fn lease(&self) -> LockRequest<'_> {
        self.cache
            .inner
            .locks
            .lock(self.key.name())
            .owner(&LockOwner::new())
    }

    /// The flight leader's read.
    async fn read(&self) -> Found {
        let found = match self.cache.inner.store.get(&self.key).await {
            Ok(found) => found.map(|bytes| StoredEntry::decode(&bytes)).transpose(),
            Err(error) => {
                tracing::debug!(key = %self.key, error = %error.with_causes(), "cache read failed; treating it as a miss");
                return Found::Unreadable;
            }
        };
        let found = found.unwrap_or_else(|error| {
            tracing::warn!(key = %self.key, error = %error.with_causes(), "ignoring an unreadable cache entry");
            None
        });
        match found {
            Some(entry)
                if entry.kind == Kind::Pass && entry.age(SystemTime::now()) == Age::Fresh =>
            {
                Found::PassThrough
            }
            found => Found::Entry(found),
        }
    }

    /// What the flight leader makes of its read: a value to serve (perhaps with a refresh to
    /// start: the computation back, and the stale value it keeps should the refresh fail), a
    /// remembered failure, or a miss, computed or waited for.
    async fn serve<E>(
        &self,
        found: Found,
        compute: Compute<E>,
    ) -> (Led<E>, Option<(Compute<E>, StoredEntry)>)
    where
        E: std::fmt::Display + Send + Sync + 'static,
    {
        let found = match found {
            Found::Entry(found) => found,
            Found::PassThrough | Found::Unreadable => None,
        };
        let now = SystemTime::now();
        // What another caller stores after this read is the outcome this call waits for.
        let seen = found.as_ref().map(|e| e.fence);
        if self.recompute {
            let fallback = found
                .and_then(|e| e.value())
                .filter(|v| v.age(now) != Age::Gone);
            return (self.lead(compute, fallback, seen).await, None);
        }
        let Some(entry) = found else {
            return (self.lead(compute, None, seen).await, None);
        };
        let recent = entry.age(now) == Age::Fresh;
        match entry.kind {
            Kind::Error if recent => {
                let failure = Err(CallError::Shared(remembered(&entry, true)));
                return (Led::Outcome(failure), None);
            }
            // A computation failed a moment ago and kept the value: served by its own windows,
            // without computing again until the negative TTL is over.
            Kind::FailedOver if recent => {
                if let Some(kept) = entry.value() {
                    let status = match kept.age(now) {
                        Age::Fresh => Some(CacheStatus::Hit),
                        Age::Stale => Some(CacheStatus::Stale),
                        Age::StaleIfError => Some(CacheStatus::StaleIfError),
                        Age::Gone => None,
                    };
                    if let Some(status) = status {
                        return (Led::Outcome(Ok(cached(&kept, status, now))), None);
                    }
                }
            }
            _ => {}
        }
        let value = entry.value();
        if let Some(value) = &value {
            match value.age(now) {
                Age::Fresh => {
                    let beta = self.freshness.early_refresh_beta;
                    let early = value.refresh_early(now, beta, uniform());
                    let refresh = early.then(|| (compute, value.clone()));
                    let hit = Ok(cached(value, CacheStatus::Hit, now));
                    return (Led::Outcome(hit), refresh);
                }
                Age::Stale => {
                    let served = Ok(cached(value, CacheStatus::Stale, now));
                    return (Led::Outcome(served), Some((compute, value.clone())));
                }
                Age::StaleIfError | Age::Gone => {}
            }
        }
        let fallback = value.filter(|v| v.age(now) == Age::StaleIfError);
        (self.lead(compute, fallback, seen).await, None)
    }

    /// Gets the key's lease, or waits for the outcome it produces elsewhere; then computes.
    /// `seen`: the fence of the entry this call's read found, if any (what is stored after it
    /// is the outcome waited for).
    async fn lead<E>(
        &self,
        compute: Compute<E>,
        fallback: Option<StoredEntry>,
        seen: Option<FencingToken>,
    ) -> Led<E>
    where
        E: std::fmt::Display + Send + Sync + 'static,
    {
        let inner = &self.cache.inner;
        let deadline = tokio::time::Instant::now() + self.wait;
        let (guard, after_grant) = loop {
            match self.try_lease().await {
                Ok(Some(granted)) => break granted,
                Ok(None) => {}
                Err(error) => return Led::Outcome(self.backend_failed(error, compute).await),
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return self.wait_timed_out(compute, fallback, seen).await;
            }
            let (mut pushes, there) = match inner.store.watch(&self.key, left).await {
                Ok(watched) => watched,
                Err(error) => return Led::Outcome(self.backend_failed(error, compute).await),
            };
            if let Some(entry) = there.and_then(|bytes| StoredEntry::decode(&bytes).ok()) {
                if entry.is_outcome_for(seen, SystemTime::now()) {
                    return match landed_elsewhere(&entry, true) {
                        Some(outcome) => Led::Outcome(outcome),
                        None => Led::Own(compute),
                    };
                }
            }
            let pushed = tokio::select! {
                // The outcome first: it is pushed before the lease it was computed under goes.
                biased;
                pushed = pushes.next() => match pushed {
                    Some(entry) => entry,
                    None => continue,
                },
                // The computing caller may fail or vanish: its lease frees (at once, or when
                // it runs out), and one waiter (this one, if first) takes over.
                granted = self.lease().acquire_within(left) => match granted {
                    // Unless the outcome of the lease's last holder, pushed and not stored (a
                    // failure without a negative TTL, say), arrived meanwhile.
                    Ok(Some(guard)) => match pushes.arrived() {
                        Some(entry) => {
                            release(guard).await;
                            entry
                        }
                        None => break (guard, AfterGrant::Unread),
                    },
                    Ok(None) => return self.wait_timed_out(compute, fallback, seen).await,
                    Err(error) => return Led::Outcome(self.backend_failed(error, compute).await),
                },
            };
            return match landed_elsewhere(&pushed, false) {
                Some(outcome) => Led::Outcome(outcome),
                // Not to be shared: compute this caller's own, at once.
                None => Led::Own(compute),
            };
        };
        self.compute_under(guard, after_grant, compute, fallback, seen)
            .await
    }

    /// One try at the key's lease; on Redis, with the store on the lease's own backend, the
    /// entry is read in the same script right after the grant (see `fused_lease.rs`).
    async fn try_lease(&self) -> Result<Option<(LockGuard, AfterGrant)>, LockError> {
        if let Some(fused) = &self.cache.inner.fused {
            let granted = fused.try_lease(self.lease(), &self.key).await?;
            return Ok(granted.map(|(guard, read)| (guard, AfterGrant::Read(read))));
        }
        Ok(self
            .lease()
            .try_acquire()
            .await?
            .map(|guard| (guard, AfterGrant::Unread)))
    }

    /// Refreshes the key in a task of its own, unless a refresh of it runs in this process
    /// already; across instances, only the caller that gets the lease computes. Should the
    /// refresh fail, `stale` stays (see [`compute`]).
    fn refresh_in_background<E>(self, compute: Compute<E>, stale: StoredEntry)
    where
        E: std::fmt::Display + Send + Sync + 'static,
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
            let (guard, after_grant) = match self.try_lease().await {
                Ok(Some(granted)) => granted,
                Ok(None) => return, // another instance refreshes
                Err(error) => {
                    tracing::debug!(key = %self.key, error = %error.with_causes(), "background refresh skipped: backend unreachable");
                    return;
                }
            };
            let seen = Some(stale.fence);
            let led = self
                .compute_under(guard, after_grant, compute, Some(stale), seen)
                .await;
            // A value not to be shared, found instead of computing: nothing to refresh.
            let Led::Outcome(outcome) = led else {
                lead.land(Ok(own_landing(CacheStatus::Uncacheable)));
                return;
            };
            if let Ok(served) = &outcome {
                if served.status == CacheStatus::StaleIfError {
                    tracing::warn!(key = %self.key, "background refresh failed; the stale value stays");
                }
            }
            lead.land(landing(&outcome));
        });
    }

    /// The wait for another caller's computation ended without an outcome. The lease may be
    /// free by now (its holder gone): then this caller takes it over, and stores.
    async fn wait_timed_out<E>(
        &self,
        compute: Compute<E>,
        fallback: Option<StoredEntry>,
        seen: Option<FencingToken>,
    ) -> Led<E>
    where
        E: std::fmt::Display + Send + Sync + 'static,
    {
        match self.try_lease().await {
            Ok(Some((guard, after_grant))) => {
                return self
                    .compute_under(guard, after_grant, compute, fallback, seen)
                    .await
            }
            Ok(None) => {}
            Err(error) => return Led::Outcome(self.backend_failed(error, compute).await),
        }
        Led::Outcome(match self.cache.inner.on_wait_timeout {
            OnWaitTimeout::Fail => Err(CacheError::WaitTimedOut(self.wait).into()),
            OnWaitTimeout::ComputeWithoutStoring => {
                tracing::info!(key = %self.key, wait = ?self.wait, "wait for another computation ran out; computing without storing");
                self.unshared(compute, CacheStatus::WaitTimedOut).await
            }
        })
    }

    /// The backend failed: compute without collapsing across instances (fail open), or fail.
    async fn backend_failed<E>(&self, error: LockError, compute: Compute<E>) -> Outcome<E>
    where
        E: std::fmt::Display + Send + Sync + 'static,
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

/// Lands the flight leader's `outcome` for its followers, and returns it as its caller gets
/// it: with `typed`, a failed computation that callers waited for is shared by all of them,
/// this caller included (one error, no `Clone` needed: [`CallError::OwnShared`]); one that
/// nobody waited for stays this caller's own ([`CacheError::Compute`]).
#[expect(
    clippy::result_large_err,
    reason = "the outcome every step of a call returns (the async ones too), passed through once"
)]
fn land<E: std::fmt::Display>(
    mut lead: Lead,
    outcome: Outcome<E>,
    typed: Option<Typed<E>>,
) -> Outcome<E> {
    match (outcome, typed) {
        (
            Err(CallError::Own {
                error: CacheError::Compute(error),
                shared: Some(mut failure),
            }),
            Some(typed),
        ) if lead.close() => {
            failure.typed = Some((typed.erase)(Arc::new(error)));
            lead.land(Err(Landed::Failure(failure.clone())));
            Err(CallError::OwnShared(failure))
        }
        (outcome, _) => {
            lead.land(landing(&outcome));
            outcome
        }
    }
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
