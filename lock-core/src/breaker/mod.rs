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
//!   (`PostgresResultStore::builder_from_pool(pool).breaker(backend.breaker().clone())`):
//!   an SQL pool has no place to hang one on, and matching pools by identity in a global table
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

mod admission;
mod machine;
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

pub use self::admission::Admission;
use self::admission::{Caller, Waiting};
pub use self::options::BreakerOptions;
pub use crate::error::CircuitOpen;
use crate::sync::lock;
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

impl Breaker {
    /// A closed breaker for the backend named `backend` (the name its errors, logs and
    /// metrics carry). Check `options` with [`BreakerOptions::validate`] first: settings it
    /// refuses make a breaker that opens at the first failure and probes without pause.
    #[must_use]
    pub fn new(backend: &'static str, options: BreakerOptions) -> Self {
        let now = Instant::now();
        crate::metrics::backend_available(backend, true);
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
}

impl fmt::Debug for Breaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Breaker")
            .field("backend", &self.shared.backend)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}
