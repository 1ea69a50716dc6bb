//! Settings of a [`RedisBackend`] and connecting it: from a URL, your `redis::Client`, your
//! client and `ConnectionManager`, a Redis Cluster's node URLs, or Sentinel's.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use tokio_util::sync::CancellationToken;

use super::acknowledgement::Acknowledgement;
use super::connection::{manager_config, SentinelPrimary};
use super::leases::LeaseBook;
use super::shard_wakeups::ShardWakeups;
use super::subscription::PubSubSource;
use super::wakeups::{self, WakeHub};
use super::{scripts, tls, to_lock_error, RedisBackend, RedisConnection, Shared, BACKEND};
use crate::breaker::{Breaker, BreakerOptions};
use crate::{LockError, OwnerToken, Result};

/// Settings of a [`RedisBackend`]; start from [`RedisBackend::builder`] (a URL),
/// [`RedisBackend::builder_from_client`] (your `redis::Client`) or
/// [`RedisBackend::builder_from_parts`] (your client and `ConnectionManager`).
#[derive(Clone)]
#[must_use]
pub struct RedisBackendBuilder {
    source: Source,
    /// [`sentinel_nodes`](Self::sentinel_nodes) was called on a builder of another kind.
    nodes_without_sentinel: bool,
    prefix: String,
    config: RedisConfig,
}

/// Where a builder's connections come from.
#[derive(Clone)]
enum Source {
    Url(String),
    Client(redis::Client),
    Parts(redis::Client, ConnectionManager),
    /// A Redis Cluster: some of its nodes' URLs (the rest are discovered).
    Cluster(Vec<String>),
    /// A Redis Cluster through the application's own cluster connection, and its nodes' URLs
    /// for the subscriptions.
    ClusterParts(Vec<String>, ClusterConnection),
    /// A primary monitored by Sentinel: the sentinels' URLs, the service (master) name, and
    /// how to connect to the servers they name.
    Sentinel {
        sentinels: Vec<String>,
        service: String,
        nodes: SentinelNodeConnectionInfo,
    },
    /// A primary monitored by Sentinel, through the application's `SentinelClient` (which
    /// carries the service, and how to reach the sentinels and the servers they name).
    SentinelClient(Arc<tokio::sync::Mutex<SentinelClient>>),
}

impl std::fmt::Debug for RedisBackendBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL or client may carry a password: name only the kind of source.
        let source = match self.source {
            Source::Url(_) => "url",
            Source::Client(_) => "client",
            Source::Parts(..) => "client and connection manager",
            Source::Cluster(_) => "cluster",
            Source::ClusterParts(..) => "cluster nodes and cluster connection",
            Source::Sentinel { .. } => "sentinel",
            Source::SentinelClient(_) => "sentinel client",
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

/// Refuses a key prefix that is empty or holds a brace (it would change the keys' Redis
/// Cluster hash tags).
pub(crate) fn validate_prefix(prefix: &str) -> Result<()> {
    if prefix.is_empty() || prefix.contains(['{', '}']) {
        return Err(LockError::InvalidConfig(format!(
            "Redis key prefix {prefix:?} must be non-empty and free of '{{' and '}}'"
        )));
    }
    Ok(())
}

/// The settings a backend keeps.
#[derive(Clone, Copy, Debug)]
pub(super) struct RedisConfig {
    pub(super) response_timeout: Duration,
    pub(super) poll_cap: Duration,
    pub(super) attempts: u32,
    pub(super) claim_window: Duration,
    pub(super) breaker: BreakerOptions,
    /// What must acknowledge a grant (replicas, append-only files), and how long to wait.
    pub(super) acknowledgement: Acknowledgement,
    /// Whether the lock's acquisitions, renewals and releases in flight together go in one call.
    pub(super) batching: bool,
}

impl RedisBackendBuilder {
    /// The prefix of every Redis key and pub/sub channel this backend uses (default `lock`),
    /// and of the stores made from it: a [`RedisResultStore`](crate::redis::RedisResultStore)
    /// keeps cache entries and idempotency records under `<prefix>:cache:`, a
    /// [`RedisFencedStore`](crate::redis::RedisFencedStore) its values under
    /// `<prefix>:fenced:`. Give each application sharing a server a prefix of its own; a Redis
    /// ACL user limited to it needs `~<prefix>:*` for the keys and `&<prefix>:*` for the
    /// channels (see the Redis page of the docs).
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

    /// Replication acknowledgement: after each grant (a lock, fair lock, read-write lock or
    /// semaphore lease), `WAIT <replicas> <timeout>` on the same server, so a grant answered
    /// to the caller has reached `replicas` replicas. A grant that reached fewer within
    /// `timeout` is released at once and the acquire fails with [`LockError::Unavailable`]
    /// (fail-closed). `timeout` must be below the
    /// [response timeout](Self::response_timeout) (with [`wait_for_aof`](Self::wait_for_aof),
    /// the two timeouts together). Off by default.
    ///
    /// It narrows, not closes, the window in which a failover to a replica that missed the
    /// last grants hands a lock out twice: Redis's `WAIT` does not make Redis strongly
    /// consistent (the replica acknowledged the write, but Sentinel or the cluster may still
    /// promote another one, and a replica may lose it in a restart without persistence). The
    /// fencing tokens stay increasing either way; for a lock whose exclusion must hold across
    /// the loss of a server, use [`RedLock`](crate::redis::redlock::RedLock) over independent
    /// servers, or a consensus store (etcd, ZooKeeper). Each grant costs one more round trip
    /// on the server (the replica's acknowledgement).
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use lock_core::RedisBackend;
    ///
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// let backend = RedisBackend::builder_sentinel(["redis://127.0.0.1:26379/"], "orders-primary")
    ///     .wait_for_replicas(1, Duration::from_millis(200))
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn wait_for_replicas(mut self, replicas: u32, timeout: Duration) -> Self {
        self.config.acknowledgement = self.config.acknowledgement.with_replicas(replicas, timeout);
        self
    }

    /// Durability acknowledgement (Redis 7.2 or later): after each grant, `WAITAOF <local>
    /// <replicas> <timeout>` on the same server, so a grant answered to the caller is fsynced
    /// to the append-only file of the server itself (`local`, which needs `appendonly yes`
    /// there) and of `replicas` replicas. It fails closed as
    /// [`wait_for_replicas`](Self::wait_for_replicas) does: a grant short of it is given back
    /// and the acquire fails with [`LockError::Unavailable`]. [`connect`](Self::connect) fails
    /// with [`LockError::InvalidConfig`] on a server without `WAITAOF` (before 7.2) or, with
    /// `local`, without `appendonly`.
    ///
    /// The two combine: with both set, `WAIT` and then `WAITAOF` follow each grant, and their
    /// timeouts together must stay below the [response timeout](Self::response_timeout).
    /// `wait_for_replicas(1, …)` with `wait_for_aof(true, 0, …)` puts a grant in a replica's
    /// memory and on the primary's disk, and stays fast. Asking `WAITAOF` for replicas is slow
    /// on the servers measured (Redis 8.0): a replica reports its fsyncs with its once-a-second
    /// acknowledgement, so each grant waits up to a second for it (about 1,000 ms against 1–2 ms
    /// for `WAIT 1` or the local fsync, in `cargo xtask bench --backend redis-sentinel`). The
    /// local fsync is immediate under `appendfsync always`, and up to a second under
    /// `everysec`, Redis's default.
    ///
    /// Where `WAIT` keeps a grant through the loss of the primary (a replica has it in memory),
    /// `WAITAOF` also keeps it through a restart of the servers that acknowledged (it is on
    /// disk), as when a primary restarts faster than its failover is decided. The limits of
    /// `WAIT` stand: Redis stays asynchronously replicated, and a failover may still promote a
    /// replica that had not acknowledged; the fencing tokens stay increasing either way.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use lock_core::RedisBackend;
    ///
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// // In a replica's memory and on the primary's disk before the caller has the lock.
    /// let backend = RedisBackend::builder_sentinel(["redis://127.0.0.1:26379/"], "orders-primary")
    ///     .wait_for_replicas(1, Duration::from_millis(200))
    ///     .wait_for_aof(true, 0, Duration::from_millis(200))
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn wait_for_aof(mut self, local: bool, replicas: u32, timeout: Duration) -> Self {
        self.config.acknowledgement = self
            .config
            .acknowledgement
            .with_aof(local, replicas, timeout);
        self
    }

    /// Whether the lock's acquisitions (and, apart, its renewals and its releases) in flight at
    /// the same moment go to the server as one script call for all of them (default on; off on a Redis
    /// Cluster, where one call touches one slot, and with
    /// [`wait_for_replicas`](Self::wait_for_replicas)). Nothing waits to fill a batch: a
    /// caller alone sends its own script at once, and callers that queue behind a busy
    /// connection go together in the next call. Each gets its own reply and error.
    ///
    /// ```no_run
    /// use lock_core::RedisBackend;
    ///
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// let backend = RedisBackend::builder("redis://127.0.0.1:6379/")
    ///     .batching(false)
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn batching(mut self, batching: bool) -> Self {
        self.config.batching = batching;
        self
    }

    /// How to connect to the servers the sentinels name (a backend from
    /// [`RedisBackend::builder_sentinel`]): TLS, ACL user and password, database, RESP version,
    /// as `redis-rs` takes them. The sentinels' own user, password and TLS are in their URLs.
    ///
    /// ```no_run
    /// use lock_core::redis::redis::sentinel::SentinelNodeConnectionInfo;
    /// use lock_core::redis::redis::RedisConnectionInfo;
    /// use lock_core::RedisBackend;
    ///
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// let nodes = SentinelNodeConnectionInfo::default().set_redis_connection_info(
    ///     RedisConnectionInfo::default().set_username("orders").set_password("secret"),
    /// );
    /// let backend = RedisBackend::builder_sentinel(["redis://127.0.0.1:26379/"], "orders-primary")
    ///     .sentinel_nodes(nodes)
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn sentinel_nodes(mut self, connection: SentinelNodeConnectionInfo) -> Self {
        match &mut self.source {
            Source::Sentinel { nodes, .. } => *nodes = connection,
            _ => self.nodes_without_sentinel = true,
        }
        self
    }

    /// Connects, loads the scripts and subscribes for wake-ups.
    pub async fn connect(self) -> Result<RedisBackend> {
        self.config.breaker.validate()?;
        validate_prefix(&self.prefix)?;
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
        if self.config.acknowledgement.is_on() {
            self.config
                .acknowledgement
                .validate(self.config.response_timeout)
                .map_err(LockError::InvalidConfig)?;
        }
        if self.nodes_without_sentinel {
            return Err(LockError::InvalidConfig(
                "sentinel_nodes applies to a backend from RedisBackend::builder_sentinel".into(),
            ));
        }
        let Connected {
            mut connection,
            pubsub,
            server,
            cluster_nodes,
        } = self.source.connect(self.config.response_timeout).await?;
        for script in scripts::all()
            .into_iter()
            .chain(super::redlock::scripts())
            .chain(super::batch::scripts())
        {
            script
                .prepare_invoke()
                .load_async(&mut connection)
                .await
                .map_err(to_lock_error)?;
        }
        if let Some(probe) = self.config.acknowledgement.probe() {
            probe_acknowledgement(&mut connection, probe).await?;
        }
        let hub = Arc::new(WakeHub::new(
            &self.prefix,
            OwnerToken::random()?.to_hex()[..16].to_owned(),
            cluster_nodes.is_some(),
        ));
        let breaker = Breaker::new(BACKEND, self.config.breaker);
        let stop = CancellationToken::new();
        let leases = Arc::new(LeaseBook::default());
        let batches = (self.config.batching
            && cluster_nodes.is_none()
            && !self.config.acknowledgement.is_on())
        .then(super::batch::Batches::default);
        let shards = match cluster_nodes {
            // A cluster's wake-ups go on sharded channels, subscribed per key by its waiters,
            // and its revocations on one of the backend's own, subscribed here.
            Some(nodes) => Some(
                ShardWakeups::start(
                    &nodes,
                    &self.prefix,
                    self.config.response_timeout,
                    hub.clone(),
                    leases.clone(),
                    connection.clone(),
                    stop.clone(),
                )
                .await
                .map_err(to_lock_error)?,
            ),
            None => {
                let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
                tokio::spawn(wakeups::run(
                    pubsub.clone(),
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
                None
            }
        };
        Ok(RedisBackend {
            shared: Arc::new(Shared {
                connection,
                pubsub,
                server,
                shards,
                batches,
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

/// Sends the acknowledgement's `probe` once: a server that cannot acknowledge as asked (no
/// `WAITAOF` before Redis 7.2, no `appendonly` for the local AOF) is a setting to change, not
/// an outage, so it fails `connect` as one rather than every grant later.
async fn probe_acknowledgement(connection: &mut RedisConnection, probe: redis::Cmd) -> Result<()> {
    match probe.query_async::<redis::Value>(connection).await {
        Ok(_) => Ok(()),
        Err(error)
            if error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError) =>
        {
            Err(LockError::InvalidConfig(format!(
                "wait_for_aof: the server refused WAITAOF ({error}); it needs Redis 7.2 or \
                 later, and `appendonly yes` for the server's own append-only file"
            )))
        }
        Err(error) => Err(to_lock_error(error)),
    }
}

/// A backend's connection, where its subscriptions go, and how errors name its server.
struct Connected {
    connection: RedisConnection,
    pubsub: PubSubSource,
    server: String,
    /// A cluster's node URLs, for the connection of its sharded wake-up channels.
    cluster_nodes: Option<Vec<String>>,
}

impl Source {
    async fn connect(self, timeout: Duration) -> Result<Connected> {
        match self {
            Source::Url(url) => connect_server(open_client(&url)?, None, timeout).await,
            Source::Client(client) => connect_server(client, None, timeout).await,
            Source::Parts(client, manager) => connect_server(client, Some(manager), timeout).await,
            Source::Cluster(urls) => connect_cluster(urls, None, timeout).await,
            Source::ClusterParts(urls, connection) => {
                connect_cluster(urls, Some(connection), timeout).await
            }
            Source::Sentinel {
                sentinels,
                service,
                nodes,
            } => {
                if sentinels.is_empty() || service.is_empty() {
                    return Err(LockError::InvalidConfig(
                        "a Sentinel backend needs at least one sentinel URL and the service name"
                            .into(),
                    ));
                }
                for sentinel in &sentinels {
                    tls::ensure_crypto_provider(&open_client(sentinel)?);
                }
                let client = SentinelClient::build(
                    sentinels,
                    service.clone(),
                    Some(nodes),
                    SentinelServerType::Master,
                )
                .map_err(|e| LockError::InvalidConfig(format!("Sentinel URLs: {e}")))?;
                let client = Arc::new(tokio::sync::Mutex::new(client));
                connect_sentinel(client, format!("{service:?}"), timeout).await
            }
            Source::SentinelClient(client) => {
                connect_sentinel(client, "of the sentinel client".into(), timeout).await
            }
        }
    }
}

/// One server, through `client` and, when given, the application's `manager`.
async fn connect_server(
    client: redis::Client,
    manager: Option<ConnectionManager>,
    timeout: Duration,
) -> Result<Connected> {
    tls::ensure_crypto_provider(&client);
    let manager = match manager {
        Some(manager) => manager,
        None => match ConnectionManager::new_with_config(client.clone(), manager_config(timeout))
            .await
        {
            Ok(manager) => manager,
            Err(error) => return Err(tls::explain_failed_connect(&client, error, timeout).await),
        },
    };
    Ok(Connected {
        connection: manager.into(),
        server: client.get_connection_info().addr().to_string(),
        pubsub: PubSubSource::Server(Box::new(client)),
        cluster_nodes: None,
    })
}

/// A Redis Cluster from some of its nodes: one cluster connection (a multiplexed connection
/// per primary) for the commands, the application's `connection` when given; subscriptions
/// on any one node, since a `PUBLISH` reaches them all.
async fn connect_cluster(
    urls: Vec<String>,
    connection: Option<ClusterConnection>,
    timeout: Duration,
) -> Result<Connected> {
    if urls.is_empty() {
        return Err(LockError::InvalidConfig(
            "a Redis Cluster backend needs at least one node URL".into(),
        ));
    }
    let nodes = urls
        .iter()
        .map(|url| open_client(url))
        .collect::<Result<Vec<_>>>()?;
    for node in &nodes {
        tls::ensure_crypto_provider(node);
    }
    let connection = match connection {
        Some(connection) => connection,
        None => ClusterClient::builder(urls.iter().map(String::as_str))
            .connection_timeout(timeout)
            .response_timeout(timeout)
            .retries(3)
            .build()
            .map_err(|e| LockError::InvalidConfig(format!("Redis Cluster nodes: {e}")))?
            .get_async_connection()
            .await
            .map_err(to_lock_error)?,
    };
    let server = format!(
        "cluster ({})",
        nodes
            .iter()
            .map(|node| node.get_connection_info().addr().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(Connected {
        connection: connection.into(),
        pubsub: PubSubSource::ClusterNodes {
            nodes: nodes.into(),
            next: Arc::default(),
        },
        server,
        cluster_nodes: Some(urls),
    })
}

/// The primary that the sentinels `client` asks name for its service (`service`, for
/// messages), followed across failovers.
async fn connect_sentinel(
    client: Arc<tokio::sync::Mutex<SentinelClient>>,
    service: String,
    timeout: Duration,
) -> Result<Connected> {
    tls::ensure_any_crypto_provider();
    let primary = tokio::time::timeout(
        timeout * 2,
        SentinelPrimary::connect(client, manager_config(timeout)),
    )
    .await
    .map_err(|_| {
        LockError::unavailable(
            BACKEND,
            format!(
                "no primary for the service {service} from the sentinels within {:?}",
                timeout * 2
            ),
        )
    })?
    .map_err(to_lock_error)?;
    let primary = Arc::new(primary);
    Ok(Connected {
        connection: RedisConnection::sentinel(primary.clone()),
        pubsub: PubSubSource::Sentinel(primary),
        server: format!("sentinel service {service}"),
        cluster_nodes: None,
    })
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

    /// Starts configuring a backend on a Redis Cluster, from the URLs of some of its nodes
    /// (the others are discovered; give several, in case one is down at start). Every key of
    /// one lock, primitive, cache entry or SKU shares one hash tag, so each script runs on the
    /// one primary that owns its slot; `MOVED` and `ASK` are followed and the scripts loaded on
    /// a new primary when it answers `NOSCRIPT`. `rediss://` URLs (with `redis-tls`) and URLs
    /// with an ACL user and password work as for one server.
    ///
    /// ```no_run
    /// use lock_core::{LockClient, RedisBackend};
    ///
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// let backend = RedisBackend::builder_cluster([
    ///     "redis://127.0.0.1:7000/",
    ///     "redis://127.0.0.1:7001/",
    ///     "redis://127.0.0.1:7002/",
    /// ])
    /// .connect()
    /// .await?;
    /// let locks = LockClient::new(backend);
    /// # Ok(()) }
    /// ```
    pub fn builder_cluster<U: Into<String>>(
        nodes: impl IntoIterator<Item = U>,
    ) -> RedisBackendBuilder {
        Self::builder_with(Source::Cluster(nodes.into_iter().map(Into::into).collect()))
    }

    /// Starts configuring a backend on a Redis Cluster that sends its commands on the
    /// application's own cluster connection (shared: one multiplexed connection per primary
    /// for both), as [`builder_from_parts`](Self::builder_from_parts) does on one server.
    /// Subscriptions need connections of their own, so the backend also takes the URLs of
    /// some of the cluster's nodes to open its wake-up and value-push subscriptions from; they
    /// must name the same cluster. The connection keeps the timeouts, retries and read routing
    /// it was built with ([`response_timeout`](RedisBackendBuilder::response_timeout) does not
    /// change them); give it a response timeout, or a lost reply waits for the connection to
    /// drop. Scripts must run on primaries: a connection that reads from replicas still sends
    /// them there, since every script writes.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use lock_core::{LockClient, RedisBackend};
    /// use redis::cluster::ClusterClient;
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let nodes = ["redis://127.0.0.1:7000/", "redis://127.0.0.1:7001/"];
    /// let connection = ClusterClient::builder(nodes)
    ///     .response_timeout(Duration::from_secs(2))
    ///     .build()?
    ///     .get_async_connection()
    ///     .await?;
    /// // The application keeps using `connection` (a cheap clone) for its own commands.
    /// let backend = RedisBackend::builder_cluster_from_parts(nodes, connection.clone())
    ///     .connect()
    ///     .await?;
    /// let locks = LockClient::new(backend);
    /// # Ok(()) }
    /// ```
    pub fn builder_cluster_from_parts<U: Into<String>>(
        nodes: impl IntoIterator<Item = U>,
        connection: ClusterConnection,
    ) -> RedisBackendBuilder {
        Self::builder_with(Source::ClusterParts(
            nodes.into_iter().map(Into::into).collect(),
            connection,
        ))
    }

    /// Starts configuring a backend on the primary that Redis Sentinel names for `service`
    /// (the `sentinel monitor <service> …` name), from the URLs of some sentinels. After a
    /// failover (a command fails on a server that is gone, or answers `READONLY` because it
    /// was demoted) the backend asks the sentinels again and moves to the new primary; the
    /// fencing tokens keep increasing across it. How to reach the data servers (TLS, ACL user):
    /// [`sentinel_nodes`](RedisBackendBuilder::sentinel_nodes).
    ///
    /// ```no_run
    /// use lock_core::{LockClient, RedisBackend};
    ///
    /// # async fn example() -> Result<(), lock_core::LockError> {
    /// let backend = RedisBackend::builder_sentinel(
    ///     ["redis://127.0.0.1:26379/", "redis://127.0.0.1:26380/"],
    ///     "orders-primary",
    /// )
    /// .connect()
    /// .await?;
    /// let locks = LockClient::new(backend);
    /// # Ok(()) }
    /// ```
    pub fn builder_sentinel<U: Into<String>>(
        sentinels: impl IntoIterator<Item = U>,
        service: impl Into<String>,
    ) -> RedisBackendBuilder {
        Self::builder_with(Source::Sentinel {
            sentinels: sentinels.into_iter().map(Into::into).collect(),
            service: service.into(),
            nodes: SentinelNodeConnectionInfo::default(),
        })
    }

    /// Starts configuring a backend on the primary that the application's `SentinelClient`
    /// names, for settings the URLs of [`builder_sentinel`](Self::builder_sentinel) cannot
    /// carry: a private CA or client certificates (with `redis-tls`), and different users,
    /// TLS settings or protocols towards the sentinels and towards the data servers
    /// (`redis::sentinel::SentinelClientBuilder`). The client must ask for the primary
    /// (`SentinelServerType::Master`); failovers are followed as with `builder_sentinel`.
    ///
    /// ```no_run
    /// use lock_core::{LockClient, RedisBackend};
    /// use redis::sentinel::{SentinelClientBuilder, SentinelServerType};
    /// use redis::{ConnectionAddr, TlsMode};
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let sentinel = ConnectionAddr::Tcp("127.0.0.1".into(), 26379);
    /// let client = SentinelClientBuilder::new([sentinel], "orders-primary", SentinelServerType::Master)?
    ///     .set_client_to_sentinel_username("orders")
    ///     .set_client_to_sentinel_password("sentinel-secret")
    ///     .set_client_to_redis_username("orders")
    ///     .set_client_to_redis_password("secret")
    ///     .build()?;
    /// let backend = RedisBackend::builder_from_sentinel_client(client).connect().await?;
    /// let locks = LockClient::new(backend);
    /// # Ok(()) }
    /// ```
    pub fn builder_from_sentinel_client(client: SentinelClient) -> RedisBackendBuilder {
        Self::builder_with(Source::SentinelClient(Arc::new(tokio::sync::Mutex::new(
            client,
        ))))
    }

    fn builder_with(source: Source) -> RedisBackendBuilder {
        RedisBackendBuilder {
            nodes_without_sentinel: false,
            source,
            prefix: "lock".into(),
            config: RedisConfig {
                response_timeout: Duration::from_secs(2),
                poll_cap: Duration::from_secs(1),
                attempts: 3,
                claim_window: Duration::from_secs(2),
                breaker: BreakerOptions::new(),
                acknowledgement: Acknowledgement::default(),
                batching: true,
            },
        }
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
