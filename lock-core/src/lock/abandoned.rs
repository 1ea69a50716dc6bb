//! Cleaning up after an acquisition that ended without handing its grant to the caller.
//!
//! An acquire future can be dropped at any `.await`: while the command that may grant the lease
//! is on the wire, after a queue node was created, between two retries. It can also fail after
//! a command reached the store but its reply did not reach us. In each case the store may hold
//! something under the acquisition's owner token that nobody in this process knows about. The
//! token is chosen before the first command is sent, so a cleanup that knows only the key and
//! the token can find and release it; [`PendingAcquire`] runs that cleanup in a task of its
//! own, which outlives the dropped future.
//!
//! While the backend is known to be down (its [breaker](crate::breaker) is open) the clean-up
//! waits for it to be back, for at most the lease's TTL (after which whatever it may have won
//! has ended anyway), and tries once more; an acquisition the breaker refused before sending
//! anything never gets here. Failures to reach the server are DEBUG: the breaker reports the
//! outage.

use std::sync::Arc;
use std::time::Duration;

use crate::backend::{Abandoned, DynLockBackend, LeaseKind};
use crate::{LockError, LockKey, OwnerToken};

/// An acquisition in progress. Dropping it unsettled spawns
/// [`release_abandoned`](crate::LockBackend::release_abandoned) for its key and token.
pub(crate) struct PendingAcquire {
    backend: Arc<dyn DynLockBackend>,
    abandoned: Abandoned,
    /// The lease asked for: how long anything the acquisition left can live.
    ttl: Duration,
    armed: bool,
}

impl PendingAcquire {
    pub(crate) fn new(
        backend: Arc<dyn DynLockBackend>,
        key: LockKey,
        kind: LeaseKind,
        owner: OwnerToken,
        ttl: Duration,
    ) -> Self {
        Self {
            backend,
            abandoned: Abandoned { key, kind, owner },
            ttl,
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
            tracing::warn!(key = %self.abandoned.key, "acquire abandoned outside a tokio runtime; a lease it may have won ends with its TTL");
            return;
        };
        let (backend, abandoned, ttl) = (self.backend.clone(), self.abandoned.clone(), self.ttl);
        runtime.spawn(async move {
            let key = &abandoned.key;
            let mut outcome = backend.release_abandoned(&abandoned).await;
            if let (Err(error), Some(breaker)) = (&outcome, backend.breaker()) {
                if error.circuit_open().is_some() {
                    tracing::debug!(key = %key, "the backend is down; cleaning up after an abandoned acquire once it is back");
                    if tokio::time::timeout(ttl, breaker.ready()).await.is_err() {
                        tracing::debug!(key = %key, "the backend stayed down for the lease's TTL; nothing an abandoned acquire may have won is left");
                        return;
                    }
                    outcome = backend.release_abandoned(&abandoned).await;
                }
            }
            report(key, &outcome);
        });
    }
}

fn report(key: &LockKey, outcome: &Result<bool, LockError>) {
    match outcome {
        Ok(true) => tracing::debug!(key = %key, "released what an abandoned acquire left behind"),
        Ok(false) => {}
        // The backend's breaker reports the outage; this is one of its calls.
        Err(error) if error.is_unavailable() => {
            tracing::debug!(key = %key, error = %error.with_causes(), "cleaning up after an abandoned acquire failed; a lease it may have won ends with its TTL")
        }
        Err(error) => {
            tracing::warn!(key = %key, error = %error.with_causes(), "cleaning up after an abandoned acquire failed; a lease it may have won ends with its TTL")
        }
    }
}
