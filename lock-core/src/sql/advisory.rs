//! PostgreSQL session advisory locks: `pg_try_advisory_lock` on a 64-bit hash of the name,
//! held by a database session of its own for as long as the lease lives.

use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use sqlx::postgres::{PgListener, PgPoolOptions};
use tokio::sync::{mpsc, oneshot, Mutex};
use tokio::time::Instant;

use super::dialect::Sealed;
use super::{fence_from_i64, run, storage_key, to_lock_error, wait_for_grant, Attempt, Shared};
use crate::backend::{
    Abandoned, AcquireRequest, Capabilities, Grant, LeaseKind, LockBackend, OptionalTraits,
};
use crate::{LockError, LossSignal, LostReason, Result};

/// Errors name the table backend's database: the two share a pool and its breaker.
const BACKEND: &str = <sqlx::Postgres as Sealed>::BACKEND;

/// The backend's own name, in its capabilities and in what it refuses.
pub(crate) const ADVISORY_BACKEND: &str = "postgres-advisory";

/// Whether the session running it holds the advisory lock `$1` (a bigint key shows in
/// `pg_locks` as `classid` = high and `objid` = low 32 bits, `objsubid` = 1).
const HELD_HERE: &str = "SELECT EXISTS (SELECT 1 FROM pg_locks
   WHERE locktype = 'advisory' AND objsubid = 1 AND granted AND pid = pg_backend_pid()
     AND ((classid::bigint << 32) | objid::bigint) = $1)";

/// Unlocks and wakes a waiter, in one round trip.
const UNLOCK: &str =
    "SELECT pg_advisory_unlock($1) AS released FROM (SELECT pg_notify($2, $3)) AS wake";

/// Locks as PostgreSQL session advisory locks; get one with
/// [`PostgresBackend::advisory`](crate::PostgresBackend::advisory) or
/// [`connect`](Self::connect). Read the trade-offs first.
///
/// # Trade-offs against the lock table
/// - **No lease expiry.** The lock lives exactly as long as its session: a crashed process's
///   lock is freed as soon as the server sees its connection close, with no TTL to wait for;
///   but a holder that is alive yet stuck (paused, partitioned without the TCP connection
///   closing) keeps the lock. [`Capabilities::lease_expiry`] is false.
/// - **Losses are pushed.** When the session ends (`pg_terminate_backend`, a server restart,
///   a network failure) the guard's `lost()` fires with `SessionLost` at once.
/// - **One connection per held lock**, opened for the acquisition and closed at release, instead
///   of the table mode's shared pool: fine for a few long-held locks, costly for many short ones.
/// - **Nothing to clean up.** No rows, no schema beyond the fencing sequence, nothing left
///   behind by a crash.
/// - **The operator's view is partial** ([`OperatorBackend`](crate::backend::OperatorBackend)):
///   inspecting a lock reads `pg_locks`, and the holding session names the lease in its
///   `application_name` (`lock-core/<owner>/<fencing token>`, set by the statement that takes
///   the lock), so the holder's owner token and fencing token are shown, but no label, time
///   of grant or lease left. Listing is refused (the server knows a lock by a hash of its
///   name), and so is a forced release (an advisory lock belongs to its session: end the
///   holder's session or process instead).
/// - Fencing tokens come from the same sequence as the table mode's, taken while the lock is
///   held, so they increase per name. The two modes do **not** exclude each other: use one
///   mode per name. Two names whose 64-bit hashes collide exclude each other (harmless, and
///   about as likely as a random 64-bit collision); so would other software taking advisory
///   locks with the same number.
///
/// # Example
/// ```no_run
/// use lock_core::{LockClient, PostgresAdvisoryBackend};
///
/// # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(PostgresAdvisoryBackend::connect("postgres://app@127.0.0.1/app").await?);
/// let guard = locks.lock("nightly-migration").await?;
/// tokio::select! {
///     reason = guard.lost() => eprintln!("session ended, stopping: {reason}"),
///     () = async { /* the work */ } => {}
/// }
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PostgresAdvisoryBackend {
    pub(super) shared: Arc<Shared<sqlx::Postgres>>,
}

/// A lease held as a session advisory lock; dropping it closes the session, which frees the
/// lock.
#[derive(Debug)]
pub struct PostgresAdvisoryLease {
    commands: mpsc::Sender<Command>,
}

#[derive(Debug)]
enum Command {
    Check(oneshot::Sender<Result<bool>>),
    Release(oneshot::Sender<Result<bool>>),
}

impl PostgresAdvisoryBackend {
    pub(super) fn new(shared: Arc<Shared<sqlx::Postgres>>) -> Self {
        Self { shared }
    }

    /// Connects with default settings (the lock table's schema is created too, for the shared
    /// fencing sequence).
    pub async fn connect(url: &str) -> Result<Self> {
        Ok(crate::PostgresBackend::connect(url).await?.advisory())
    }

    /// The advisory lock number of the lock `full_key` (`namespace:key`): the first 8 bytes of
    /// its SHA-256, big-endian. Find the holder with `pg_locks` (see the module docs).
    #[must_use]
    pub fn advisory_key(full_key: &str) -> i64 {
        let digest = Sha256::digest(full_key.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        i64::from_be_bytes(first)
    }

    /// How many tasks of this backend (and its table twin) wait for the lock `full_key`.
    #[must_use]
    pub fn waiters(&self, full_key: &str) -> usize {
        self.shared.hub.count(&storage_key(full_key))
    }

    /// Opens the session an acquisition runs on (and, if granted, holds the lock in). It comes
    /// from a pool of its own, so it is closed, never reused, when the lease ends.
    async fn open_session(&self) -> Result<PgListener, sqlx::Error> {
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .min_connections(0)
            .idle_timeout(None)
            .max_lifetime(None)
            .acquire_timeout(self.shared.config.response_timeout)
            .connect_with((*self.shared.pool.connect_options()).clone())
            .await?;
        let mut session = PgListener::connect_with(&pool).await?;
        session.ignore_pool_close_event(true);
        // A lost session lost its locks: never silently reconnect it.
        session.eager_reconnect(false);
        Ok(session)
    }

    async fn attempt(
        &self,
        session: &Mutex<Option<PgListener>>,
        key: i64,
        owner: &str,
        wake_key: &str,
    ) -> Result<Attempt<PostgresAdvisoryLease>> {
        let shared = &*self.shared;
        let (sent, fence) = run(
            BACKEND,
            &shared.config,
            &shared.breaker,
            "acquire",
            || async {
                let mut slot = session.lock().await;
                if slot.is_none() {
                    *slot = Some(self.open_session().await?);
                }
                let Some(listener) = slot.as_mut() else {
                    unreachable!("opened above");
                };
                let sent = Instant::now();
                // The fence, and the session's new name when granted (ignored).
                let result =
                    sqlx::query_as::<_, (Option<i64>, Option<String>)>(&shared.grant.advisory_try)
                        .bind(key)
                        .bind(owner)
                        .fetch_one(&mut *listener)
                        .await;
                if result.is_err() {
                    // The session may hold the lock without us knowing: close it, which frees it.
                    *slot = None;
                }
                Ok((sent, result?.0))
            },
        )
        .await?;
        let Some(fence) = fence else {
            return Ok(Attempt::Busy(None));
        };
        let fence = fence_from_i64(BACKEND, fence)?;
        let Some(listener) = session.lock().await.take() else {
            return Err(super::protocol(BACKEND, "advisory session vanished".into()));
        };
        let loss = LossSignal::new();
        let (commands, receiver) = mpsc::channel(4);
        let held = Held {
            loss: loss.clone(),
            channel: shared.config.table.clone(),
            wake_key: wake_key.to_owned(),
            timeout: shared.config.response_timeout,
        };
        tokio::spawn(hold(listener, key, receiver, held));
        Ok(Attempt::Granted(
            Grant::new(PostgresAdvisoryLease { commands }, fence, sent).with_loss(loss),
        ))
    }

    async fn ask(
        &self,
        lease: &PostgresAdvisoryLease,
        command: fn(oneshot::Sender<Result<bool>>) -> Command,
        operation: &'static str,
    ) -> Result<bool> {
        let (reply, answer) = oneshot::channel();
        if lease.commands.send(command(reply)).await.is_err() {
            return Ok(false); // the session task ended: the session is gone, and its lock
        }
        let timeout = self.shared.config.response_timeout * 2;
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Ok(false),
            Err(_) => Err(LockError::Timeout {
                backend: BACKEND,
                operation,
                after: timeout,
            }),
        }
    }
}

impl LockBackend for PostgresAdvisoryBackend {
    type Lease = PostgresAdvisoryLease;

    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::new(ADVISORY_BACKEND);
        caps.push_wakeups = true;
        caps.lease_expiry = false;
        caps.loss_push = true;
        caps
    }

    fn breaker(&self) -> Option<&crate::breaker::Breaker> {
        Some(&self.shared.breaker)
    }

    async fn acquire(
        &self,
        request: AcquireRequest<'_>,
    ) -> Result<Option<Grant<PostgresAdvisoryLease>>> {
        if request.kind != LeaseKind::Exclusive {
            return Err(request.kind.unsupported(ADVISORY_BACKEND));
        }
        let name = request.key.full();
        let key = Self::advisory_key(name);
        // Dropping this (mid-wait or mid-statement) closes the session and so frees anything
        // it may have taken: nothing is left behind.
        let session = Mutex::new(None);
        let shared = &*self.shared;
        let wake_key = storage_key(name);
        let owner = request.owner.to_hex();
        wait_for_grant(&shared.hub, &wake_key, &request, shared.polling, |_| {
            self.attempt(&session, key, &owner, &wake_key)
        })
        .await
    }

    async fn renew(&self, lease: &PostgresAdvisoryLease, _ttl: Option<Duration>) -> Result<bool> {
        // Advisory locks have no lease to extend: confirm the session still holds the lock.
        self.ask(lease, Command::Check, "renew").await
    }

    async fn release(&self, lease: &PostgresAdvisoryLease) -> Result<bool> {
        self.ask(lease, Command::Release, "release").await
    }

    /// Nothing to do: an advisory lock lives in the acquisition's own session, which the
    /// dropped acquisition closed (its pool of one went with it), and the server frees a
    /// closed session's locks.
    async fn release_abandoned(&self, _abandoned: &Abandoned) -> Result<bool> {
        Ok(false)
    }

    /// The operator's view, partial: see the type's docs.
    fn optional_traits(&self) -> OptionalTraits<'_> {
        OptionalTraits::default().with_operator(self)
    }
}

impl std::fmt::Debug for PostgresAdvisoryBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresAdvisoryBackend")
            .finish_non_exhaustive()
    }
}

/// Owns the session holding lock `key`: answers checks and the release, and fires `loss` as
/// soon as the session ends. Returns (closing the session, which frees the lock whatever
/// happened) at release or when the lease is dropped.
async fn hold(
    mut session: PgListener,
    key: i64,
    mut commands: mpsc::Receiver<Command>,
    held: Held,
) {
    let mut lost = false;
    loop {
        tokio::select! {
            biased;
            command = commands.recv() => {
                let (reply, release) = match command {
                    None => return,
                    Some(Command::Check(reply)) => (reply, false),
                    Some(Command::Release(reply)) => (reply, true),
                };
                let outcome = if lost {
                    Ok(false)
                } else if release {
                    let notify = [held.channel.as_str(), held.wake_key.as_str()];
                    query_bool(&mut session, UNLOCK, key, &notify, held.timeout).await
                } else {
                    query_bool(&mut session, HELD_HERE, key, &[], held.timeout).await
                };
                let outcome = match outcome {
                    // Anything but a slow answer means the session, and so the lock, is gone.
                    Err(error) if !error.is_timeout() => {
                        held.loss.fire(LostReason::SessionLost(error.with_causes()));
                        lost = true;
                        Ok(false)
                    }
                    other => other,
                };
                reply.send(outcome).ok();
                if release {
                    return;
                }
            }
            // The session gets no notifications: the only thing that arrives is its end.
            event = session.try_recv(), if !lost => {
                if !matches!(event, Ok(Some(_))) {
                    let why = event.err().map_or_else(|| "connection closed".to_owned(), |e| e.to_string());
                    tracing::warn!(%why, "advisory lock session ended; the lock is gone");
                    held.loss.fire(LostReason::SessionLost(why));
                    lost = true;
                }
            }
        }
    }
}

/// What the session task needs besides the session.
struct Held {
    loss: LossSignal,
    /// The `NOTIFY` channel (the table's name) and payload (the name's storage key) that wake
    /// the lock's waiters.
    channel: String,
    wake_key: String,
    timeout: Duration,
}

/// Runs a one-boolean statement with `key` and then `texts` bound, on the session.
async fn query_bool(
    session: &mut PgListener,
    sql: &'static str,
    key: i64,
    texts: &[&str],
    timeout: Duration,
) -> Result<bool> {
    let mut query = sqlx::query_scalar::<_, bool>(sql).bind(key);
    for text in texts {
        query = query.bind(text.to_string());
    }
    match tokio::time::timeout(timeout, query.fetch_one(&mut *session)).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(to_lock_error(BACKEND, error)),
        Err(_) => Err(LockError::Timeout {
            backend: BACKEND,
            operation: "advisory session",
            after: timeout,
        }),
    }
}
