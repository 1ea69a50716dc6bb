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
//! process-level crypto provider: when none is installed at the first `rediss://` connection,
//! lock-core installs rustls's `ring` (the provider the feature brings), so a build where
//! something else also enables `aws-lc-rs` (the Prometheus exporter's default, for one) does
//! not panic there. To use another provider, install it at the start of `main`, before the
//! first connection (with the `rustls` crate in your dependencies):
//!
//! ```ignore
//! rustls::crypto::aws_lc_rs::default_provider().install_default().expect("the first provider");
//! ```
//!
//! A `rediss://` URL for a server that does not speak TLS on that port (a plain-text Redis)
//! fails to connect with an error saying the TLS handshake did not complete.
//!
//! For a private CA or client certificates, build the client with
//! `redis::Client::build_with_tls(url, redis::TlsCertificates { .. })` and pass it to
//! [`RedisBackend::builder_from_client`].
//!
//! # Layout in Redis
//! For the lock `shop:sku:42` with the default prefix `lock`:
//! - `lock:{#shop:sku:42}`: the string `<owner token>:<fence>`, its TTL is the lease;
//! - `lock:{#shop:sku:42}:fence`: the fencing counter, never behind the server clock, kept
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
//! The other primitives ([`Capabilities::primitives`](crate::backend::Capabilities::primitives) is
//! [`Primitives::ALL`](crate::backend::Primitives::ALL)) have keys of
//! their own, apart from the lock's: `lock:fair:{#…}`, `lock:rw:{#…}` and `lock:sem:{#…}`
//! (holders by lease expiry, with `:leases`, `:fence`, `:queue`, `:queue:deadline` and, for a
//! semaphore, `:size`; see `primitives.rs`), and `lock:latch:{#…}` (the count, with
//! `:waiters`). A fair lock is handed to its next waiter by the release itself, for a claim
//! window ([`RedisBackendBuilder::claim_window`]) that the waiter's watchdog extends at once.
//!
//! Every key and pub/sub channel starts with the prefix, the stores' made from the backend too:
//! `lock:cache:{#…}` (with `:watchers`) for the cache's entries and the idempotency records of a
//! [`RedisResultStore`], `lock:fenced:…` for a
//! [`RedisFencedStore`]; the wake-ups go to
//! `lock:wake:<client id>` (an election's changes to `lock:wake:leader:…`; on a Redis Cluster
//! to the sharded `lock:wake:<client id>:{#…}` of each key waited on, and a forced release's
//! revocation to `lock:revoke:{<client id>}`), a result store's pushes to
//! `lock:cache:push:<store id>`. No pattern subscription is used. So applications
//! sharing a server keep apart with a prefix each
//! ([`RedisBackendBuilder::key_prefix`]), and a Redis ACL user limited to its prefix runs all
//! of it: `ACL SETUSER orders on >… ~orders:* resetchannels &orders:* +@all -@dangerous`
//! (keys, then channels: Redis 7 gives a new user no channel). `-@dangerous` leaves out
//! `INFO`, which the backend only sends to log a restarted server's new `run_id`.
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
//! is cleaned up by its owner token (see
//! [`LockBackend::release_abandoned`](crate::backend::LockBackend::release_abandoned)).
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

mod acknowledgement;
mod acquire;
pub(crate) mod availability;
mod batch;
mod builder;
mod connection;
mod election;
mod entry_layout;
mod fenced;
mod fused_paths;
mod keys;
mod latch;
mod lease_read;
mod leases;
mod operator;
mod primitive_keys;
mod primitives;
mod queue;
mod record_claim;
pub mod redlock;
mod result_store;
pub(crate) mod script_call;
mod scripts;
mod semaphore;
mod shard_wakeups;
mod stock;
pub(crate) mod subscription;
mod tls;
mod wakeups;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::DropGuard;

pub(crate) use self::builder::validate_prefix;
pub use self::builder::RedisBackendBuilder;
use self::builder::RedisConfig;
pub use self::connection::RedisConnection;
pub use self::fenced::RedisFencedStore;
use self::keys::LockKeys;
use self::leases::{Entered, LeaseBook};
use self::primitive_keys::PrimitiveKeys;
pub use self::result_store::RedisResultStore;
use self::script_call::ScriptCall;
pub use self::stock::{RedisStock, UnprefixedMigration};
use self::subscription::PubSubSource;
use self::wakeups::WakeHub;
use crate::breaker::Breaker;
use crate::{LockError, Result};
/// The `redis` crate this backend is built on, re-exported so that an application builds the
/// `redis::Client` it hands to [`RedisBackend::builder_from_client`] with the same version,
/// whatever `redis` it depends on itself.
///
/// ```
/// let client = lock_core::redis::redis::Client::open("redis://127.0.0.1:6379/").unwrap();
/// let builder = lock_core::RedisBackend::builder_from_client(client);
/// # drop(builder);
/// ```
pub use ::redis;

const BACKEND: &str = "redis";

/// How long a lock's fencing counter is kept after its last grant. A grant's token is the
/// counter plus one or the server's clock in microseconds, whichever is larger: a counter that
/// expired, was lost in a restart, or is older on a replica promoted after missing grants is
/// passed by the clock, which is past every token given before (each grant takes more than a
/// microsecond of server time), so tokens keep increasing; the day of retention also keeps them
/// increasing should one server's clock be stepped back by less than that.
pub const FENCE_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// Locks in a Redis server (or anything speaking its protocol with Lua and pub/sub).
///
/// Cheap to clone: clones share one multiplexed connection and one subscription.
#[derive(Clone)]
pub struct RedisBackend {
    shared: Arc<Shared>,
}

struct Shared {
    connection: RedisConnection,
    /// For other primitives' own subscriptions (the cache's value pushes).
    pubsub: PubSubSource,
    /// The server, cluster or Sentinel service, for errors and logs (no password).
    server: String,
    /// On a Redis Cluster, the sharded wake-up channels its waiters subscribe to.
    shards: Option<Arc<shard_wakeups::ShardWakeups>>,
    /// The lock's calls waiting to go to the server in a batch (`None`: each goes alone).
    batches: Option<batch::Batches>,
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

impl RedisBackend {
    /// Whether `other` is this backend (a clone of it): the same connection, lease book and
    /// wake-ups.
    pub(crate) fn same_as(&self, other: &RedisBackend) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// The multiplexed connection, for other primitives on the same server (stock, cache).
    pub(crate) fn connection(&self) -> RedisConnection {
        self.shared.connection.clone()
    }

    /// Where other primitives' own subscriptions connect (the cache's value pushes).
    pub(crate) fn pubsub_source(&self) -> PubSubSource {
        self.shared.pubsub.clone()
    }

    /// The server, cluster or Sentinel service this backend uses, for errors and logs.
    pub(crate) fn server(&self) -> &str {
        &self.shared.server
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

    /// The prefix of every Redis key and pub/sub channel of this backend
    /// ([`RedisBackendBuilder::key_prefix`], `lock` by default). The stores made from it put
    /// theirs under it too: `<prefix>:cache:…` for a
    /// [`RedisResultStore`] (cache entries and idempotency
    /// records), `<prefix>:fenced:…` for a [`RedisFencedStore`].
    ///
    /// ```no_run
    /// use lock_core::RedisBackend;
    ///
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// let backend = RedisBackend::builder("redis://127.0.0.1:6379/")
    ///     .key_prefix("orders")
    ///     .connect()
    ///     .await?;
    /// assert_eq!(backend.key_prefix(), "orders");
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn key_prefix(&self) -> &str {
        &self.shared.prefix
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
        LockKeys::new(&self.shared.prefix, full_key)
            .lock
            .to_string()
    }

    /// The Redis key of the waiter queue of `full_key`.
    #[must_use]
    pub fn waiters_key(&self, full_key: &str) -> String {
        LockKeys::new(&self.shared.prefix, full_key).waiters_key()
    }

    /// On a Redis Cluster, subscribes to the wake channel of `key`'s slot and holds it (a
    /// waiter holds it from before it queues until it leaves); `None` on one server, where the
    /// backend's one channel is always subscribed.
    pub(in crate::redis) async fn wake_channel(
        &self,
        key: &str,
    ) -> Result<Option<shard_wakeups::ChannelHold>> {
        match &self.shared.shards {
            Some(shards) => shards.hold(key).await.map(Some).map_err(to_lock_error),
            None => Ok(None),
        }
    }

    /// Whether waiters subscribe per key before they queue (a Redis Cluster): their first
    /// attempt then goes without queuing, so an uncontended acquire stays one script.
    pub(in crate::redis) fn subscribes_per_key(&self) -> bool {
        self.shared.shards.is_some()
    }

    /// Runs a script through the breaker, sending it again (same arguments, so the same owner
    /// token) when the reply was lost to a timeout or a dropped connection.
    pub(super) async fn run<T: redis::FromRedisValue>(
        &self,
        operation: &'static str,
        call: &ScriptCall,
    ) -> Result<T> {
        let admission = self.shared.breaker.admit()?;
        let outcome = self.run_admitted(operation, call).await;
        availability::settle(admission, &outcome);
        outcome.map_err(|error| self.lock_error(operation, error))
    }

    /// The error a failed `operation` reports: a timeout as one, the rest as unavailable.
    fn lock_error(&self, operation: &'static str, error: redis::RedisError) -> LockError {
        if error.is_timeout() {
            LockError::Timeout {
                backend: BACKEND,
                operation,
                after: self.shared.config.response_timeout,
            }
        } else {
            to_lock_error(error)
        }
    }

    /// Runs a script that may grant a lease: as [`run`](Self::run), followed by `WAIT` or
    /// `WAITAOF` on the same server when the backend asks for acknowledgement
    /// ([`RedisBackendBuilder::wait_for_replicas`], [`RedisBackendBuilder::wait_for_aof`]).
    /// Returns the reply and, when the acknowledgement fell short, the error to fail the
    /// acquire with once its grant is given back.
    pub(super) async fn run_grant<T: redis::FromRedisValue>(
        &self,
        call: &ScriptCall,
    ) -> Result<(T, Option<LockError>)> {
        let acknowledgement = self.shared.config.acknowledgement;
        if !acknowledgement.is_on() {
            return Ok((self.run("acquire", call).await?, None));
        }
        let admission = self.shared.breaker.admit()?;
        let mut attempt = 0;
        let outcome = loop {
            attempt += 1;
            let commands = acknowledgement.commands();
            self.shared
                .commands
                .fetch_add(1 + commands.len() as u64, Ordering::Relaxed);
            let mut connection = self.shared.connection.clone();
            match call
                .invoke_then_acknowledge(&mut connection, commands)
                .await
            {
                Err(error) if attempt < self.shared.config.attempts && is_transient(&error) => {
                    tokio::time::sleep(Duration::from_millis(20) * attempt).await;
                }
                outcome => break outcome,
            }
        };
        availability::settle(admission, &outcome);
        let (reply, acknowledged): (T, Vec<redis::Value>) = outcome.map_err(to_lock_error)?;
        let acknowledged = acknowledgement.read(&acknowledged).ok_or_else(|| {
            protocol(format!(
                "the acknowledgement after a grant answered {acknowledged:?}"
            ))
        })?;
        let short = acknowledgement
            .shortfall(acknowledged)
            .map(|why| LockError::unavailable(BACKEND, why));
        Ok((reply, short))
    }

    async fn run_admitted<T: redis::FromRedisValue>(
        &self,
        operation: &'static str,
        call: &ScriptCall,
    ) -> redis::RedisResult<T> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            self.shared.commands.fetch_add(1, Ordering::Relaxed);
            let mut connection = self.shared.connection.clone();
            match call.invoke(&mut connection).await {
                Err(error) if attempt < self.shared.config.attempts && is_transient(&error) => {
                    tracing::debug!(operation, attempt, %error, "redis reply lost; sending again");
                    tokio::time::sleep(Duration::from_millis(20) * attempt).await;
                }
                outcome => return outcome,
            }
        }
    }

    /// Sends a plain command through the breaker.
    pub(super) async fn query<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> Result<T> {
        self.shared.commands.fetch_add(1, Ordering::Relaxed);
        let mut connection = self.shared.connection.clone();
        availability::through(&self.shared.breaker, command.query_async(&mut connection))
            .await?
            .map_err(to_lock_error)
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

/// `duration` in whole milliseconds for a Redis argument, at least 1 (0 means "forever" to
/// `WAIT` and `PX` refuses it).
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

/// A failure after which the same command may be sent again: its reply was lost, or it reached
/// a replica that had just been demoted (`READONLY`: it did not run).
fn is_transient(error: &redis::RedisError) -> bool {
    error.is_timeout()
        || error.is_connection_dropped()
        || error.is_io_error()
        || connection::is_read_only(error)
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
