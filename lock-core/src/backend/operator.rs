//! The operator's capability, optional: inspecting keys, listing what is held, releasing a
//! holder by force and reading the audit trail of forced releases ([`OperatorBackend`]).

use std::future::Future;

use super::{
    AuditRecord, BoxFuture, ForceRelease, InspectionPage, KeyInspection, ListRequest, LockBackend,
    Primitive,
};
use crate::{LockKey, OwnerToken, Result};

/// A backend that can tell an operator who holds and who waits, and release a holder by
/// force with an audit record. It hands itself out from [`LockBackend::optional_traits`];
/// use it through [`LockAdmin`](crate::operator::LockAdmin).
///
/// ```
/// use lock_core::backend::{LockBackend, OperatorBackend, Primitive, KeyStatus};
/// use lock_core::{LockKey, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let backend = MemoryBackend::new();
/// assert!(backend.optional_traits().operator.is_some());
/// let key = LockKey::new("", "order:42")?;
/// let seen = backend.inspect(&key, Primitive::Lock).await?;
/// assert_eq!(seen.status, KeyStatus::Free);
/// # Ok(()) }
/// ```
pub trait OperatorBackend: LockBackend {
    /// What the store holds for `key`'s `primitive`: holders, waiters, permits. A key with
    /// nothing is [`KeyStatus::Free`](super::KeyStatus::Free), not an error.
    fn inspect(
        &self,
        key: &LockKey,
        primitive: Primitive,
    ) -> impl Future<Output = Result<KeyInspection>> + Send;

    /// One page of the keys held or waited on whose full key starts with `request.prefix`,
    /// every primitive, each inspected. It walks the store with a cursor in bounded steps
    /// (never a whole-keyspace command that blocks it); a key that changes meanwhile may be
    /// given twice or missed, as with any cursor over a live store.
    fn list(&self, request: ListRequest<'_>)
        -> impl Future<Output = Result<InspectionPage>> + Send;

    /// Releases one holder by force, atomically with what makes it safe: the key's fencing
    /// token is raised past the holder's, the next waiter is woken, the holder's lost signal
    /// fires with [`LostReason::Revoked`](crate::LostReason::Revoked) (at once where the
    /// backend can push, at its next renewal elsewhere), and an [`AuditRecord`] is kept for
    /// the request's retention. Refused, changing nothing, with
    /// [`LockError::ForceReleaseRefused`](crate::LockError::ForceReleaseRefused) when the key
    /// is free, when the owner named does not hold it, or when several hold it and none was
    /// named.
    fn force_release(
        &self,
        request: ForceRelease<'_>,
    ) -> impl Future<Output = Result<AuditRecord>> + Send;

    /// The audit records kept of forced releases, newest first, at most `limit`: of `key`
    /// only, or of every key whose full key starts with `prefix` when `key` is `None`.
    fn audit(
        &self,
        key: Option<&LockKey>,
        prefix: &str,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<AuditRecord>>> + Send;

    /// The forced release that ended `owner`'s lease on `key`, if its record is kept: how the
    /// client tells a revoked lease from one lost otherwise when a renewal finds it gone.
    fn revocation(
        &self,
        key: &LockKey,
        owner: OwnerToken,
    ) -> impl Future<Output = Result<Option<AuditRecord>>> + Send {
        async move {
            let records = self.audit(Some(key), "", 50).await?;
            Ok(records.into_iter().find(|r| r.old_owner == owner))
        }
    }
}

/// The object-safe form of [`OperatorBackend`], implemented for every `OperatorBackend`.
pub trait DynOperatorBackend: Send + Sync {
    /// See [`OperatorBackend::inspect`].
    fn inspect<'a>(
        &'a self,
        key: &'a LockKey,
        primitive: Primitive,
    ) -> BoxFuture<'a, Result<KeyInspection>>;
    /// See [`OperatorBackend::list`].
    fn list<'a>(&'a self, request: ListRequest<'a>) -> BoxFuture<'a, Result<InspectionPage>>;
    /// See [`OperatorBackend::force_release`].
    fn force_release<'a>(&'a self, request: ForceRelease<'a>)
        -> BoxFuture<'a, Result<AuditRecord>>;
    /// See [`OperatorBackend::audit`].
    fn audit<'a>(
        &'a self,
        key: Option<&'a LockKey>,
        prefix: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<AuditRecord>>>;
    /// See [`OperatorBackend::revocation`].
    fn revocation<'a>(
        &'a self,
        key: &'a LockKey,
        owner: OwnerToken,
    ) -> BoxFuture<'a, Result<Option<AuditRecord>>>;
}

impl<B: OperatorBackend> DynOperatorBackend for B {
    fn inspect<'a>(
        &'a self,
        key: &'a LockKey,
        primitive: Primitive,
    ) -> BoxFuture<'a, Result<KeyInspection>> {
        Box::pin(OperatorBackend::inspect(self, key, primitive))
    }

    fn list<'a>(&'a self, request: ListRequest<'a>) -> BoxFuture<'a, Result<InspectionPage>> {
        Box::pin(OperatorBackend::list(self, request))
    }

    fn force_release<'a>(
        &'a self,
        request: ForceRelease<'a>,
    ) -> BoxFuture<'a, Result<AuditRecord>> {
        Box::pin(OperatorBackend::force_release(self, request))
    }

    fn audit<'a>(
        &'a self,
        key: Option<&'a LockKey>,
        prefix: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<AuditRecord>>> {
        Box::pin(OperatorBackend::audit(self, key, prefix, limit))
    }

    fn revocation<'a>(
        &'a self,
        key: &'a LockKey,
        owner: OwnerToken,
    ) -> BoxFuture<'a, Result<Option<AuditRecord>>> {
        Box::pin(OperatorBackend::revocation(self, key, owner))
    }
}
