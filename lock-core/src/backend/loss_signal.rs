//! The lost signal: how a holder learns that its lease is gone.

use std::sync::{Arc, OnceLock};

use crate::sync::stop_flag::StopFlag;
use crate::{LockKey, LostReason};

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
