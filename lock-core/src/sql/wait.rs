//! Waiting for a grant, and running statements with retries.

use std::future::Future;
use std::time::Duration;

use tokio::time::{sleep_until, Instant};

use super::waiters::WaiterHub;
use super::SqlConfig;
use crate::backend::{AcquireRequest, Grant};
use crate::breaker::Breaker;
use crate::{LockError, Result};

/// How often a waiter re-checks the lock on its own.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Polling {
    /// The first pause.
    first: Duration,
    /// The longest pause, which the pauses double up to.
    cap: Duration,
}

impl Polling {
    /// Where the database wakes waiters (`notified`), a re-check every second as a safety net
    /// in case a notification is lost; where it cannot, a poll doubling from 10 ms to 100 ms.
    /// `cap`, when given, replaces the cap (and caps the first pause).
    pub(crate) fn new(notified: bool, cap: Option<Duration>) -> Self {
        let (first, default_cap) = if notified {
            (Duration::from_secs(1), Duration::from_secs(1))
        } else {
            (Duration::from_millis(10), Duration::from_millis(100))
        };
        let cap = cap.unwrap_or(default_cap);
        Self {
            first: first.min(cap),
            cap,
        }
    }
}

/// The outcome of one acquire attempt.
pub(crate) enum Attempt<L> {
    Granted(Grant<L>),
    /// Held by another owner, whose lease has this much left (by the database's clock).
    Busy(Option<Duration>),
}

/// Tries `attempt` until it grants or `request.deadline` passes, sleeping between tries until a
/// wake-up for `lock_key` arrives through `hub`; the key's one polling waiter (see
/// `waiters.rs`) also looks again when the holder's lease ends or the poll interval (doubling
/// as `polling` says, jittered) runs out. `attempt` gets `true` for
/// re-checks after a busy answer. Dropping the future unregisters the waiter.
pub(crate) async fn wait_for_grant<L, F, Fut>(
    hub: &WaiterHub,
    lock_key: &str,
    request: &AcquireRequest<'_>,
    polling: Polling,
    mut attempt: F,
) -> Result<Option<Grant<L>>>
where
    F: FnMut(bool) -> Fut,
    Fut: Future<Output = Result<Attempt<L>>>,
{
    let mut waiting = None;
    let mut interval = polling.first;
    let mut rechecking = false;
    loop {
        if waiting.is_none() && request.deadline.is_none_or(|d| Instant::now() < d) {
            waiting = Some(hub.register(lock_key));
        }
        match attempt(rechecking).await? {
            Attempt::Granted(grant) => {
                if let Some(waiting) = waiting.as_mut() {
                    waiting.granted = true;
                }
                return Ok(Some(grant));
            }
            Attempt::Busy(left) => {
                rechecking = true;
                let Some(waiting) = waiting.as_ref().filter(|_| !request.deadline_passed()) else {
                    return Ok(None);
                };
                // One waiter per key polls; the others wait for a wake-up or their deadline.
                let mut recheck_at = if waiting.polls() {
                    let mut pause = crate::jitter::jitter(interval);
                    if let Some(left) = left {
                        pause = pause.min(left + Duration::from_millis(1));
                    }
                    interval = (interval * 2).min(polling.cap);
                    Some(Instant::now() + pause)
                } else {
                    None
                };
                if let Some(deadline) = request.deadline {
                    recheck_at = Some(recheck_at.map_or(deadline, |at| at.min(deadline)));
                }
                tokio::select! {
                    () = waiting.woken() => {}
                    () = sleep_until(recheck_at.unwrap_or_else(Instant::now)), if recheck_at.is_some() => {}
                }
            }
        }
    }
}

/// Runs `statement` through `breaker`, sending it again when the reply was lost (a timeout, a
/// dropped connection, a deadlock victim); the statements are written so a resend is
/// idempotent.
pub(crate) async fn run<T, F, Fut>(
    backend: &'static str,
    config: &SqlConfig,
    breaker: &Breaker,
    operation: &'static str,
    statement: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, sqlx::Error>>,
{
    let admission = breaker.admit()?;
    let outcome = run_admitted(backend, config, operation, statement).await;
    match &outcome {
        // `None`: no reply within the response timeout.
        Err(None) => {
            admission.unavailable(format!("no reply within {:?}", config.response_timeout))
        }
        Err(Some(error)) if is_unreachable(error) => admission.unavailable(error),
        _ => admission.answered(),
    }
    outcome.map_err(|error| match error {
        None | Some(sqlx::Error::PoolTimedOut) => LockError::Timeout {
            backend,
            operation,
            after: config.response_timeout,
        },
        Some(error) => to_lock_error(backend, error),
    })
}

async fn run_admitted<T, F, Fut>(
    backend: &'static str,
    config: &SqlConfig,
    operation: &'static str,
    mut statement: F,
) -> Result<T, Option<sqlx::Error>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, sqlx::Error>>,
{
    let mut attempt = 0;
    loop {
        attempt += 1;
        let error = match tokio::time::timeout(config.response_timeout, statement()).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(error)) => Some(error),
            Err(_elapsed) => None,
        };
        if attempt < config.attempts && error.as_ref().is_none_or(is_transient) {
            match &error {
                Some(error) => {
                    tracing::debug!(backend, operation, attempt, %error, "reply lost; sending again")
                }
                None => tracing::debug!(
                    backend,
                    operation,
                    attempt,
                    "no reply in time; sending again"
                ),
            }
            tokio::time::sleep(Duration::from_millis(20) * attempt).await;
            continue;
        }
        return Err(error);
    }
}

/// True for an availability failure: no connection (I/O errors, a pool with none to give or
/// closed, a crashed connection worker, TLS trouble) or a server refusing connections
/// (SQLSTATE class 08, 57P01-03 shut down or starting, 53300 too many connections). Errors the
/// database answered with (constraint, syntax, deadlock victims) prove it is there.
pub(crate) fn is_unreachable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|c| {
            c.starts_with("08") || c == "57P01" || c == "57P02" || c == "57P03" || c == "53300"
        }),
        _ => false,
    }
}

/// Errors after which the same statement may well succeed: connection trouble, and the
/// database choosing this statement as a deadlock or serialization victim.
fn is_transient(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            #[cfg(feature = "mysql")]
            if let Some(my) = db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
                // Lock wait timeout, deadlock victim.
                return matches!(my.number(), 1205 | 1213);
            }
            // Serialization failure / deadlock, connection exceptions, admin shutdown.
            db.code().is_some_and(|c| {
                c == "40001" || c == "40P01" || c == "57P01" || c.starts_with("08")
            })
        }
        _ => false,
    }
}

pub(crate) fn to_lock_error(backend: &'static str, error: sqlx::Error) -> LockError {
    match error {
        sqlx::Error::Configuration(e) => {
            LockError::InvalidConfig(format!("{backend} connection settings: {e}"))
        }
        other => LockError::unavailable(backend, other),
    }
}

pub(crate) fn protocol(backend: &'static str, detail: String) -> LockError {
    LockError::Protocol { backend, detail }
}

/// A fencing token as stored (a signed 64-bit column on PostgreSQL; MySQL's unsigned one is
/// read as signed, its tokens being far below 2^63).
pub(crate) fn fence_from_i64(backend: &'static str, value: i64) -> Result<crate::FencingToken> {
    u64::try_from(value)
        .map(crate::FencingToken::new)
        .map_err(|_| protocol(backend, format!("negative fencing token {value}")))
}
