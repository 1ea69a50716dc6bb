//! The circuit breaker of a backend's server connection: once the server is known to be down,
//! calls fail fast instead of each waiting for its own timeouts, and one probe at a time finds
//! out when it is back.
//!
//! ```
//! use lock_core::breaker::{Breaker, BreakerOptions, BreakerState};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
//! // What a backend does around every command it sends (lock-core's own backends do it for
//! // you; a backend of your own can too, and return it from `LockBackend::breaker`).
//! let breaker = Breaker::new("my-store", BreakerOptions::new());
//! for _ in 0..3 {
//!     let admission = breaker.admit()?;
//!     // ... send the command; the connection was refused:
//!     admission.unavailable("Connection refused (os error 111)");
//! }
//! let refused = breaker.admit().unwrap_err(); // at once, nothing sent
//! assert!(refused.circuit_open().is_some() && refused.is_unavailable());
//! assert!(matches!(breaker.state(), BreakerState::Open { .. }));
//!
//! // After the cool-down, one call is the probe; its answer closes the breaker.
//! let probe = breaker.admitted().await;
//! assert!(probe.is_probe());
//! probe.answered();
//! assert_eq!(breaker.state(), BreakerState::Closed);
//! # Ok(()) }
//! ```
//!
//! # Scope: one breaker per server connection
//! "The backend is known to be down" is a fact about one connection to one server, so a
//! breaker belongs to what holds that connection, never to the process:
//! - `RedisBackend`: one per backend (its clones share it), and the `RedisResultStore` made
//!   from it shares it too, as it shares the multiplexed connection. The backend's wake-up
//!   subscription and the store's push subscription go through it as well.
//! - `PostgresBackend`, `PostgresAdvisoryBackend`, `MySqlBackend`: one per backend (its pool).
//!   A `PostgresResultStore` has one of its own unless it is given the backend's
//!   (`PostgresResultStore::builder_with_pool(pool).breaker(backend.breaker().clone())`):
//!   a sqlx pool has no place to hang one on, and matching pools by identity in a global table
//!   would be the hidden process-wide state this design avoids.
//! - `ZooKeeperBackend`: one per backend (its session, renewed when one expires).
//! - `EtcdBackend`: one per backend (its gRPC channel).
//! - [`MemoryBackend`](crate::MemoryBackend): none; it cannot be unreachable.
//!
//! No state is process-global: tests that run many clients against the same servers, and kill
//! servers of their own, see each client's breaker alone.
//!
//! # What opens it
//! Only availability failures, as the backend's client reports them: a connection refused,
//! reset or dropped, a timeout, a pool with no connection to give (Redis: I/O errors and
//! timeouts, `LOADING`, `MASTERDOWN`, `READONLY`; SQL: I/O errors, pool timeouts, connection
//! and shutdown SQLSTATEs; ZooKeeper: connection loss and timeouts; etcd: transport errors,
//! `Unavailable` and `DeadlineExceeded`). Contention, bad input, a script's or server's error
//! reply and a lost lease prove the server is there: they count as answers.
//!
//! [`BreakerOptions::failures`] such failures in a row (3), the first no older than
//! [`BreakerOptions::window`] (10 s), open it. Three rather than one, because a single
//! reset connection is usually healed by the next command's reconnect; within a window, so
//! failures hours apart never add up. A call already retries its command (lock-core's backends
//! send a lost command again, 3 times by default) before it reports a failure.
//!
//! # Open, half-open, closed
//! - **Open**: every call is refused at once with [`LockError::Unavailable`] whose source is
//!   [`CircuitOpen`] (its [`retry_after`](CircuitOpen::retry_after) says when the probe is
//!   due; the HTTP layers send it as `Retry-After`). Fail-open callers (the response cache,
//!   [`Cache`](crate::cache::Cache), `#[single_flight]`) compute without collapsing; the
//!   others (idempotency, the keyed lock, a fail-closed cache, plain acquires) answer
//!   "unavailable" (HTTP 503). An acquire refused before anything was sent needs no clean-up.
//! - **Half-open**: after the cool-down (500 ms, doubled after every failed probe up to 5 s,
//!   each spread by ±20%, never past the 5 s, so that a fleet does not probe in step, and a
//!   `Retry-After` is never later than 5 s), exactly one attempt goes to
//!   the server; every call keeps failing fast. A probe unanswered for
//!   [`BreakerOptions::probe_timeout`] (10 s) counts as failed; a probe dropped unanswered
//!   (its caller was cancelled) lets the next one probe at once.
//!
//!   Who probes: a backend with a background connection that must come back anyway (Redis's
//!   wake-up and push subscriptions) probes with it, waiting in [`Breaker::admitted`]: no
//!   request pays for a probe against a dead server (the connection manager's reconnect
//!   attempts take about half a second), so every request in the outage is answered fast.
//!   Calls probe only when no such loop waits, or when it let the probe lapse for a probe
//!   timeout: backends without one (PostgreSQL, MySQL, ZooKeeper, etcd) probe with the first
//!   call after the cool-down, which then takes as long as the server's client needs to fail.
//! - **Closed**: the probe's answer closes it. So does any answer when the breaker does not
//!   [fail fast](BreakerOptions::fail_fast).
//!
//! Background work follows the same rule: the Redis subscriptions wait for
//! [`Breaker::admitted`] before subscribing again (and are the probes); the PostgreSQL `LISTEN`
//! connections and the clean-up of an abandoned acquire wait for [`Breaker::ready`] (the
//! breaker closed, or a probe due), so while the server is down they try no more often than
//! the probes do.
//!
//! # Out of the hot path
//! A closed breaker costs one atomic load to admit a call and one to settle it: no lock, no
//! allocation, no clock read. Only failures, refusals and transitions take the breaker's mutex.
//!
//! # What it says
//! One WARN when the backend goes down, one INFO when it is back (how long it was down, how
//! many calls were refused); between them, failed probes and refused calls are DEBUG, with at
//! most one INFO "still down" line per [`BreakerOptions::summary_every`] (30 s). The callers
//! (cache, idempotency, keyed lock, watchdog, clean-ups) log their own availability failures at
//! DEBUG, since the breaker reports the outage. With the `metrics` feature:
//! [`BACKEND_AVAILABLE`](crate::metrics::BACKEND_AVAILABLE) (gauge),
//! [`BREAKER_TRANSITIONS_TOTAL`](crate::metrics::BREAKER_TRANSITIONS_TOTAL) and
//! [`BREAKER_REFUSED_TOTAL`](crate::metrics::BREAKER_REFUSED_TOTAL); and
//! [`Breaker::state`] at any time (`LockClient::breaker`, `RedisBackend::breaker`, ...).

mod circuit_open;
mod options;
mod report;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::{sleep_until, Instant};

pub use self::circuit_open::CircuitOpen;
pub use self::options::BreakerOptions;
use crate::lock::held::lock;
use crate::{LockError, Result};

/// Closed, no availability failure since the last answer: what every call finds on a good day.
const CLOSED: u8 = 0;
/// Closed, with availability failures since the last answer.
const FAILING: u8 = 1;
/// Open: calls are refused until the probe is due.
const OPEN: u8 = 2;
/// Half-open: one probe is under way; the others are refused.
const HALF_OPEN: u8 = 3;

/// The circuit breaker of one server connection (see the [module docs](self)). Cheap to
/// clone; clones share the state.
#[derive(Clone)]
pub struct Breaker {
    shared: Arc<Shared>,
}

struct Shared {
    backend: &'static str,
    options: BreakerOptions,
    /// One of the four states above: the only thing a call reads while the breaker is closed.
    state: AtomicU8,
    detail: Mutex<Detail>,
    /// Woken at every transition, for [`Breaker::admitted`].
    changed: Notify,
    /// Background loops waiting in [`Breaker::admitted`]: while there are any, they probe
    /// and calls do not.
    background: AtomicUsize,
}

/// Who asks to be let through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Caller {
    /// A call: probes only when no background loop waits to (or it let the probe lapse).
    Call,
    /// A background loop waiting in [`Breaker::admitted`]: probes as soon as it is due.
    Background,
}

/// A background loop counted as waiting in [`Breaker::admitted`] until dropped.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Everything but the state, behind the mutex that failures, refusals and transitions take.
struct Detail {
    streak: u32,
    streak_started: Instant,
    down_since: Instant,
    cool_down: Duration,
    probe_due: Instant,
    /// The generation of the latest probe: the answer of one that was given up on is late.
    probe: u64,
    probe_started: Instant,
    refused: u64,
    last_summary: Instant,
    last_error: Arc<str>,
}

/// Where a breaker stands, as [`Breaker::state`] reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BreakerState {
    /// Calls go to the server.
    Closed,
    /// The server is known to be down: calls are refused until the probe is due.
    Open {
        /// How long the server has been known to be down.
        down_for: Duration,
        /// When the next probe is due.
        retry_after: Duration,
    },
    /// One probe is under way; the other calls are refused.
    HalfOpen {
        /// How long the server has been known to be down.
        down_for: Duration,
    },
}

/// A call let through by [`Breaker::admit`]: settle it with [`answered`](Self::answered) or
/// [`unavailable`](Self::unavailable) once the server's client has reported. Dropping it
/// unsettled counts as neither (a probe dropped so lets the next call probe).
#[must_use = "settle an admission with `answered` or `unavailable`"]
pub struct Admission<'a> {
    breaker: &'a Breaker,
    probe: Option<u64>,
}

/// A refusal, with when a waiting caller should look again.
struct Refused {
    error: CircuitOpen,
    recheck_at: Instant,
}

/// What to tell operators once the mutex is let go.
enum Event {
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
    /// A closed breaker for the backend named `backend` (the name its errors, logs and
    /// metrics carry). Check `options` with [`BreakerOptions::validate`] first: settings it
    /// refuses make a breaker that opens at the first failure and probes without pause.
    #[must_use]
    pub fn new(backend: &'static str, options: BreakerOptions) -> Self {
        let now = Instant::now();
        crate::lock::metrics::backend_available(backend, true);
        Self {
            shared: Arc::new(Shared {
                backend,
                options,
                state: AtomicU8::new(CLOSED),
                detail: Mutex::new(Detail {
                    streak: 0,
                    streak_started: now,
                    down_since: now,
                    cool_down: options.first_cool_down(),
                    probe_due: now,
                    probe: 0,
                    probe_started: now,
                    refused: 0,
                    last_summary: now,
                    last_error: Arc::from(""),
                }),
                changed: Notify::new(),
                background: AtomicUsize::new(0),
            }),
        }
    }

    /// The backend's name.
    #[must_use]
    pub fn backend(&self) -> &'static str {
        self.shared.backend
    }

    /// The settings.
    pub fn options(&self) -> BreakerOptions {
        self.shared.options
    }

    /// Where the breaker stands now.
    ///
    /// ```
    /// use lock_core::breaker::{Breaker, BreakerOptions, BreakerState};
    ///
    /// let breaker = Breaker::new("redis", BreakerOptions::new());
    /// assert_eq!(breaker.state(), BreakerState::Closed);
    /// ```
    #[must_use]
    pub fn state(&self) -> BreakerState {
        let detail = lock(&self.shared.detail);
        let now = Instant::now();
        let down_for = now.saturating_duration_since(detail.down_since);
        match self.shared.state.load(Ordering::Acquire) {
            OPEN => BreakerState::Open {
                down_for,
                retry_after: detail.probe_due.saturating_duration_since(now),
            },
            HALF_OPEN => BreakerState::HalfOpen { down_for },
            _ => BreakerState::Closed,
        }
    }

    /// Lets a call through, or refuses it at once while the server is known to be down
    /// ([`LockError::Unavailable`] with a [`CircuitOpen`] source). While open, the first call
    /// after the cool-down is let through as the probe.
    ///
    /// ```
    /// use lock_core::breaker::{Breaker, BreakerOptions};
    ///
    /// let breaker = Breaker::new("redis", BreakerOptions::new());
    /// let admission = breaker.admit()?;
    /// assert!(!admission.is_probe());
    /// admission.answered();
    /// # Ok::<(), lock_core::LockError>(())
    /// ```
    pub fn admit(&self) -> Result<Admission<'_>> {
        self.try_admit(Caller::Call, true)
            .map_err(|refused| LockError::Unavailable {
                backend: self.shared.backend,
                source: Box::new(refused.error),
            })
    }

    /// Refuses a call as [`admit`](Self::admit) would, without letting it through as the
    /// probe: for a caller about to start work that sends its commands through `admit` later
    /// (the client, before an acquisition, so that one refused here leaves nothing behind).
    ///
    /// ```
    /// use lock_core::breaker::{Breaker, BreakerOptions};
    ///
    /// let breaker = Breaker::new("redis", BreakerOptions::new().failures(1));
    /// breaker.check()?;
    /// breaker.admit()?.unavailable("Connection refused (os error 111)");
    /// assert!(breaker.check().unwrap_err().circuit_open().is_some());
    /// # Ok::<(), lock_core::LockError>(())
    /// ```
    pub fn check(&self) -> Result<()> {
        match self.try_check(true) {
            Ok(()) => Ok(()),
            Err(refused) => Err(LockError::Unavailable {
                backend: self.shared.backend,
                source: Box::new(refused.error),
            }),
        }
    }

    /// Waits until [`check`](Self::check) would let a call through: the breaker closed, or its
    /// probe is due.
    pub async fn ready(&self) {
        loop {
            let changed = self.shared.changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            let recheck_at = match self.try_check(false) {
                Ok(()) => return,
                Err(refused) => refused.recheck_at,
            };
            tokio::select! {
                () = changed => {}
                () = sleep_until(recheck_at) => {}
            }
        }
    }

    /// Waits until a call would be let through (at once while closed; while open, until this
    /// caller can probe or another's probe closed it): for background work that would
    /// otherwise retry against a server that is down. While such work waits here, it is the
    /// one that probes when the probe is due, so that every call keeps failing fast; calls
    /// probe only if it lets the probe lapse for a probe timeout.
    pub async fn admitted(&self) -> Admission<'_> {
        let _waiting = Waiting::enter(&self.shared.background);
        loop {
            let changed = self.shared.changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            let recheck_at = match self.try_admit(Caller::Background, false) {
                Ok(admission) => return admission,
                Err(refused) => refused.recheck_at,
            };
            tokio::select! {
                () = changed => {}
                () = sleep_until(recheck_at) => {}
            }
        }
    }

    fn try_check(&self, counted: bool) -> std::result::Result<(), Refused> {
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
    fn probe_at(&self, detail: &Detail, state: u8, caller: Caller) -> Option<Instant> {
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

    fn try_admit(
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
    fn on_answer(&self, probe: Option<u64>) {
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
    fn on_unavailable(&self, probe: Option<u64>, error: Arc<str>) {
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
    fn on_abandoned(&self, probe: u64) {
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
    fn summary_due(&self, detail: &mut Detail, now: Instant) -> Option<Event> {
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

    fn tell(&self, event: Event) {
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
    crate::backends::jitter(cool_down).min(options.max_cool_down())
}

impl fmt::Debug for Breaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Breaker")
            .field("backend", &self.shared.backend)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
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
        if probe.is_none() && self.breaker.shared.state.load(Ordering::Acquire) == CLOSED {
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
