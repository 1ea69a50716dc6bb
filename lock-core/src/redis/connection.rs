//! The connection a Redis backend and the stores made from it send their commands on: one
//! server's multiplexed connection, a Redis Cluster connection (commands routed by their first
//! key's slot, `MOVED`/`ASK` followed, scripts loaded on every primary), or the primary that
//! Sentinel names, followed across a failover.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::sentinel::SentinelClient;
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};

/// A cheap-to-clone handle on the connection a [`RedisBackend`](crate::RedisBackend) sends its
/// commands on, which the stores made from it share: one server's `ConnectionManager`, a Redis
/// Cluster connection, or the primary that Sentinel names (re-asked after a failover).
///
/// Build one from your own connection to hand it to the stores that take a connection
/// ([`RedisStock::from_connection`](crate::redis::RedisStock::from_connection),
/// [`RedisFencedStore::from_connection`](crate::redis::RedisFencedStore::from_connection)):
///
/// ```no_run
/// use lock_core::redis::{RedisConnection, RedisFencedStore};
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let client = redis::cluster::ClusterClient::new(vec!["redis://127.0.0.1:7000/"])?;
/// let cluster = client.get_async_connection().await?;
/// let store = RedisFencedStore::from_connection(RedisConnection::from(cluster));
/// # drop(store); Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisConnection {
    inner: Inner,
}

#[derive(Clone)]
enum Inner {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    Sentinel(Arc<SentinelPrimary>),
}

impl std::fmt::Debug for RedisConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.inner {
            Inner::Single(_) => "single server",
            Inner::Cluster(_) => "cluster",
            Inner::Sentinel(_) => "sentinel primary",
        };
        f.debug_struct("RedisConnection")
            .field("kind", &kind)
            .finish()
    }
}

impl From<ConnectionManager> for RedisConnection {
    fn from(connection: ConnectionManager) -> Self {
        Self {
            inner: Inner::Single(connection),
        }
    }
}

impl From<ClusterConnection> for RedisConnection {
    fn from(connection: ClusterConnection) -> Self {
        Self {
            inner: Inner::Cluster(connection),
        }
    }
}

impl RedisConnection {
    pub(super) fn sentinel(primary: Arc<SentinelPrimary>) -> Self {
        Self {
            inner: Inner::Sentinel(primary),
        }
    }

    /// Whether commands go to a Redis Cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.inner, Inner::Cluster(_))
    }

    /// The nodes a walk over every key must visit (`SCAN` is per node): `None` alone for one
    /// server or a Sentinel primary; on a Redis Cluster every primary, as `CLUSTER SLOTS`
    /// names them, sorted by address.
    pub(crate) async fn scan_nodes(&self) -> RedisResult<Vec<Option<Node>>> {
        let Inner::Cluster(cluster) = &self.inner else {
            return Ok(vec![None]);
        };
        let mut cluster = cluster.clone();
        let slots = cluster
            .route_command(
                redis::cmd("CLUSTER").arg("SLOTS").clone(),
                RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random),
            )
            .await?;
        let mut primaries: Vec<Node> = Vec::new();
        if let Value::Array(ranges) = slots {
            for range in ranges {
                let Value::Array(parts) = range else { continue };
                let Some(Value::Array(primary)) = parts.get(2) else {
                    continue;
                };
                let host = primary
                    .first()
                    .and_then(|v| redis::from_redis_value_ref::<String>(v).ok());
                let port = primary
                    .get(1)
                    .and_then(|v| redis::from_redis_value_ref::<u16>(v).ok());
                if let (Some(host), Some(port)) = (host, port) {
                    primaries.push(Node { host, port });
                }
            }
        }
        primaries.sort();
        primaries.dedup();
        Ok(primaries.into_iter().map(Some).collect())
    }

    /// Sends `command` to `node` (as [`scan_nodes`](Self::scan_nodes) named it; `None`: where
    /// this connection sends every command).
    pub(crate) async fn query_node<T: redis::FromRedisValue>(
        &self,
        node: Option<&Node>,
        command: &Cmd,
    ) -> RedisResult<T> {
        match (&self.inner, node) {
            (Inner::Cluster(cluster), Some(node)) => {
                let mut cluster = cluster.clone();
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
                    host: node.host.clone(),
                    port: node.port,
                });
                let value = cluster.route_command(command.clone(), routing).await?;
                Ok(redis::from_redis_value(value)?)
            }
            _ => command.query_async(&mut self.clone()).await,
        }
    }
}

/// One node of a Redis Cluster, by address.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Node {
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl ConnectionLike for RedisConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match &mut self.inner {
            Inner::Single(connection) => connection.req_packed_command(cmd),
            Inner::Cluster(connection) => connection.req_packed_command(cmd),
            Inner::Sentinel(primary) => {
                let primary = primary.clone();
                Box::pin(async move {
                    let (generation, mut connection) = primary.current();
                    let outcome = connection.req_packed_command(cmd).await;
                    if let Err(error) = &outcome {
                        primary.after_error(generation, error).await;
                    }
                    outcome
                })
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match &mut self.inner {
            Inner::Single(connection) => connection.req_packed_commands(pipeline, offset, count),
            Inner::Cluster(connection) => connection.req_packed_commands(pipeline, offset, count),
            Inner::Sentinel(primary) => {
                let primary = primary.clone();
                Box::pin(async move {
                    let (generation, mut connection) = primary.current();
                    let outcome = connection
                        .req_packed_commands(pipeline, offset, count)
                        .await;
                    if let Err(error) = &outcome {
                        primary.after_error(generation, error).await;
                    }
                    outcome
                })
            }
        }
    }

    fn get_db(&self) -> i64 {
        match &self.inner {
            Inner::Single(connection) => connection.get_db(),
            Inner::Cluster(connection) => connection.get_db(),
            Inner::Sentinel(primary) => primary.current().1.get_db(),
        }
    }
}

/// The hash tag of `key`: the text from its first `{` to the next `}`, braces included (empty
/// when it has none). Keys with the same tag are in the same Redis Cluster slot.
pub(crate) fn hash_tag(key: &str) -> &str {
    key.find('{')
        .and_then(|open| {
            let close = key[open..].find('}')?;
            Some(&key[open..=open + close])
        })
        .unwrap_or_default()
}

/// Whether `error` may mean that the server answering is no longer the primary: it is gone,
/// or it was demoted to a replica (`READONLY`) after a failover.
pub(crate) fn may_be_failover(error: &redis::RedisError) -> bool {
    error.is_io_error()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || error.is_timeout()
        || is_read_only(error)
}

/// `READONLY`: a write reached a replica (a demoted primary, before the client followed the
/// failover). The command did not run, so sending it again to the new primary is safe.
pub(crate) fn is_read_only(error: &redis::RedisError) -> bool {
    error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
}

/// The primary of a Sentinel-monitored set: a connection to the server the sentinels name,
/// replaced when a command fails in a way a failover explains and the sentinels now name
/// another server.
pub(crate) struct SentinelPrimary {
    /// The client that asks the sentinels: shared by the backends connected from clones of
    /// one builder given the application's `SentinelClient`.
    sentinels: Arc<tokio::sync::Mutex<SentinelClient>>,
    /// The current primary's client and connection, and how many times it was replaced.
    current: Mutex<Current>,
    config: ConnectionManagerConfig,
}

struct Current {
    generation: u64,
    client: redis::Client,
    connection: ConnectionManager,
}

impl SentinelPrimary {
    /// Asks the sentinels for the primary of their service and connects to it.
    pub(super) async fn connect(
        sentinels: Arc<tokio::sync::Mutex<SentinelClient>>,
        config: ConnectionManagerConfig,
    ) -> RedisResult<Self> {
        let client = sentinels.lock().await.async_get_client().await?;
        let connection = ConnectionManager::new_with_config(client.clone(), config.clone()).await?;
        Ok(Self {
            sentinels,
            current: Mutex::new(Current {
                generation: 0,
                client,
                connection,
            }),
            config,
        })
    }

    fn current(&self) -> (u64, ConnectionManager) {
        let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        (current.generation, current.connection.clone())
    }

    /// A client for the current primary, for subscriptions of their own.
    pub(crate) fn client(&self) -> redis::Client {
        let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        current.client.clone()
    }

    /// After a failed command on the connection of `generation`: when the failure may be a
    /// failover, asks the sentinels again and, when they name another server, connects to it.
    async fn after_error(&self, generation: u64, error: &redis::RedisError) {
        if may_be_failover(error) {
            self.follow(generation).await;
        }
    }

    /// Asks the sentinels which server is the primary, unless another caller already replaced
    /// the connection of `generation`; connects to it when it moved.
    pub(crate) async fn follow(&self, generation: u64) {
        let mut sentinels = self.sentinels.lock().await;
        if self.current().0 != generation {
            return;
        }
        let client = match sentinels.async_get_client().await {
            Ok(client) => client,
            Err(error) => {
                tracing::debug!(%error, "asking the sentinels for the primary failed");
                return;
            }
        };
        let moved = {
            let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
            current.client.get_connection_info().addr() != client.get_connection_info().addr()
        };
        if !moved {
            return;
        }
        match ConnectionManager::new_with_config(client.clone(), self.config.clone()).await {
            Ok(connection) => {
                let address = client.get_connection_info().addr().to_string();
                let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
                current.generation += 1;
                current.client = client;
                current.connection = connection;
                tracing::info!(%address, "following the Sentinel failover to a new primary");
            }
            Err(error) => {
                tracing::debug!(%error, "connecting to the primary the sentinels name failed");
            }
        }
    }

    /// Checks with the sentinels now (a subscription that dropped).
    pub(crate) async fn recheck(&self) {
        let generation = self.current().0;
        self.follow(generation).await;
    }
}

/// The connection manager settings of a backend's own connections.
pub(super) fn manager_config(response_timeout: Duration) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_response_timeout(Some(response_timeout))
        .set_connection_timeout(Some(response_timeout))
        .set_number_of_retries(2)
        .set_max_delay(Duration::from_secs(1))
}
