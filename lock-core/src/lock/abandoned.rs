//! Cleaning up after an acquisition that ended without handing its grant to the caller.
//!
//! An acquire future can be dropped at any `.await`: while the command that may grant the lease
//! is on the wire, after a queue node was created, between two retries. It can also fail after
//! a command reached the store but its reply did not reach us. In each case the store may hold
//! something under the acquisition's owner token that nobody in this process knows about. The
//! token is chosen before the first command is sent, so a cleanup that knows only the key and
//! the token can find and release it; [`PendingAcquire`] runs that cleanup in a task of its
//! own, which outlives the dropped future.

use std::sync::Arc;

use crate::backend::{DynLockBackend, LeaseKind};
use crate::{LockKey, OwnerToken};

/// An acquisition in progress. Dropping it unsettled spawns
/// [`release_abandoned`](crate::LockBackend::release_abandoned) for its key and token.
pub(crate) struct PendingAcquire {
    backend: Arc<dyn DynLockBackend>,
    key: LockKey,
    kind: LeaseKind,
    owner: OwnerToken,
    armed: bool,
}

impl PendingAcquire {
    pub(crate) fn new(
        backend: Arc<dyn DynLockBackend>,
        key: LockKey,
        kind: LeaseKind,
        owner: OwnerToken,
    ) -> Self {
        Self {
            backend,
            key,
            kind,
            owner,
            armed: true,
        }
    }

    /// The acquisition's outcome reached the caller (a guard, or "busy" from a backend that
    /// granted nothing): nothing to clean up.
    pub(crate) fn settle(mut self) {
        self.armed = false;
    }
}

impl Drop for PendingAcquire {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(key = %self.key, "acquire abandoned outside a tokio runtime; a lease it may have won ends with its TTL");
            return;
        };
        let (backend, key, kind, owner) = (
            self.backend.clone(),
            self.key.clone(),
            self.kind,
            self.owner,
        );
        runtime.spawn(async move {
            match backend.release_abandoned(&key, kind, owner).await {
                Ok(true) => {
                    tracing::debug!(key = %key, "released what an abandoned acquire left behind")
                }
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(key = %key, error = %error.with_causes(), "cleaning up after an abandoned acquire failed; a lease it may have won ends with its TTL")
                }
            }
        });
    }
}
