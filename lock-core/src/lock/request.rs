//! A request for one lock: the options, and the acquire algorithm shared by every backend.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::backend::{AcquireRequest, BoxFuture, DynGrant, DynLockBackend, LeaseKind};
use crate::lease::{renew_interval, valid_until};
use crate::lock::abandoned::PendingAcquire;
use crate::lock::held::{HeldLease, Timing};
use crate::lock::owner::OwnerId;
use crate::metrics;
use crate::sync::stop_flag::StopFlag;
use crate::{
    LeaseMode, LockClient, LockError, LockGuard, LockKey, LockOwner, OwnerToken, Result, WaitPolicy,
};

static LEASE_SEQ: AtomicU64 = AtomicU64::new(0);

/// A request's place in a [`MultiLock`](crate::MultiLock)'s order (see [`LockRequest::place`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RequestPlace {
    pub(crate) full_key: String,
    /// The primitive (a read and a write lock of one name are one read-write lock).
    pub(crate) primitive: &'static str,
    pub(crate) backend: &'static str,
    /// The client, by address: the same lock twice is two requests on one client (never
    /// part of the order, which must be the same in every process).
    pub(crate) client: usize,
}

/// A lock request being configured; finish it with one of the `acquire` methods, or `.await`
/// it to wait as long as it takes.
///
/// ```
/// use std::time::Duration;
/// use lock_core::{LockClient, MemoryBackend, WaitPolicy};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(MemoryBackend::new());
/// let guard = locks
///     .lock("invoice:9")
///     .lease(lock_core::LeaseMode::watchdog(Duration::from_secs(5))) // renewed every ~1.7 s while held
///     .acquire_with(WaitPolicy::Within(Duration::from_millis(200)))
///     .await?;
/// assert!(guard.is_some());
/// # Ok(()) }
/// ```
#[must_use = "a lock request does nothing until acquired"]
pub struct LockRequest<'a> {
    client: &'a LockClient,
    key: String,
    lease: Option<LeaseMode>,
    owner: Option<LockOwner>,
    kind: LeaseKind,
    /// A leadership campaign's participant id (see [`AcquireRequest::participant`]).
    participant: Option<String>,
}

impl<'a> LockRequest<'a> {
    pub(crate) fn new(client: &'a LockClient, key: String) -> Self {
        Self::of_kind(client, key, LeaseKind::Exclusive)
    }

    /// A request for a lease of another primitive (fair lock, read or write lock, permits).
    pub(crate) fn of_kind(client: &'a LockClient, key: String, kind: LeaseKind) -> Self {
        Self {
            client,
            key,
            lease: None,
            owner: None,
            kind,
            participant: None,
        }
    }

    /// The same request, campaigning as the participant `id` (a [`LeaseKind::Leader`] lease).
    pub(crate) fn campaigning_as(mut self, id: String) -> Self {
        self.participant = Some(id);
        self
    }

    /// The lease to use instead of the client's default: a watchdog lease
    /// ([`LeaseMode::watchdog`], renewed every `ttl / 3` while the guard lives) or a fixed one
    /// ([`LeaseMode::fixed`], never renewed; the lost signal fires when it runs out).
    pub fn lease(mut self, lease: LeaseMode) -> Self {
        self.lease = Some(lease);
        self
    }

    /// Acquires on behalf of `owner` instead of the current task (see [`LockOwner`]).
    pub fn owner(mut self, owner: &LockOwner) -> Self {
        self.owner = Some(owner.clone());
        self
    }

    /// Where this request stands among others of a [`MultiLock`](crate::MultiLock): its
    /// full key, primitive and backend (the order every process takes them in), and its client
    /// (to refuse the same lock twice). An invalid key is refused here.
    pub(crate) fn place(&self) -> Result<RequestPlace> {
        let inner = &self.client.inner;
        Ok(RequestPlace {
            full_key: LockKey::new(&inner.namespace, &self.key)?.full().to_owned(),
            primitive: match self.kind {
                LeaseKind::Read | LeaseKind::Write => "read-write lock",
                kind => kind.name(),
            },
            backend: inner.backend.capabilities().backend,
            client: Arc::as_ptr(inner) as usize,
        })
    }

    /// Tries once: `Ok(None)` when another owner holds the lock.
    pub async fn try_acquire(self) -> Result<Option<LockGuard>> {
        self.acquire_with(WaitPolicy::Try).await
    }

    /// Waits up to `wait`: `Ok(None)` when the lock was still held by another owner by then.
    pub async fn acquire_within(self, wait: Duration) -> Result<Option<LockGuard>> {
        self.acquire_with(WaitPolicy::from(wait)).await
    }

    /// Acquires with the given waiting policy: `Ok(None)` when the lock was still held by
    /// another owner when waiting ended.
    pub async fn acquire_with(self, wait: WaitPolicy) -> Result<Option<LockGuard>> {
        let client = self.client;
        self.acquire_through(wait, &mut ByBackend(&*client.inner.backend))
            .await
    }

    /// Tries once, with `attempt` asking the store for the lease instead of the client's
    /// backend (a script that grants it together with other work): a grant it returns is
    /// adopted as the backend's own, watched, released and cleaned up after like any other.
    pub(crate) async fn try_acquire_through(
        self,
        attempt: &mut dyn AcquireAttempt,
    ) -> Result<Option<LockGuard>> {
        self.acquire_through(WaitPolicy::Try, attempt).await
    }

    async fn acquire_through(
        self,
        wait: WaitPolicy,
        attempt: &mut dyn AcquireAttempt,
    ) -> Result<Option<LockGuard>> {
        let client = self.client;
        let backend = client.inner.backend.capabilities().backend;
        let started = Instant::now();
        let acquired = self.acquire_recorded(wait, started, attempt).await;
        metrics::acquired(
            backend,
            &client.inner.namespace,
            metrics::acquire_outcome(&acquired),
            started.elapsed(),
        );
        acquired
    }

    async fn acquire_recorded(
        self,
        wait: WaitPolicy,
        started: Instant,
        attempt: &mut dyn AcquireAttempt,
    ) -> Result<Option<LockGuard>> {
        let inner = &self.client.inner;
        if inner.live.is_shut_down() {
            return Err(LockError::ShutDown);
        }
        let key = LockKey::new(&inner.namespace, &self.key)?;
        let mode = self.lease.unwrap_or(inner.default_lease).validate()?;
        let owner = OwnerId::resolve(self.owner.as_ref());
        let kind = self.kind;
        let span = tracing::debug_span!("lock.acquire", key = %key, primitive = kind.name(), ?wait);
        let capabilities = inner.backend.capabilities();
        if !capabilities.primitives.offers(kind) {
            return Err(kind.unsupported(capabilities.backend));
        }
        if let LeaseKind::Permits { count, limit } = kind {
            crate::backend::validate_permits("permit count", count)?;
            crate::backend::validate_permits("semaphore size", limit)?;
        }

        if let Some((lease, count)) = inner.held.reenter(owner, &key, kind) {
            let guard = LockGuard::new(lease, inner.clone(), owner);
            guard.ensure_held()?;
            tracing::debug!(parent: &span, hold_count = count, fence = %guard.fencing_token(), "re-entered");
            return Ok(Some(guard));
        }
        // A writer may take read locks (its own write lease does not block them); a reader
        // asking for the write lock would wait for itself, so it is refused.
        let downgrade_from = match kind {
            LeaseKind::Read => inner.held.token_of(owner, &key, LeaseKind::Write),
            LeaseKind::Write if inner.held.token_of(owner, &key, LeaseKind::Read).is_some() => {
                return Err(LockError::UpgradeRefused {
                    key: key.name().to_owned(),
                });
            }
            _ => None,
        };

        // A backend known to be down refuses at once; nothing is sent, so nothing needs
        // cleaning up.
        if let Some(breaker) = inner.backend.breaker() {
            breaker.check()?;
        }
        let backend = capabilities.backend;
        let deadline = wait.deadline(started);
        let token = OwnerToken::random()?;
        // Until its outcome reaches the caller, a drop or a failure of this acquisition releases
        // whatever the store may hold under `token` (see `abandoned.rs`).
        let pending =
            PendingAcquire::new(inner.backend.clone(), key.clone(), kind, token, mode.ttl());
        loop {
            let mut request =
                AcquireRequest::new(&key, token, mode.ttl(), deadline).with_kind(kind);
            if let Some(writer) = downgrade_from {
                request = request.downgrading(writer);
            }
            if let Some(retention) = inner.fence_retention {
                request = request.retaining_fence(retention);
            }
            if let Some(id) = &self.participant {
                request = request.campaigning_as(id);
            }
            if !inner.label.is_empty() {
                request = request.labelled(&inner.label);
            }
            let Some(grant) = attempt.attempt(request).await? else {
                pending.settle();
                tracing::debug!(parent: &span, waited_ms = started.elapsed().as_millis() as u64, "busy");
                return Ok(None);
            };
            // A lease the store holds for less than asked (a fair lock's claim window) is
            // trusted for that, and renewed to the full length a third of the way into it, as
            // any lease is renewed a third of the way into its TTL: a short hold (most are)
            // is released before it needs the renewal.
            let granted_ttl = grant.ttl.map_or(mode.ttl(), |ttl| ttl.min(mode.ttl()));
            let until = valid_until(grant.sent_at, granted_ttl);
            if until <= Instant::now() {
                // The reply came back after the lease it granted could be trusted: not a grant.
                tracing::warn!(parent: &span, "grant arrived too late to trust; releasing and retrying");
                grant.lease.release().await?;
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    pending.settle();
                    return Ok(None);
                }
                continue;
            }
            let (until, next_attempt) = if granted_ttl < mode.ttl() {
                if mode.is_renewed() {
                    (until, grant.sent_at + renew_interval(granted_ttl))
                } else {
                    // A fixed lease is never renewed later: set its length now.
                    let sent = Instant::now();
                    if !grant.lease.renew(Some(mode.ttl())).await? {
                        drop(pending);
                        return Err(LockError::LeaseLost {
                            key: key.name().to_owned(),
                            reason: crate::LostReason::NotOwner,
                        });
                    }
                    let until = valid_until(sent, mode.ttl());
                    (until, sent + renew_interval(mode.ttl()))
                }
            } else {
                (until, grant.sent_at + renew_interval(mode.ttl()))
            };
            pending.settle();
            let held = Arc::new(HeldLease {
                key,
                kind,
                token,
                fence: grant.fencing_token,
                backend,
                lease: grant.lease,
                // A backend that pushes losses fires the same signal the guard exposes.
                loss: grant.loss.unwrap_or_default(),
                times: Mutex::new(Timing::new(until, next_attempt)),
                seq: LEASE_SEQ.fetch_add(1, Ordering::Relaxed),
                granted_at: Instant::now(),
                mode: Mutex::new(mode),
                stop: StopFlag::default(),
            });
            held.loss.name_lease(backend, &held.key);
            inner.watchdog.watch(&held);
            inner.held.insert(owner, held.clone());
            inner.live.insert(&held);
            if inner.live.is_shut_down() {
                // Shut down while this grant was on its way: give it back as shutdown would.
                drop(LockGuard::new(held, inner.clone(), owner));
                return Err(LockError::ShutDown);
            }
            tracing::debug!(
                parent: &span,
                fence = %held.fence,
                waited_ms = started.elapsed().as_millis() as u64,
                "acquired"
            );
            return Ok(Some(LockGuard::new(held, inner.clone(), owner)));
        }
    }
}

/// One try at a lease: the backend's [`acquire`](DynLockBackend::acquire), or a script that
/// grants it together with other work (on the same server and state as the backend, whose
/// grant it must be: it is renewed, released and cleaned up after through the backend).
pub(crate) trait AcquireAttempt: Send {
    /// Asks for the lease of `request`.
    fn attempt<'r>(
        &'r mut self,
        request: AcquireRequest<'r>,
    ) -> BoxFuture<'r, Result<Option<DynGrant>>>;
}

/// The client's backend, asked directly.
struct ByBackend<'b>(&'b dyn DynLockBackend);

impl AcquireAttempt for ByBackend<'_> {
    fn attempt<'r>(
        &'r mut self,
        request: AcquireRequest<'r>,
    ) -> BoxFuture<'r, Result<Option<DynGrant>>> {
        self.0.acquire(request)
    }
}

impl<'a> IntoFuture for LockRequest<'a> {
    type Output = Result<LockGuard>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<LockGuard>> + Send + 'a>>;

    /// Waits without limit; only a backend failure or bad input ends the wait early.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { granted(self.acquire_with(WaitPolicy::Forever).await?) })
    }
}

/// What an unlimited wait ([`WaitPolicy::Forever`]) came to: it never ends without a grant
/// (only a backend failure or bad input ends it early), so `None` is a protocol error.
pub(crate) fn granted<T>(acquired: Option<T>) -> Result<T> {
    acquired.ok_or_else(|| LockError::Protocol {
        backend: "client",
        detail: "an unlimited wait ended without a grant".to_owned(),
    })
}
