//! The Redis backend (feature `redis`): leases as hashes with a TTL, set and checked by Lua
//! scripts, waiters woken by pub/sub.
//!
//! ```no_run
//! use lock_core::{LockClient, RedisBackend};
//!
//! # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
//! let backend = RedisBackend::connect("redis://127.0.0.1:6379/").await?;
//! let locks = LockClient::builder(backend).namespace("shop").build()?;
//! let guard = locks.lock("sku:42").await?;
//! guard.release().await?;
//! # Ok(()) }
//! ```
//!
//! # Your own client, TLS
//! [`RedisBackend::builder`] takes a URL; [`RedisBackend::builder_from_client`] takes a
//! `redis::Client` you built (for settings a URL cannot carry), and
//! [`RedisBackend::builder_from_parts`] also takes your `ConnectionManager`, so the lock
//! commands share the application's multiplexed connection. Either needs the `redis` crate
//! at the version lock-core uses (1.x) in your own dependencies.
//!
//! With the `redis-tls` feature, `rediss://host:port/db` URLs connect over TLS (rustls),
//! checking the server against the Mozilla root certificates (webpki-roots). rustls needs a
//! crypto provider: the feature enables rustls's `ring` provider, which rustls then uses
//! without any code of yours. If something else in your build enables rustls's `aws-lc-rs`
//! provider as well, rustls cannot choose and the first TLS connection panics; install one
//! at the start of `main` (with the `rustls` crate in your dependencies):
//!
//! ```ignore
//! rustls::crypto::ring::default_provider().install_default().expect("the first provider");
//! ```
//!
//! For a private CA or client certificates, build the client with
//! `redis::Client::build_with_tls(url, redis::TlsCertificates { .. })` and pass it to
//! [`RedisBackend::builder_from_client`].
//!
//! # Layout in Redis
//! For the lock `shop:sku:42` with the default prefix `lock`:
//! - `lock:{#shop:sku:42}`: the string `<owner token>:<fence>`, its TTL is the lease;
//! - `lock:{#shop:sku:42}:fence`: the fencing counter, seeded from the server clock and kept
//!   for [`FENCE_RETENTION`] after the last grant (or as long as the client's
//!   [`fence_retention`](crate::LockClientBuilder::fence_retention) and
//!   [`keep_fence_for`](crate::LockGuard::keep_fence_for) ask: a response cache's keys keep
//!   theirs as long as their entries);
//! - `lock:{#shop:sku:42}:waiters`: sorted set of waiter ids by arrival (expires with its
//!   last waiter's interest).
//!
//! Nothing a lock leaves in Redis lives forever, so requests for random keys cannot grow the
//! server without bound.
//!
//! All three share one hash tag. Keys and tokens reach Redis only as `KEYS`/`ARGV`.
//!
//! The other primitives ([`Capabilities::primitives`] is [`Primitives::ALL`]) have keys of
//! their own, apart from the lock's: `lock:fair:{#…}`, `lock:rw:{#…}` and `lock:sem:{#…}`
//! (holders by lease expiry, with `:leases`, `:fence`, `:queue`, `:queue:deadline` and, for a
//! semaphore, `:size`; see `primitives.rs`), and `lock:latch:{#…}` (the count, with
//! `:waiters`). A fair lock is handed to its next waiter by the release itself, for a claim
//! window ([`RedisBackendBuilder::claim_window`]) that the waiter's watchdog extends at once.
//!
//! # Round trips
//! An uncontended acquire is one `EVALSHA`, a release one more. A contended one adds one
//! `EVALSHA` per wake-up (the first attempt queues the waiter in the same script), plus a
//! re-check per poll interval if a wake-up message is lost. A fair lock's waiter sends no
//! acquire after its wake-up: the release handed the lock over, and the waiter's only command is
//! the renewal that extends the claim window to its lease.
//!
//! # Failures
//! Commands that time out or lose their connection are retried with the same owner token, which
//! the scripts treat idempotently. An acquire dropped mid-command, or failed after every retry,
//! is cleaned up by its owner token (see [`LockBackend::release_abandoned`]).
//!
//! Every command goes through the backend's [circuit breaker](crate::breaker) (shared with the
//! `RedisResultStore` and `RedisStock` made from it): after 3 calls in a row found the server
//! unreachable, calls fail at once with [`LockError::Unavailable`] (source
//! [`CircuitOpen`](crate::breaker::CircuitOpen)) instead of each waiting for the connection
//! manager's reconnect attempts, and one probe goes every 0.5–5 s until the server answers
//! ([`RedisBackendBuilder::breaker`] changes that). The subscriptions wait for the breaker
//! before subscribing again, so a server that is down costs one probe per cool-down, and one
//! WARN line when it goes, one INFO line when it is back.
//!
//! The connection manager reconnects after a restart. The wake-up subscription's connection is
//! the backend's connection-state signal: when it drops and comes back (a restart always cuts
//! it; it retries every 50–250 ms), every lease this backend holds is re-read at once, in one
//! `MGET` per 512 leases, and each whose key vanished or changed fires `lost()` with
//! [`LostReason::NotOwner`](crate::LostReason::NotOwner); the server's `run_id` is logged
//! when it changed. What remains is a window no client can close: between the server coming
//! back empty and that check (the reconnect interval plus a round trip), another client can be
//! granted the lock while the old holder still believes it holds it. Only fencing tokens,
//! checked by the resource, make that window safe; they keep increasing across such a restart.

pub(crate) mod availability;
mod keys;
mod latch;
mod leases;
mod primitive_keys;
mod primitives;
mod scripts;
pub(crate) mod subscription;
mod wakeups;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::{CancellationToken, DropGuard};

use self::keys::LockKeys;
use self::leases::{Entered, LeaseBook};
use self::primitive_keys::{Family, PrimitiveKeys};
use self::wakeups::WakeHub;
use crate::backend::{
    AcquireRequest, Capabilities, Grant, LeaseKind, LockBackend, Primitives, SemaphoreState,
};
use crate::breaker::{Breaker, BreakerOptions};
use crate::{FencingToken, LockError, LockKey, LossSignal, OwnerToken, Result};

const BACKEND: &str = "redis";

/// How long a lock's fencing counter is kept after its last grant. A counter that expired (or
/// was lost in a restart) is re-seeded from the server's clock in microseconds, which is past
/// every token the old counter gave (each grant takes more than a microsecond of server time),
/// so tokens keep increasing; the day of retention also keeps them increasing should the
/// server's clock be stepped back by less than that.
pub const FENCE_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// Locks in a Redis server (or anything speaking its protocol with Lua and pub/sub).
///
/// Cheap to clone: clones share one multiplexed connection and one subscription.
#[derive(Clone)]
pub struct RedisBackend {
    shared: Arc<Shared>,
}

struct Shared {
    connection: ConnectionManager,
    /// For other primitives' own subscriptions (the cache's value pushes).
    client: redis::Client,
    prefix: String,
    hub: Arc<WakeHub>,
    leases: Arc<LeaseBook>,
    config: RedisConfig,
    /// The connection's circuit breaker, shared with the stores made from this backend.
    breaker: Breaker,
    commands: AtomicU64,
    _stop_subscription: DropGuard,
}

/// A lease held in Redis.
#[derive(Debug)]
pub struct RedisLease {
    held: Held,
    /// Its entry in the backend's book of leases, re-checked when the connection comes back.
    _entered: Entered,
}

/// Where a lease lives.
#[derive(Debug)]
enum Held {
    /// A lock's lease: its key holds `value`, `<owner token>:<fence>`, while it lasts.
    Lock { keys: LockKeys, value: String },
    /// A lease of a fair lock, read-write lock or semaphore: `owner`'s entry among its holders.
    Primitive {
        keys: PrimitiveKeys,
        owner: String,
        fence: u64,
    },
}

/// Settings of a [`RedisBackend`]; start from [`RedisBackend::builder`] (a URL),
/// [`RedisBackend::builder_from_client`] (your `redis::Client`) or
/// [`RedisBackend::builder_from_parts`] (your client and `ConnectionManager`).
#[derive(Clone)]
#[must_use]
pub struct RedisBackendBuilder {
    source: Source,
    prefix: String,
    config: RedisConfig,
}

/// Where a builder's connections come from.
#[derive(Clone)]
enum Source {
    Url(String),
    Client(redis::Client),
    Parts(redis::Client, ConnectionManager),
}

impl std::fmt::Debug for RedisBackendBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL or client may carry a password: name only the kind of source.
        let source = match self.source {
            Source::Url(_) => "url",
            Source::Client(_) => "client",
            Source::Parts(..) => "client and connection manager",
        };
        f.debug_struct("RedisBackendBuilder")
            .field("source", &source)
            .field("prefix", &self.prefix)
            .field("config", &self.config)
            .finish()
    }
}

/// Opens a client for `url`; `rediss://` needs the `redis-tls` feature.
fn open_client(url: &str) -> Result<redis::Client> {
    redis::Client::open(url).map_err(|e| {
        // Name the scheme and host only: the URL may carry a password.
        let shown = match url.split_once('@') {
            Some((head, host)) => {
                let scheme = head.split_once("://").map_or("", |(scheme, _)| scheme);
                format!("{scheme}://…@{host}")
            }
            None => url.to_owned(),
        };
        let hint = if url.starts_with("rediss:") && cfg!(not(feature = "redis-tls")) {
            " (TLS needs lock-core's `redis-tls` feature)"
        } else {
            ""
        };
        LockError::InvalidConfig(format!("Redis URL {shown:?}: {e}{hint}"))
    })
}

#[derive(Clone, Copy, Debug)]
struct RedisConfig {
    response_timeout: Duration,
    poll_cap: Duration,
    attempts: u32,
    claim_window: Duration,
    breaker: BreakerOptions,
}

impl RedisBackendBuilder {
    /// The prefix of every Redis key this backend writes (default `lock`).
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long one command may take before it counts as lost (default 2 s). With
    /// [`RedisBackend::builder_from_parts`] the given connection manager keeps its own
    /// timeouts; this one is then only what a timed-out command's error reports.
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.config.response_timeout = timeout;
        self
    }

    /// The longest a waiter goes without re-checking the lock, in case a wake-up message is
    /// lost (default 1 s; a waiter also re-checks when the holder's lease runs out).
    pub fn poll_cap(mut self, cap: Duration) -> Self {
        self.config.poll_cap = cap;
        self
    }

    /// How many times a command whose reply was lost is sent again (default 3 in all).
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.config.attempts = attempts;
        self
    }

    /// How long a fair lock handed over by a release is held for its next waiter before that
    /// waiter's watchdog extends it to the whole lease (default 2 s; at most the waiter's
    /// lease). A waiter that has gone, or is cut off, costs the queue this long at most.
    /// The releasing backend's window applies (the handoff message carries it), and a waiter
    /// re-checks at least every third of its own window: give every backend sharing a fair lock
    /// the same window.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use lock_core::RedisBackend;
    ///
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// let backend = RedisBackend::builder("redis://127.0.0.1:6379/")
    ///     .claim_window(Duration::from_millis(500))
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn claim_window(mut self, window: Duration) -> Self {
        self.config.claim_window = window;
        self
    }

    /// When the connection's [circuit breaker](crate::breaker) opens and how it probes
    /// (default [`BreakerOptions::new`]: 3 failures in a row, a 0.5–5 s cool-down);
    /// `BreakerOptions::new().fail_fast(false)` makes every call wait for its own timeouts
    /// again, with the breaker only reporting.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use lock_core::breaker::BreakerOptions;
    /// use lock_core::RedisBackend;
    ///
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// let backend = RedisBackend::builder("redis://127.0.0.1:6379/")
    ///     .breaker(BreakerOptions::new().cool_down(Duration::from_millis(200), Duration::from_secs(2)))
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn breaker(mut self, options: BreakerOptions) -> Self {
        self.config.breaker = options;
        self
    }

    /// Connects, loads the scripts and subscribes for wake-ups.
    pub async fn connect(self) -> Result<RedisBackend> {
        self.config.breaker.validate()?;
        if self.prefix.is_empty() || self.prefix.contains(['{', '}']) {
            return Err(LockError::InvalidConfig(format!(
                "Redis key prefix {:?} must be non-empty and free of '{{' and '}}'",
                self.prefix
            )));
        }
        if self.config.attempts == 0 || self.config.response_timeout.is_zero() {
            return Err(LockError::InvalidConfig(
                "Redis attempts and response timeout must be positive".into(),
            ));
        }
        if self.config.claim_window < Duration::from_millis(10) {
            return Err(LockError::InvalidConfig(format!(
                "the fair lock's claim window ({:?}) must be at least 10ms",
                self.config.claim_window
            )));
        }
        let (client, manager) = match self.source {
            Source::Url(url) => (open_client(&url)?, None),
            Source::Client(client) => (client, None),
            Source::Parts(client, manager) => (client, Some(manager)),
        };
        let mut connection = match manager {
            Some(manager) => manager,
            None => {
                let manager_config = ConnectionManagerConfig::new()
                    .set_response_timeout(Some(self.config.response_timeout))
                    .set_connection_timeout(Some(self.config.response_timeout))
                    .set_number_of_retries(2)
                    .set_max_delay(Duration::from_secs(1));
                ConnectionManager::new_with_config(client.clone(), manager_config)
                    .await
                    .map_err(to_lock_error)?
            }
        };
        for script in scripts::all() {
            script
                .prepare_invoke()
                .load_async(&mut connection)
                .await
                .map_err(to_lock_error)?;
        }
        let hub = Arc::new(WakeHub::new(
            &self.prefix,
            OwnerToken::random()?.to_hex()[..16].to_owned(),
        ));
        let breaker = Breaker::new(BACKEND, self.config.breaker);
        let stop = CancellationToken::new();
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let leases = Arc::new(LeaseBook::default());
        tokio::spawn(wakeups::run(
            client.clone(),
            hub.clone(),
            leases.clone(),
            connection.clone(),
            breaker.clone(),
            stop.clone(),
            ready_tx,
        ));
        ready_rx
            .await
            .map_err(|_| LockError::Protocol {
                backend: BACKEND,
                detail: "the wake-up subscription task ended before subscribing".into(),
            })?
            .map_err(to_lock_error)?;
        Ok(RedisBackend {
            shared: Arc::new(Shared {
                connection,
                client,
                prefix: self.prefix,
                hub,
                leases,
                config: self.config,
                breaker,
                commands: AtomicU64::new(0),
                _stop_subscription: stop.drop_guard(),
            }),
        })
    }
}

impl RedisBackend {
    /// Connects with default settings to `url` (`redis://host:port/db`, or
    /// `rediss://host:port/db` for TLS with the `redis-tls` feature).
    pub async fn connect(url: &str) -> Result<Self> {
        Self::builder(url).connect().await
    }

    /// Starts configuring a backend for `url`.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use lock_core::RedisBackend;
    ///
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// let backend = RedisBackend::builder("redis://127.0.0.1:6379/")
    ///     .key_prefix("orders-lock")
    ///     .response_timeout(Duration::from_secs(1))
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn builder(url: impl Into<String>) -> RedisBackendBuilder {
        Self::builder_with(Source::Url(url.into()))
    }

    /// Connects with default settings through an existing `redis::Client` (see
    /// [`builder_from_client`](Self::builder_from_client)).
    pub async fn from_client(client: redis::Client) -> Result<Self> {
        Self::builder_from_client(client).connect().await
    }

    /// Starts configuring a backend on an existing `redis::Client`, with whatever connection
    /// settings it was built with (TLS roots and client certificates, credentials, RESP
    /// version, database). The backend opens its own `ConnectionManager` and its wake-up
    /// subscription from it.
    ///
    /// ```no_run
    /// use lock_core::{LockClient, RedisBackend};
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = redis::Client::open("redis://127.0.0.1:6379/2")?;
    /// let backend = RedisBackend::builder_from_client(client)
    ///     .key_prefix("orders-lock")
    ///     .connect()
    ///     .await?;
    /// let locks = LockClient::new(backend);
    /// # Ok(()) }
    /// ```
    pub fn builder_from_client(client: redis::Client) -> RedisBackendBuilder {
        Self::builder_with(Source::Client(client))
    }

    /// Connects with default settings through an existing client and connection manager (see
    /// [`builder_from_parts`](Self::builder_from_parts)).
    pub async fn from_parts(client: redis::Client, connection: ConnectionManager) -> Result<Self> {
        Self::builder_from_parts(client, connection).connect().await
    }

    /// Starts configuring a backend that sends its commands on an existing
    /// `ConnectionManager` (shared with the application: one multiplexed connection for
    /// both). Redis pub/sub needs a connection of its own, so the backend also takes the
    /// `redis::Client` it opens the wake-up subscription with; both must reach the same
    /// server. The manager keeps its own timeouts and reconnect policy
    /// ([`response_timeout`](RedisBackendBuilder::response_timeout) does not change them);
    /// give it a response timeout, or a lost reply waits for the connection to drop.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use lock_core::RedisBackend;
    /// use redis::aio::{ConnectionManager, ConnectionManagerConfig};
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = redis::Client::open("redis://127.0.0.1:6379/")?;
    /// let config = ConnectionManagerConfig::new()
    ///     .set_response_timeout(Some(Duration::from_secs(2)))
    ///     .set_connection_timeout(Some(Duration::from_secs(2)));
    /// let manager = ConnectionManager::new_with_config(client.clone(), config).await?;
    /// // The application keeps using `manager` (it is a cheap clone) for its own commands.
    /// let backend = RedisBackend::builder_from_parts(client, manager.clone())
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn builder_from_parts(
        client: redis::Client,
        connection: ConnectionManager,
    ) -> RedisBackendBuilder {
        Self::builder_with(Source::Parts(client, connection))
    }

    fn builder_with(source: Source) -> RedisBackendBuilder {
        RedisBackendBuilder {
            source,
            prefix: "lock".into(),
            config: RedisConfig {
                response_timeout: Duration::from_secs(2),
                poll_cap: Duration::from_secs(1),
                attempts: 3,
                claim_window: Duration::from_secs(2),
                breaker: BreakerOptions::new(),
            },
        }
    }

    /// The multiplexed connection, for other primitives on the same server (stock, cache).
    pub(crate) fn connection(&self) -> ConnectionManager {
        self.shared.connection.clone()
    }

    /// The client, for other primitives' own subscriptions (the cache's value pushes).
    pub(crate) fn redis_client(&self) -> redis::Client {
        self.shared.client.clone()
    }

    /// The [circuit breaker](crate::breaker) of this backend's connection, shared by its
    /// clones and by the result store and stock made from it.
    ///
    /// ```no_run
    /// use lock_core::breaker::BreakerState;
    /// use lock_core::RedisBackend;
    ///
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// let backend = RedisBackend::connect("redis://127.0.0.1:6379/").await?;
    /// assert_eq!(backend.breaker().state(), BreakerState::Closed);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn breaker(&self) -> &Breaker {
        &self.shared.breaker
    }

    /// Commands this backend has sent to Redis (scripts, re-checks, queue clean-ups), for
    /// measuring round trips per acquisition.
    #[must_use]
    pub fn commands_sent(&self) -> u64 {
        self.shared.commands.load(Ordering::Relaxed)
    }

    /// Leases granted by this backend that are still held (or not yet let go).
    #[must_use]
    pub fn live_leases(&self) -> usize {
        self.shared.leases.len()
    }

    /// Wake-up messages this backend has received.
    #[must_use]
    pub fn wakeups_received(&self) -> u64 {
        self.shared.hub.messages.load(Ordering::Relaxed)
    }

    /// The Redis key holding the lock named `full_key` (`namespace:key`), for operators and tests.
    #[must_use]
    pub fn redis_key(&self, full_key: &str) -> String {
        LockKeys::new(&self.shared.prefix, full_key).lock
    }

    /// The Redis key of the waiter queue of `full_key`.
    #[must_use]
    pub fn waiters_key(&self, full_key: &str) -> String {
        LockKeys::new(&self.shared.prefix, full_key).waiters
    }

    /// Runs a script through the breaker, sending it again (same arguments, so the same owner
    /// token) when the reply was lost to a timeout or a dropped connection.
    async fn run<T: redis::FromRedisValue>(
        &self,
        operation: &'static str,
        invocation: &redis::ScriptInvocation<'_>,
    ) -> Result<T> {
        let admission = self.shared.breaker.admit()?;
        let outcome = self.run_admitted(operation, invocation).await;
        availability::settle(admission, &outcome);
        outcome.map_err(|error| {
            if error.is_timeout() {
                LockError::Timeout {
                    backend: BACKEND,
                    operation,
                    after: self.shared.config.response_timeout,
                }
            } else {
                to_lock_error(error)
            }
        })
    }

    async fn run_admitted<T: redis::FromRedisValue>(
        &self,
        operation: &'static str,
        invocation: &redis::ScriptInvocation<'_>,
    ) -> redis::RedisResult<T> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            self.shared.commands.fetch_add(1, Ordering::Relaxed);
            let mut connection = self.shared.connection.clone();
            match invocation.invoke_async(&mut connection).await {
                Err(error) if attempt < self.shared.config.attempts && is_transient(&error) => {
                    tracing::debug!(operation, attempt, %error, "redis reply lost; sending again");
                    tokio::time::sleep(Duration::from_millis(20) * attempt).await;
                }
                outcome => return outcome,
            }
        }
    }

    /// Sends a plain command through the breaker.
    async fn query<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> Result<T> {
        self.shared.commands.fetch_add(1, Ordering::Relaxed);
        let mut connection = self.shared.connection.clone();
        availability::through(&self.shared.breaker, command.query_async(&mut connection))
            .await?
            .map_err(to_lock_error)
    }

    /// One acquire attempt: `Ok(Ok(fence))` when granted, `Ok(Err(pttl))` when busy.
    async fn attempt(
        &self,
        keys: &LockKeys,
        owner: OwnerToken,
        ttl: Duration,
        waiter_id: &str,
        queued_before: bool,
        fence_retention: Duration,
    ) -> Result<std::result::Result<FencingToken, Option<Duration>>> {
        let queue_lifetime = (ttl * 2).max(Duration::from_secs(60));
        let mut invocation = scripts::ACQUIRE.prepare_invoke();
        invocation
            .key(&keys.lock)
            .key(&keys.fence)
            .key(&keys.waiters)
            .arg(owner.to_hex())
            .arg(millis(ttl))
            .arg(waiter_id)
            .arg(if queued_before { "1" } else { "0" })
            .arg(millis(queue_lifetime))
            .arg(millis(fence_retention));
        let (granted, value): (i64, i64) = self.run("acquire", &invocation).await?;
        match granted {
            1 => u64::try_from(value)
                .map(|fence| Ok(FencingToken::new(fence)))
                .map_err(|_| protocol(format!("negative fencing token {value}"))),
            0 => Ok(Err(u64::try_from(value).ok().map(Duration::from_millis))),
            other => Err(protocol(format!("acquire script answered {other}"))),
        }
    }
}

/// A waiter's registration: leaving it removes the queue entry, and passes on a wake-up it
/// received but did not use.
struct Waiting<'a> {
    backend: &'a RedisBackend,
    keys: &'a LockKeys,
    seq: u64,
    id: String,
    notify: Arc<tokio::sync::Notify>,
    granted: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.backend.shared.hub.unregister(self.seq);
        if self.granted {
            return; // the acquire script removed the queue entry
        }
        let backend = self.backend.clone();
        let (lock_key, waiters, id) = (
            self.keys.lock.clone(),
            self.keys.waiters.clone(),
            std::mem::take(&mut self.id),
        );
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            // While the server is known to be down nothing reaches it: the entry ends with
            // the queue's lifetime (or with the server's data, after a restart).
            if backend.shared.breaker.check().is_err() {
                return;
            }
            let mut connection = backend.shared.connection.clone();
            backend.shared.commands.fetch_add(2, Ordering::Relaxed);
            let removed: redis::RedisResult<i64> = redis::cmd("ZREM").arg(&waiters).arg(&id).query_async(&mut connection).await;
            // If the entry was already popped, this waiter may have been the one woken: pass it on.
            if matches!(removed, Ok(0)) {
                let passed: redis::RedisResult<i64> = scripts::WAKE
                    .key(&lock_key)
                    .key(&waiters)
                    .arg(&backend.shared.hub.channel_prefix)
                    .invoke_async(&mut connection)
                    .await;
                if let Err(error) = passed {
                    tracing::debug!(%error, "passing a wake-up on failed; the next waiter's poll covers it");
                }
            }
        });
    }
}

impl LockBackend for RedisBackend {
    type Lease = RedisLease;

    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::new(BACKEND);
        caps.push_wakeups = true;
        caps.loss_push = true;
        caps.primitives = Primitives::ALL;
        caps
    }

    fn breaker(&self) -> Option<&Breaker> {
        Some(&self.shared.breaker)
    }

    async fn acquire(&self, request: AcquireRequest<'_>) -> Result<Option<Grant<RedisLease>>> {
        if let Some(family) = Family::of(request.kind) {
            return self.acquire_primitive(family, request).await;
        }
        let keys = LockKeys::new(&self.shared.prefix, request.key.full());
        let mut waiting: Option<Waiting<'_>> = None;
        let mut queued_before = false;
        loop {
            let queue = request.deadline.is_none_or(|d| Instant::now() < d);
            if queue && waiting.is_none() {
                let (seq, id, notify) = self.shared.hub.register();
                waiting = Some(Waiting {
                    backend: self,
                    keys: &keys,
                    seq,
                    id,
                    notify,
                    granted: false,
                });
            }
            let waiter_id = waiting.as_ref().map_or("", |w| w.id.as_str());
            let sent = Instant::now();
            let retention = request.fence_retention.unwrap_or(FENCE_RETENTION);
            match self
                .attempt(
                    &keys,
                    request.owner,
                    request.ttl,
                    waiter_id,
                    queued_before,
                    retention,
                )
                .await?
            {
                Ok(fence) => {
                    if let Some(waiting) = waiting.as_mut() {
                        waiting.granted = true;
                    }
                    let value = format!("{}:{}", request.owner.to_hex(), fence.get());
                    let loss = LossSignal::new();
                    let lease = RedisLease {
                        _entered: self.shared.leases.enter(&keys.lock, &value, loss.clone()),
                        held: Held::Lock {
                            keys: keys.clone(),
                            value,
                        },
                    };
                    return Ok(Some(Grant::new(lease, fence, sent).with_loss(loss)));
                }
                Err(remaining) => {
                    queued_before |= !waiter_id.is_empty();
                    let Some(waiting) = waiting.as_ref().filter(|_| !request.deadline_passed())
                    else {
                        return Ok(None);
                    };
                    let remaining = remaining.filter(|r| !r.is_zero());
                    let poll = remaining.map_or(Duration::from_millis(5), |r| {
                        r.min(self.shared.config.poll_cap)
                    });
                    // Jittered, but never past the holder's lease: a holder that died frees
                    // the key when its lease runs out, and the waiter looks then (as the SQL
                    // backends' waiters do).
                    let mut pause = crate::backend::jitter(poll);
                    if let Some(left) = remaining {
                        pause = pause.min(left + Duration::from_millis(1));
                    }
                    let mut recheck_at = Instant::now() + pause;
                    if let Some(deadline) = request.deadline {
                        recheck_at = recheck_at.min(deadline);
                    }
                    tokio::select! {
                        () = waiting.notify.notified() => {}
                        () = sleep_until(recheck_at) => {}
                    }
                }
            }
        }
    }

    async fn renew(&self, lease: &RedisLease, ttl: Option<Duration>) -> Result<bool> {
        let (keys, value) = match &lease.held {
            Held::Lock { keys, value } => (keys, value),
            Held::Primitive { keys, owner, fence } => {
                return self.renew_primitive(keys, owner, *fence, ttl).await
            }
        };
        let mut invocation = scripts::RENEW.prepare_invoke();
        invocation
            .key(&keys.lock)
            .arg(value)
            .arg(ttl.map_or(0, millis));
        let held: i64 = self.run("renew", &invocation).await?;
        Ok(held == 1)
    }

    async fn keep_fence(&self, lease: &RedisLease, at_least: Duration) -> Result<()> {
        // A primitive's counter is kept for FENCE_RETENTION after each grant.
        let Held::Lock { keys, .. } = &lease.held else {
            return Ok(());
        };
        let mut invocation = scripts::KEEP_FENCE.prepare_invoke();
        invocation.key(&keys.fence).arg(millis(at_least));
        let _: i64 = self.run("keep fence", &invocation).await?;
        Ok(())
    }

    async fn release(&self, lease: &RedisLease) -> Result<bool> {
        let (keys, value) = match &lease.held {
            Held::Lock { keys, value } => (keys, value),
            Held::Primitive { keys, owner, fence } => {
                return self.release_primitive(keys, owner, *fence).await
            }
        };
        let mut invocation = scripts::RELEASE.prepare_invoke();
        invocation
            .key(&keys.lock)
            .key(&keys.waiters)
            .arg(value)
            .arg(&self.shared.hub.channel_prefix);
        let released: i64 = self.run("release", &invocation).await?;
        Ok(released == 1)
    }

    /// Runs on the same multiplexed connection as the abandoned acquisition's commands, so
    /// Redis executes it after any of them that was already sent.
    async fn release_abandoned(
        &self,
        key: &LockKey,
        kind: LeaseKind,
        owner: OwnerToken,
    ) -> Result<bool> {
        if let Some(family) = Family::of(kind) {
            return self.release_abandoned_primitive(family, key, owner).await;
        }
        let keys = LockKeys::new(&self.shared.prefix, key.full());
        let mut invocation = scripts::RELEASE_ABANDONED.prepare_invoke();
        invocation
            .key(&keys.lock)
            .key(&keys.waiters)
            .arg(owner.to_hex())
            .arg(&self.shared.hub.channel_prefix);
        let released: i64 = self.run("release", &invocation).await?;
        Ok(released == 1)
    }

    async fn queue_length(&self, key: &LockKey, kind: LeaseKind) -> Result<usize> {
        if let Some(family) = Family::of(kind) {
            return Ok(self.primitive_info(family, key).await?.0);
        }
        let mut zcard = redis::cmd("ZCARD");
        zcard.arg(LockKeys::new(&self.shared.prefix, key.full()).waiters);
        self.query(&zcard).await
    }

    async fn set_permits(&self, key: &LockKey, permits: u32) -> Result<()> {
        self.set_semaphore_size(key, permits).await
    }

    async fn semaphore_state(&self, key: &LockKey) -> Result<SemaphoreState> {
        self.semaphore(key).await
    }

    async fn latch_create(&self, key: &LockKey, count: u64, expire: Duration) -> Result<bool> {
        self.create_latch(key, count, expire).await
    }

    async fn latch_count_down(&self, key: &LockKey) -> Result<u64> {
        self.count_down_latch(key).await
    }

    async fn latch_count(&self, key: &LockKey) -> Result<u64> {
        self.latch_count_of(key).await
    }

    async fn latch_wait(&self, key: &LockKey, deadline: Option<Instant>) -> Result<bool> {
        self.wait_latch(key, deadline).await
    }
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend")
            .field("prefix", &self.shared.prefix)
            .field("client_id", &self.shared.hub.client_id)
            .finish_non_exhaustive()
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

fn is_transient(error: &redis::RedisError) -> bool {
    error.is_timeout() || error.is_connection_dropped() || error.is_io_error()
}

fn to_lock_error(error: redis::RedisError) -> LockError {
    LockError::unavailable(BACKEND, error)
}

fn protocol(detail: String) -> LockError {
    LockError::Protocol {
        backend: BACKEND,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_urls_open_and_bad_ones_are_config_errors() {
        assert!(open_client("redis://127.0.0.1:6379/0").is_ok());
        let error = open_client("http://user:secret@127.0.0.1/").unwrap_err();
        assert!(matches!(error, LockError::InvalidConfig(_)), "{error}");
        assert!(!error.to_string().contains("secret"), "{error}");
    }

    #[cfg(feature = "redis-tls")]
    #[test]
    fn tls_urls_are_accepted_with_redis_tls() {
        let client = open_client("rediss://:secret@cache.example.com:6380/1").unwrap();
        assert!(matches!(
            client.get_connection_info().addr(),
            redis::ConnectionAddr::TcpTls { .. }
        ));
    }

    #[cfg(not(feature = "redis-tls"))]
    #[test]
    fn tls_urls_name_the_feature_without_redis_tls() {
        let error = open_client("rediss://cache.example.com:6380/").unwrap_err();
        assert!(error.to_string().contains("redis-tls"), "{error}");
    }

    #[test]
    fn builder_debug_leaves_secrets_out() {
        let builder = RedisBackend::builder("redis://:secret@127.0.0.1/");
        let shown = format!("{builder:?}");
        assert!(
            !shown.contains("secret") && shown.contains("url"),
            "{shown}"
        );
    }
}
