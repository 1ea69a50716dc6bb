//! What a call is let through with, and who asks: an [`Admission`] is settled with the
//! call's outcome; a [`Caller`] is a call or a background loop (which probes in the calls'
//! place, see [`Breaker::admitted`]).

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::Breaker;

/// A call let through by [`Breaker::admit`]: settle it with [`answered`](Self::answered) or
/// [`unavailable`](Self::unavailable) once the server's client has reported. Dropping it
/// unsettled counts as neither (a probe dropped so lets the next call probe).
#[must_use = "settle an admission with `answered` or `unavailable`"]
pub struct Admission<'a> {
    pub(super) breaker: &'a Breaker,
    pub(super) probe: Option<u64>,
}

impl Admission<'_> {
    /// Whether this call is the probe of an open breaker.
    #[must_use]
    pub fn is_probe(&self) -> bool {
        self.probe.is_some()
    }

    /// The server answered, whatever it said (a grant, "busy", an error reply of its own):
    /// it is reachable. Closes the breaker when this call was its probe.
    pub fn answered(mut self) {
        let probe = self.probe.take();
        // The hot path: an ordinary call answered while the breaker is closed.
        if probe.is_none() && self.breaker.shared.state.load(Ordering::Acquire) == super::CLOSED {
            return;
        }
        self.breaker.on_answer(probe);
    }

    /// The call did not reach the server or got no answer in time (a refused, reset or
    /// dropped connection, a timeout, no pooled connection): an availability failure, which
    /// counts towards opening the breaker. `error` is what the client reported.
    pub fn unavailable(mut self, error: impl fmt::Display) {
        let probe = self.probe.take();
        self.breaker
            .on_unavailable(probe, Arc::from(error.to_string()));
    }
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        if let Some(probe) = self.probe.take() {
            self.breaker.on_abandoned(probe);
        }
    }
}

impl fmt::Debug for Admission<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admission")
            .field("backend", &self.breaker.shared.backend)
            .field("probe", &self.probe.is_some())
            .finish()
    }
}

/// Who asks to be let through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Caller {
    /// A call: probes only when no background loop waits to (or it let the probe lapse).
    Call,
    /// A background loop waiting in [`Breaker::admitted`]: probes as soon as it is due.
    Background,
}

/// A background loop counted as waiting in [`Breaker::admitted`] until dropped.
pub(super) struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    pub(super) fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
