//! The state machine: who is let through in which state (one atomic load while closed), and
//! what an answer, an availability failure or an abandoned probe does to the state. What
//! operators are told is decided here and said once the mutex is let go ([`Event`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::admission::{Admission, Caller};
use super::{
    report, Breaker, BreakerOptions, CircuitOpen, Detail, CLOSED, FAILING, HALF_OPEN, OPEN,
};
use crate::sync::lock;

/// A refusal, with when a waiting caller should look again.
pub(super) struct Refused {
    pub(super) error: CircuitOpen,
    pub(super) recheck_at: Instant,
}

/// What to tell operators once the mutex is let go.
pub(super) enum Event {
    Opened {
        failures: u32,
        within: Duration,
        last_error: Arc<str>,
        probe_in: Duration,
    },
    Probing,
    ProbeFailed {
        error: Arc<str>,
        cool_down: Duration,
    },
    StillDown {
        down_for: Duration,
        refused: u64,
        last_error: Arc<str>,
        next_probe: Duration,
    },
    Closed {
        down_for: Duration,
        refused: u64,
    },
}

impl Breaker {
    pub(super) fn try_check(&self, counted: bool) -> std::result::Result<(), Refused> {
        if self.shared.state.load(Ordering::Acquire) <= FAILING || !self.shared.options.fails_fast()
        {
            return Ok(());
        }
        let due = {
            let detail = lock(&self.shared.detail);
            let state = self.shared.state.load(Ordering::Acquire);
            self.probe_at(&detail, state, Caller::Call)
        };
        match due {
            Some(due) if Instant::now() < due => self.try_admit(Caller::Call, counted).map(drop),
            _ => Ok(()),
        }
    }

    /// When `caller` may probe in `state` (`None`: closed). A call leaves the probe to a
    /// background loop waiting for it, unless that loop let it lapse for a probe timeout.
    pub(super) fn probe_at(&self, detail: &Detail, state: u8, caller: Caller) -> Option<Instant> {
        let timeout = self.shared.options.probe_timeout_after();
        match state {
            OPEN if caller == Caller::Call
                && self.shared.background.load(Ordering::Acquire) > 0 =>
            {
                Some(detail.probe_due + timeout)
            }
            OPEN => Some(detail.probe_due),
            HALF_OPEN => Some(detail.probe_started + timeout),
            _ => None,
        }
    }

    pub(super) fn try_admit(
        &self,
        caller: Caller,
        counted: bool,
    ) -> std::result::Result<Admission<'_>, Refused> {
        // The hot path: while closed, one load decides.
        if self.shared.state.load(Ordering::Acquire) <= FAILING || !self.shared.options.fails_fast()
        {
            return Ok(Admission {
                breaker: self,
                probe: None,
            });
        }
        let shared = &self.shared;
        let now = Instant::now();
        let mut detail = lock(&shared.detail);
        let state = shared.state.load(Ordering::Acquire);
        let Some(probe_at) = self.probe_at(&detail, state, caller) else {
            return Ok(Admission {
                breaker: self,
                probe: None,
            });
        };
        if now >= probe_at {
            detail.probe += 1;
            detail.probe_started = now;
            shared.state.store(HALF_OPEN, Ordering::Release);
            let probe = detail.probe;
            drop(detail);
            self.tell(Event::Probing);
            return Ok(Admission {
                breaker: self,
                probe: Some(probe),
            });
        }
        // When the next probe is due: zero once it is, or while one is under way.
        let retry_after = match state {
            OPEN => detail.probe_due.saturating_duration_since(now),
            _ => Duration::ZERO,
        };
        let error = CircuitOpen::new(
            shared.backend,
            now.saturating_duration_since(detail.down_since),
            retry_after,
            detail.last_error.clone(),
        );
        let mut summary = None;
        if counted {
            detail.refused += 1;
            summary = self.summary_due(&mut detail, now);
        }
        drop(detail);
        if counted {
            report::refused(shared.backend);
            tracing::debug!(backend = shared.backend, "lock backend down: call refused");
        }
        if let Some(summary) = summary {
            self.tell(summary);
        }
        Err(Refused {
            error,
            recheck_at: probe_at,
        })
    }

    /// The server answered (whatever it said).
    pub(super) fn on_answer(&self, probe: Option<u64>) {
        let shared = &self.shared;
        let mut detail = lock(&shared.detail);
        match shared.state.load(Ordering::Acquire) {
            CLOSED => {}
            FAILING => {
                detail.streak = 0;
                shared.state.store(CLOSED, Ordering::Release);
            }
            _ => {
                // While a fail-fast breaker is open only probes are let through: any other
                // answer is of a call sent before it opened, and says nothing about now.
                if probe.is_none() && shared.options.fails_fast() {
                    return;
                }
                let now = Instant::now();
                let event = Event::Closed {
                    down_for: now.saturating_duration_since(detail.down_since),
                    refused: detail.refused,
                };
                detail.streak = 0;
                detail.refused = 0;
                detail.cool_down = shared.options.first_cool_down();
                shared.state.store(CLOSED, Ordering::Release);
                drop(detail);
                self.tell(event);
                shared.changed.notify_waiters();
            }
        }
    }

    /// The call failed to reach the server (`error` as its client reported it).
    pub(super) fn on_unavailable(&self, probe: Option<u64>, error: Arc<str>) {
        let shared = &self.shared;
        let options = shared.options;
        let now = Instant::now();
        let mut detail = lock(&shared.detail);
        let state = shared.state.load(Ordering::Acquire);
        let event = match state {
            CLOSED | FAILING => {
                if detail.streak == 0
                    || now.saturating_duration_since(detail.streak_started)
                        > options.failure_window()
                {
                    detail.streak = 0;
                    detail.streak_started = now;
                }
                detail.streak += 1;
                detail.last_error = error;
                if detail.streak < options.failures_to_open() {
                    shared.state.store(FAILING, Ordering::Release);
                    None
                } else {
                    let probe_in = spread(options.first_cool_down(), options);
                    detail.down_since = detail.streak_started;
                    detail.cool_down = options.first_cool_down();
                    detail.probe_due = now + probe_in;
                    detail.refused = 0;
                    detail.last_summary = now;
                    shared.state.store(OPEN, Ordering::Release);
                    Some(Event::Opened {
                        failures: detail.streak,
                        within: now.saturating_duration_since(detail.streak_started),
                        last_error: detail.last_error.clone(),
                        probe_in,
                    })
                }
            }
            HALF_OPEN if probe == Some(detail.probe) => {
                detail.cool_down = (detail.cool_down * 2).min(options.max_cool_down());
                let cool_down = spread(detail.cool_down, options);
                detail.probe_due = now + cool_down;
                detail.last_error = error.clone();
                shared.state.store(OPEN, Ordering::Release);
                let summary = self.summary_due(&mut detail, now);
                drop(detail);
                self.tell(Event::ProbeFailed { error, cool_down });
                if let Some(summary) = summary {
                    self.tell(summary);
                }
                shared.changed.notify_waiters();
                return;
            }
            // A call sent before the breaker opened, a probe given up on, or (without fail
            // fast) any call while open: news of the same outage.
            _ => {
                detail.last_error = error;
                self.summary_due(&mut detail, now)
            }
        };
        drop(detail);
        if let Some(event) = event {
            let opened = matches!(event, Event::Opened { .. });
            self.tell(event);
            if opened {
                shared.changed.notify_waiters();
            }
        }
    }

    /// A probe was dropped before it was settled (its caller was cancelled): the next call
    /// probes at once.
    pub(super) fn on_abandoned(&self, probe: u64) {
        let shared = &self.shared;
        let mut detail = lock(&shared.detail);
        if shared.state.load(Ordering::Acquire) == HALF_OPEN && detail.probe == probe {
            detail.probe_due = Instant::now();
            shared.state.store(OPEN, Ordering::Release);
            drop(detail);
            shared.changed.notify_waiters();
        }
    }

    /// The "still down" line, when one is due.
    pub(super) fn summary_due(&self, detail: &mut Detail, now: Instant) -> Option<Event> {
        let every = self.shared.options.summary_interval();
        if now.saturating_duration_since(detail.last_summary) < every {
            return None;
        }
        detail.last_summary = now;
        Some(Event::StillDown {
            down_for: now.saturating_duration_since(detail.down_since),
            refused: detail.refused,
            last_error: detail.last_error.clone(),
            next_probe: detail.probe_due.saturating_duration_since(now),
        })
    }

    pub(super) fn tell(&self, event: Event) {
        let backend = self.shared.backend;
        match event {
            Event::Opened {
                failures,
                within,
                last_error,
                probe_in,
            } => report::opened(
                backend,
                failures,
                within,
                &last_error,
                probe_in,
                self.shared.options.fails_fast(),
            ),
            Event::Probing => report::probing(backend),
            Event::ProbeFailed { error, cool_down } => {
                report::probe_failed(backend, &error, cool_down);
            }
            Event::StillDown {
                down_for,
                refused,
                last_error,
                next_probe,
            } => report::still_down(backend, down_for, refused, &last_error, next_probe),
            Event::Closed { down_for, refused } => report::closed(backend, down_for, refused),
        }
    }
}

/// A cool-down spread by ±20% (so that a fleet does not probe in step), never past the
/// longest one: a `Retry-After` is never later than the options say.
fn spread(cool_down: Duration, options: BreakerOptions) -> Duration {
    crate::jitter::jitter(cool_down).min(options.max_cool_down())
}
