//! One primitive's state in the memory backend: its holders, its queue, and the rule that
//! says who may be granted what.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::backend::{AcquireRequest, HolderLabel, LeaseKind, Primitive};
use crate::{LockError, LossSignal, LostReason, OwnerToken, Result};

/// Which primitive a key belongs to: each is its own namespace of keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Family {
    Lock,
    Fair,
    ReadWrite,
    Semaphore,
    Leader,
}

impl Family {
    pub(super) fn of(kind: LeaseKind) -> Self {
        match kind {
            LeaseKind::Fair => Self::Fair,
            LeaseKind::Read | LeaseKind::Write => Self::ReadWrite,
            LeaseKind::Permits { .. } => Self::Semaphore,
            LeaseKind::Leader => Self::Leader,
            _ => Self::Lock,
        }
    }

    /// The family that keeps `primitive`'s keys; `None` for the latch (kept apart, in
    /// `latch.rs`).
    pub(super) fn of_primitive(primitive: Primitive) -> Option<Self> {
        primitive.lease_kind().map(Self::of)
    }

    /// The primitive whose keys this family keeps.
    pub(super) fn primitive(self) -> Primitive {
        match self {
            Self::Lock => Primitive::Lock,
            Self::Fair => Primitive::Fair,
            Self::ReadWrite => Primitive::ReadWrite,
            Self::Semaphore => Primitive::Semaphore,
            Self::Leader => Primitive::Election,
        }
    }
}

pub(super) struct Holder {
    pub(super) owner: OwnerToken,
    pub(super) fence: u64,
    pub(super) expires_at: Instant,
    pub(super) loss: LossSignal,
    pub(super) kind: LeaseKind,
    /// A leadership's participant id.
    pub(super) participant: Option<Arc<str>>,
    /// Who the holder said it is.
    pub(super) label: Option<HolderLabel>,
    /// When it was granted.
    pub(super) acquired_at: std::time::SystemTime,
}

impl Holder {
    fn permits(&self) -> u32 {
        match self.kind {
            LeaseKind::Permits { count, .. } => count,
            _ => 0,
        }
    }
}

#[derive(Clone)]
pub(super) struct Waiter {
    pub(super) id: u64,
    pub(super) wake: Arc<Notify>,
    /// What it waits for, who it said it is and since when: for the operator's view.
    pub(super) kind: LeaseKind,
    pub(super) label: Option<HolderLabel>,
    pub(super) since: Instant,
}

/// The holders and waiters of one key of one family.
#[derive(Default)]
pub(super) struct KeyState {
    pub(super) holders: Vec<Holder>,
    /// Waiters in arrival order. A waiter stays in place until it is granted or leaves, so a
    /// woken waiter that loses a race keeps its turn.
    pub(super) waiters: VecDeque<Waiter>,
}

/// Why a request cannot be granted now.
pub(super) enum Verdict {
    Grant,
    Wait,
}

impl KeyState {
    /// Drops holders whose lease has run out, telling each so; true when any went.
    pub(super) fn expire(&mut self, now: Instant) -> bool {
        let before = self.holders.len();
        self.holders.retain(|holder| {
            let live = holder.expires_at > now;
            if !live {
                holder.loss.fire(LostReason::Expired);
            }
            live
        });
        self.holders.len() != before
    }

    pub(super) fn holder_mut(&mut self, owner: OwnerToken) -> Option<&mut Holder> {
        self.holders.iter_mut().find(|h| h.owner == owner)
    }

    pub(super) fn holds(&self, owner: OwnerToken, fence: u64, now: Instant) -> bool {
        self.holders
            .iter()
            .any(|h| h.owner == owner && h.fence == fence && h.expires_at > now)
    }

    /// Removes `owner`'s lease; true when it was there.
    pub(super) fn remove_holder(&mut self, owner: OwnerToken, fence: Option<u64>) -> bool {
        let before = self.holders.len();
        self.holders
            .retain(|h| !(h.owner == owner && fence.is_none_or(|f| f == h.fence)));
        self.holders.len() != before
    }

    /// The earliest moment a holder's lease ends.
    pub(super) fn next_expiry(&self) -> Option<Instant> {
        self.holders.iter().map(|h| h.expires_at).min()
    }

    /// Permits held under live leases.
    pub(super) fn permits_held(&self) -> u32 {
        self.holders.iter().map(Holder::permits).sum()
    }

    /// Whether `request` may be granted now, for a waiter with id `waiter` (if it queued);
    /// `size` is the semaphore's size.
    pub(super) fn verdict(
        &self,
        request: &AcquireRequest<'_>,
        waiter: Option<u64>,
        size: u32,
    ) -> Result<Verdict> {
        // Waiters queued before this request (all of them when it has not queued).
        let ahead = || {
            self.waiters
                .iter()
                .take_while(move |w| Some(w.id) != waiter)
        };
        let grant = match request.kind {
            // The lock lets a newcomer win a free key; a woken waiter that loses keeps its place.
            LeaseKind::Exclusive => self.holders.is_empty(),
            LeaseKind::Fair | LeaseKind::Write | LeaseKind::Leader => {
                self.holders.is_empty() && ahead().next().is_none()
            }
            LeaseKind::Read => {
                let writer_blocks = self
                    .holders
                    .iter()
                    .any(|h| h.kind == LeaseKind::Write && Some(h.owner) != request.downgrade_from);
                // A writer downgrading holds the lock: the queue waits for it, not it for the queue.
                !writer_blocks && (request.downgrade_from.is_some() || ahead().next().is_none())
            }
            LeaseKind::Permits { count, .. } => {
                if count > size {
                    return Err(LockError::InvalidInput {
                        what: "permit count",
                        reason: format!("{count} is more than the semaphore's {size} permits"),
                    });
                }
                self.permits_held() + count <= size && ahead().next().is_none()
            }
        };
        Ok(if grant { Verdict::Grant } else { Verdict::Wait })
    }

    /// Wakes the first waiter, which re-checks; when it is granted it wakes the next, so
    /// readers and small permit requests follow each other in, in order.
    pub(super) fn wake_front(&self) {
        if let Some(waiter) = self.waiters.front() {
            waiter.wake.notify_one();
        }
    }

    pub(super) fn is_idle(&self) -> bool {
        self.holders.is_empty() && self.waiters.is_empty()
    }
}
