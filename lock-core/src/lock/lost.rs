//! The lost signal: how a holder learns that its lease is gone.

use std::sync::{Arc, OnceLock};

use crate::lock::stop_flag::StopFlag;
use crate::LockKey;

/// Why a lease was lost.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LostReason {
    /// The lease ran out before a renewal could confirm it (fixed-TTL leases end this way
    /// when held past their TTL).
    Expired,
    /// Renewals kept failing until the lease could no longer be confirmed; holds the last
    /// backend error.
    RenewalFailed(String),
    /// The backend says this owner no longer holds the key: it was deleted or taken over
    /// behind the holder's back.
    NotOwner,
    /// The backend session that held the lock ended (connection or session loss).
    SessionLost(String),
    /// The client was shut down ([`LockClient::shutdown`](crate::LockClient::shutdown)),
    /// which released the lease.
    ShutDown,
}

impl std::fmt::Display for LostReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Expired => f.write_str("the lease expired before it could be renewed"),
            Self::RenewalFailed(e) => write!(f, "renewal failed until the lease ran out: {e}"),
            Self::NotOwner => f.write_str("the lock was deleted or taken over by another owner"),
            Self::SessionLost(e) => write!(f, "the backend session holding it ended: {e}"),
            Self::ShutDown => f.write_str("the lock client was shut down and released it"),
        }
    }
}

/// A fire-once, cloneable signal that a lease is lost.
///
/// Backends that learn of a loss by push (a closed session, an in-process delete) fire it;
/// the watchdog fires it when renewal fails or the lease runs out. The first reason wins.
///
/// ```
/// use lock_core::{LossSignal, LostReason};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let signal = LossSignal::new();
/// let waiter = signal.clone();
/// assert!(signal.fire(LostReason::NotOwner));
/// assert!(!signal.fire(LostReason::Expired));
/// assert_eq!(waiter.fired().await, LostReason::NotOwner);
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct LossSignal {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    reason: OnceLock<LostReason>,
    fired: StopFlag,
    /// The backend and key of the lease it belongs to, for the lost-lease metric (which is
    /// labelled with the key's namespace).
    lease: OnceLock<(&'static str, LockKey)>,
}

impl LossSignal {
    /// A signal that has not fired.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Fires with `reason`; returns false when it had already fired (the first reason stays).
    pub fn fire(&self, reason: LostReason) -> bool {
        let first = self.inner.reason.set(reason.clone()).is_ok();
        if first {
            let (backend, namespace) = self
                .inner
                .lease
                .get()
                .map_or(("unknown", ""), |(backend, key)| {
                    (*backend, key.namespace())
                });
            crate::metrics::lost(backend, namespace, &reason);
        }
        self.inner.fired.cancel();
        first
    }

    /// Names the backend and the key of the lease this signal belongs to (for metrics).
    pub(crate) fn name_lease(&self, backend: &'static str, key: &LockKey) {
        self.inner.lease.set((backend, key.clone())).ok();
    }

    /// The reason, once fired.
    #[must_use]
    pub fn reason(&self) -> Option<LostReason> {
        self.inner.reason.get().cloned()
    }

    /// True once fired.
    #[must_use]
    pub fn is_fired(&self) -> bool {
        self.inner.reason.get().is_some()
    }

    /// Resolves with the reason when the signal fires (at once if it already has).
    pub async fn fired(&self) -> LostReason {
        self.inner.fired.cancelled().await;
        self.reason().unwrap_or(LostReason::Expired)
    }
}
