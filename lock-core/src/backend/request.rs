//! A request for a lease as the client hands it to a backend, and the grant that answers it.

use std::time::Duration;

use tokio::time::Instant;

use super::{HolderLabel, LeaseKind};
use crate::{FencingToken, LockKey, LossSignal, OwnerToken};

/// One request for a lease, as the client hands it to a backend.
#[derive(Debug)]
#[non_exhaustive]
pub struct AcquireRequest<'a> {
    /// The validated, namespaced key.
    pub key: &'a LockKey,
    /// The token the lease must be stored under. Retrying with the same token must be
    /// idempotent: a grant already held under it is returned again, not granted twice.
    pub owner: OwnerToken,
    /// The lease length to set.
    pub ttl: Duration,
    /// When to stop waiting: `Some(now)` means try once, `None` means wait until granted.
    pub deadline: Option<Instant>,
    /// What the lease grants ([`LeaseKind::Exclusive`] unless set with
    /// [`with_kind`](Self::with_kind)).
    pub kind: LeaseKind,
    /// For a [`LeaseKind::Read`] request: the owner token of the caller's own write lease on
    /// the same key, which must not block it (a writer taking a read lock, to downgrade).
    pub downgrade_from: Option<OwnerToken>,
    /// How long, at least, after this grant the store keeps what makes the key's next token
    /// larger than this one's (Redis: the fencing counter; PostgreSQL: the lock row once the
    /// lease ends), when shorter than the backend's own retention (a day); `None`: the
    /// backend's. See [`LockClientBuilder::fence_retention`](crate::LockClientBuilder::fence_retention).
    pub fence_retention: Option<Duration>,
    /// For a [`LeaseKind::Leader`] request: the candidate's participant id, which the store
    /// keeps with the lease for everyone to read as the leader's (see
    /// [`ElectionBackend::leader`](super::ElectionBackend::leader)).
    pub participant: Option<&'a str>,
    /// Who the requester is ([`LockClientBuilder::label`](crate::LockClientBuilder::label)),
    /// for the store to keep with the lease and the wait, where an operator reads it; `None`
    /// keeps no label.
    pub label: Option<&'a HolderLabel>,
}

impl<'a> AcquireRequest<'a> {
    /// A request; `deadline` as in the field's docs.
    #[must_use]
    pub fn new(
        key: &'a LockKey,
        owner: OwnerToken,
        ttl: Duration,
        deadline: Option<Instant>,
    ) -> Self {
        Self {
            key,
            owner,
            ttl,
            deadline,
            kind: LeaseKind::Exclusive,
            downgrade_from: None,
            fence_retention: None,
            participant: None,
            label: None,
        }
    }

    /// The same request, labelled `label` (see [`label`](Self::label)).
    #[must_use]
    pub fn labelled(mut self, label: &'a HolderLabel) -> Self {
        self.label = Some(label);
        self
    }

    /// The same request, with the key's fencing state kept at least `retention` after the
    /// grant (see [`fence_retention`](Self::fence_retention)).
    #[must_use]
    pub fn retaining_fence(mut self, retention: Duration) -> Self {
        self.fence_retention = Some(retention);
        self
    }

    /// The same request for a lease of `kind`.
    #[must_use]
    pub fn with_kind(mut self, kind: LeaseKind) -> Self {
        self.kind = kind;
        self
    }

    /// The same request, campaigning as the participant `id` (see
    /// [`participant`](Self::participant)).
    #[must_use]
    pub fn campaigning_as(mut self, id: &'a str) -> Self {
        self.participant = Some(id);
        self
    }

    /// The same read request, not blocked by the caller's own write lease `writer`.
    #[must_use]
    pub fn downgrading(mut self, writer: OwnerToken) -> Self {
        self.downgrade_from = Some(writer);
        self
    }

    /// True once `deadline` has passed (never for an unlimited wait).
    #[must_use]
    pub fn deadline_passed(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// A granted lease, as a backend returns it.
#[derive(Debug)]
#[non_exhaustive]
pub struct Grant<L> {
    /// Whatever the backend needs to renew and release this lease later.
    pub lease: L,
    /// This grant's fencing token: larger than every earlier grant of the same key.
    pub fencing_token: FencingToken,
    /// When the command that won the lease was sent; the lease is trusted from here, not from
    /// the reply, so a delayed reply shortens it instead of stretching it.
    pub sent_at: Instant,
    /// Fired by the backend when it learns of a loss by push (see
    /// [`Capabilities::loss_push`](super::Capabilities::loss_push)); `None` when it cannot.
    pub loss: Option<LossSignal>,
    /// The lease length the store set, when shorter than the request's `ttl`: a fair lock
    /// handed over by the server holds the lock for a short claim window only, so a waiter
    /// that has gone costs the queue that window, not a whole lease. The client trusts the
    /// grant for this long from `sent_at` and has the watchdog renew it to the full `ttl` at
    /// once. `None`: the request's `ttl`.
    pub ttl: Option<Duration>,
}

impl<L> Grant<L> {
    /// A grant without a push loss signal.
    #[must_use]
    pub fn new(lease: L, fence: FencingToken, sent_at: Instant) -> Self {
        Self {
            lease,
            fencing_token: fence,
            sent_at,
            loss: None,
            ttl: None,
        }
    }

    /// A grant the store holds for `ttl` only (see [`Grant::ttl`]).
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Adds the backend's push loss signal.
    #[must_use]
    pub fn with_loss(mut self, loss: LossSignal) -> Self {
        self.loss = Some(loss);
        self
    }

    pub(super) fn map<M>(self, f: impl FnOnce(L) -> M) -> Grant<M> {
        Grant {
            lease: f(self.lease),
            fencing_token: self.fencing_token,
            sent_at: self.sent_at,
            loss: self.loss,
            ttl: self.ttl,
        }
    }
}
