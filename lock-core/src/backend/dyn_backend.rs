//! The object-safe form of [`LockBackend`], which [`LockClient`](crate::LockClient) holds: every
//! `LockBackend` is a [`DynLockBackend`] through a blanket impl, its leases bound to it as
//! [`DynLease`]s. The optional capabilities have object-safe forms of their own, reached through
//! [`DynLockBackend::optional_traits`].

use std::time::Duration;

use super::Abandoned;
use super::{AcquireRequest, BoxFuture, Capabilities, Grant, LockBackend, OptionalTraits};
use crate::breaker::Breaker;
use crate::{LockKey, LostReason, OwnerToken, Result};

/// A granted lease bound to its backend, object-safe.
pub trait DynLease: Send + Sync {
    /// See [`LockBackend::renew`].
    fn renew(&self, ttl: Option<Duration>) -> BoxFuture<'_, Result<bool>>;
    /// See [`LockBackend::release`].
    fn release(&self) -> BoxFuture<'_, Result<bool>>;
    /// See [`LockBackend::keep_fence`].
    fn keep_fence(&self, at_least: Duration) -> BoxFuture<'_, Result<()>>;
    /// Why this lease, found gone by a renewal, was lost: [`LostReason::Revoked`] when the
    /// backend keeps an audit record of a forced release of `owner` on `key` (see
    /// [`OperatorBackend::revocation`](super::OperatorBackend::revocation)), else
    /// [`LostReason::NotOwner`]. Asked once, bounded to two seconds; an error is `NotOwner`.
    fn lost_reason<'a>(&'a self, key: &'a LockKey, owner: OwnerToken) -> BoxFuture<'a, LostReason>;
}

/// A grant whose lease is bound to its backend, as [`DynLockBackend::acquire`] returns it.
pub type DynGrant = Grant<Box<dyn DynLease>>;

/// The object-safe form of [`LockBackend`], implemented for every `LockBackend`.
pub trait DynLockBackend: Send + Sync {
    /// See [`LockBackend::capabilities`].
    fn capabilities(&self) -> Capabilities;
    /// See [`LockBackend::acquire`].
    fn acquire<'a>(
        &'a self,
        request: AcquireRequest<'a>,
    ) -> BoxFuture<'a, Result<Option<DynGrant>>>;
    /// See [`LockBackend::release_abandoned`].
    fn release_abandoned<'a>(&'a self, abandoned: &'a Abandoned) -> BoxFuture<'a, Result<bool>>;
    /// See [`LockBackend::breaker`].
    fn breaker(&self) -> Option<&Breaker>;
    /// See [`LockBackend::optional_traits`].
    fn optional_traits(&self) -> OptionalTraits<'_>;
}

struct BoundLease<B: LockBackend> {
    backend: B,
    lease: B::Lease,
}

impl<B: LockBackend> DynLease for BoundLease<B> {
    fn renew(&self, ttl: Option<Duration>) -> BoxFuture<'_, Result<bool>> {
        Box::pin(self.backend.renew(&self.lease, ttl))
    }

    fn release(&self) -> BoxFuture<'_, Result<bool>> {
        Box::pin(self.backend.release(&self.lease))
    }

    fn keep_fence(&self, at_least: Duration) -> BoxFuture<'_, Result<()>> {
        Box::pin(self.backend.keep_fence(&self.lease, at_least))
    }

    fn lost_reason<'a>(&'a self, key: &'a LockKey, owner: OwnerToken) -> BoxFuture<'a, LostReason> {
        Box::pin(async move {
            let Some(operator) = self.backend.optional_traits().operator else {
                return LostReason::NotOwner;
            };
            let asked =
                tokio::time::timeout(Duration::from_secs(2), operator.revocation(key, owner));
            match asked.await {
                Ok(Ok(Some(record))) => LostReason::Revoked {
                    operator: record.operator,
                    reason: record.reason,
                },
                _ => LostReason::NotOwner,
            }
        })
    }
}

/// `grant`, its lease bound to `backend` (which granted it, or shares its server and state):
/// what [`DynLockBackend::acquire`] returns, for a grant made another way (an idempotency
/// claim's script).
pub(crate) fn bind<B: LockBackend>(backend: &B, grant: Grant<B::Lease>) -> DynGrant {
    grant.map(|lease| {
        Box::new(BoundLease {
            backend: backend.clone(),
            lease,
        }) as Box<dyn DynLease>
    })
}

impl<B: LockBackend> DynLockBackend for B {
    fn capabilities(&self) -> Capabilities {
        LockBackend::capabilities(self)
    }

    fn acquire<'a>(
        &'a self,
        request: AcquireRequest<'a>,
    ) -> BoxFuture<'a, Result<Option<DynGrant>>> {
        Box::pin(async move {
            let grant = LockBackend::acquire(self, request).await?;
            Ok(grant.map(|grant| bind(self, grant)))
        })
    }

    fn release_abandoned<'a>(&'a self, abandoned: &'a Abandoned) -> BoxFuture<'a, Result<bool>> {
        Box::pin(LockBackend::release_abandoned(self, abandoned))
    }

    fn breaker(&self) -> Option<&Breaker> {
        LockBackend::breaker(self)
    }

    fn optional_traits(&self) -> OptionalTraits<'_> {
        LockBackend::optional_traits(self)
    }
}
