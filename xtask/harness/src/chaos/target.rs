//! The lock server under test, per backend: where it is, how to reach it through a
//! [`FaultProxy`], and the operator's hand on its keys (expire a lock behind its holder's
//! back, count what a lock left behind).

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use etcd_client as etcd;
use zookeeper_client as zk;

use example_support::backend::BackendKind;

use super::report::Measured;
use crate::shared::proxy::FaultProxy;

/// A lock server: the backend and its URL.
#[derive(Clone, Debug)]
pub struct Target {
    /// The backend.
    pub kind: BackendKind,
    /// Its URL, straight to the server.
    pub url: String,
}

impl Target {
    /// `kind` at `url`.
    #[must_use]
    pub fn new(kind: BackendKind, url: &str) -> Self {
        Self {
            kind,
            url: url.to_owned(),
        }
    }

    /// The `host:port` part of the URL (after any `scheme://` and `user@`).
    fn authority(&self) -> (usize, usize) {
        let start = self.url.find("://").map_or(0, |i| i + 3);
        let end = self.url[start..]
            .find(['/', ','])
            .map_or(self.url.len(), |i| start + i);
        let host_start = self.url[start..end]
            .rfind('@')
            .map_or(start, |i| start + i + 1);
        (host_start, end)
    }

    /// The server's socket address.
    pub fn upstream(&self) -> Result<SocketAddr, String> {
        let (start, end) = self.authority();
        self.url[start..end]
            .to_socket_addrs()
            .map_err(|e| format!("{}: {e}", self.url))?
            .next()
            .ok_or_else(|| format!("{}: no address", self.url))
    }

    /// A [`FaultProxy`] in front of the target's server (connect through
    /// [`via`](Self::via)`(proxy.addr())`).
    pub async fn proxy(&self) -> Result<FaultProxy, String> {
        FaultProxy::start(self.upstream()?)
            .await
            .map_err(|e| format!("proxy: {e}"))
    }

    /// The URL with its `host:port` replaced by `proxy`'s.
    #[must_use]
    pub fn via(&self, proxy: SocketAddr) -> String {
        let (start, end) = self.authority();
        format!("{}{proxy}{}", &self.url[..start], &self.url[end..])
    }

    /// Whether [`expire_early`](Self::expire_early) works on this backend.
    #[must_use]
    pub fn can_expire_early(&self) -> bool {
        matches!(
            self.kind,
            BackendKind::Redis
                | BackendKind::Zookeeper
                | BackendKind::Etcd
                | BackendKind::RedisCluster
                | BackendKind::RedisSentinel
        )
    }

    /// Ends the lock `key` (namespace `chaos`) on the server, from outside: Redis `PEXPIRE
    /// <lock key> 1` (a server clock jumping ahead), ZooKeeper deletes the holder's node, etcd
    /// the lock's keys. Returns how many entries it touched.
    pub async fn expire_early(&self, key: &str) -> Result<u64, String> {
        let full = format!("chaos:{key}");
        match self.kind {
            BackendKind::Redis => {
                let mut c = self.redis().await?;
                let touched: u64 = redis::cmd("PEXPIRE")
                    .arg(format!("lock:{{#{full}}}"))
                    .arg(1)
                    .query_async(&mut c)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(touched)
            }
            BackendKind::Zookeeper => {
                let client = self.zookeeper().await?;
                let dir = format!("/locks/{full}");
                let children = client
                    .list_children(&dir)
                    .await
                    .map_err(|e| e.to_string())?;
                // The holder's node is the one with the lowest sequence number; the others
                // are contenders' try-nodes, gone again within a round trip.
                let holder = children
                    .iter()
                    .min_by_key(|name| name.rsplit('-').next().and_then(|s| s.parse::<u64>().ok()));
                let Some(holder) = holder else { return Ok(0) };
                match client.delete(&format!("{dir}/{holder}"), None).await {
                    Ok(()) => Ok(1),
                    Err(zk::Error::NoNode) => Ok(0),
                    Err(e) => Err(e.to_string()),
                }
            }
            BackendKind::Etcd => {
                let mut client = self.etcd().await?;
                let deleted = client
                    .delete(
                        format!("lock/{full}/"),
                        Some(etcd::DeleteOptions::new().with_prefix()),
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(deleted.deleted() as u64)
            }
            BackendKind::RedisCluster | BackendKind::RedisSentinel => {
                let lock = format!("lock:{{#{full}}}");
                self.on_primaries(|c| {
                    let lock = lock.clone();
                    async move {
                        redis::cmd("PEXPIRE")
                            .arg(lock)
                            .arg(1)
                            .query_async::<u64>(&mut c.clone())
                            .await
                    }
                })
                .await
            }
            other => Err(format!("no early expiry on {}", other.name())),
        }
    }

    /// Counts a violation in `m` when the server still holds an entry of the lock `key`
    /// (on the backends whose entries can be seen from outside: [`can_expire_early`]).
    ///
    /// [`can_expire_early`]: Self::can_expire_early
    pub async fn expect_no_entries(&self, key: &str, m: &mut Measured) -> Result<(), String> {
        if self.can_expire_early() {
            let left = self.entries(key).await?;
            if left > 0 {
                m.violation(format!("{left} entr(y/ies) of the lock left on the server"));
            }
        }
        Ok(())
    }

    /// How many entries the lock `key` has on the server (0: nothing left behind).
    pub async fn entries(&self, key: &str) -> Result<u64, String> {
        let full = format!("chaos:{key}");
        match self.kind {
            BackendKind::Redis => {
                let mut c = self.redis().await?;
                let n: u64 = redis::cmd("EXISTS")
                    .arg(format!("lock:{{#{full}}}"))
                    .arg(format!("lock:{{#{full}}}:waiters"))
                    .query_async(&mut c)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(n)
            }
            BackendKind::Zookeeper => {
                let client = self.zookeeper().await?;
                match client.list_children(&format!("/locks/{full}")).await {
                    Ok(children) => Ok(children.len() as u64),
                    Err(zk::Error::NoNode) => Ok(0),
                    Err(e) => Err(e.to_string()),
                }
            }
            BackendKind::Etcd => {
                let mut client = self.etcd().await?;
                let found = client
                    .get(
                        format!("lock/{full}/"),
                        Some(etcd::GetOptions::new().with_prefix().with_count_only()),
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(found.count() as u64)
            }
            BackendKind::RedisCluster | BackendKind::RedisSentinel => {
                let lock = format!("lock:{{#{full}}}");
                self.on_primaries(|c| {
                    let lock = lock.clone();
                    async move {
                        redis::cmd("EXISTS")
                            .arg(&lock)
                            .arg(format!("{lock}:waiters"))
                            .query_async::<u64>(&mut c.clone())
                            .await
                    }
                })
                .await
            }
            other => Err(format!("no entry count on {}", other.name())),
        }
    }

    /// The server's count of requests it has handled so far, for commands per handoff
    /// (scenario 10): Redis `total_commands_processed`, ZooKeeper's `Received` packets (`srvr`),
    /// etcd's gRPC messages received (`/metrics`), PostgreSQL's transactions of the database,
    /// MySQL's `Questions`. Each counts this call's own request too (one or two).
    pub async fn commands(&self) -> Result<u64, String> {
        match self.kind {
            BackendKind::Redis => {
                let mut c = self.redis().await?;
                let info: String = redis::cmd("INFO")
                    .arg("stats")
                    .query_async(&mut c)
                    .await
                    .map_err(|e| e.to_string())?;
                field(&info, "total_commands_processed:")
            }
            BackendKind::Zookeeper => {
                let reply = self.plain_request(b"srvr").await?;
                field(&reply, "Received:")
            }
            BackendKind::Etcd => {
                let request = "GET /metrics HTTP/1.0\r\n\r\n";
                let reply = self.plain_request(request.as_bytes()).await?;
                let total: f64 = reply
                    .lines()
                    .filter(|l| l.starts_with("grpc_server_msg_received_total"))
                    .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                    .sum();
                Ok(total as u64)
            }
            BackendKind::Redlock => Err("no command count on redlock".to_owned()),
            // The primaries' counts: a replica counts the commands it replicates too.
            BackendKind::RedisCluster | BackendKind::RedisSentinel => {
                self.on_primaries(|c| async move {
                    let info: String = redis::cmd("INFO")
                        .arg("stats")
                        .query_async(&mut c.clone())
                        .await?;
                    Ok(field(&info, "total_commands_processed:").unwrap_or(0))
                })
                .await
            }
            BackendKind::Postgres => {
                use sqlx::Connection;
                let mut c = sqlx::PgConnection::connect(&self.url)
                    .await
                    .map_err(|e| e.to_string())?;
                let (n,): (i64,) = sqlx::query_as(
                    "SELECT (xact_commit + xact_rollback)::bigint FROM pg_stat_database \
                     WHERE datname = current_database()",
                )
                .fetch_one(&mut c)
                .await
                .map_err(|e| e.to_string())?;
                c.close().await.ok();
                Ok(n as u64)
            }
            BackendKind::Mysql => {
                use sqlx::Connection;
                let mut c = sqlx::MySqlConnection::connect(&self.url)
                    .await
                    .map_err(|e| e.to_string())?;
                let (_, n): (String, String) =
                    sqlx::query_as("SHOW GLOBAL STATUS LIKE 'Questions'")
                        .fetch_one(&mut c)
                        .await
                        .map_err(|e| e.to_string())?;
                c.close().await.ok();
                n.parse().map_err(|_| format!("Questions: {n:?}"))
            }
            BackendKind::Memory => Err("no server to count on memory".into()),
        }
    }

    /// Sends `request` over a fresh TCP connection to the server and reads to EOF (the
    /// cluster launchers' [`tcp_request`](lock_testing::cluster::tcp_request)).
    async fn plain_request(&self, request: &[u8]) -> Result<String, String> {
        let addr = self.upstream()?;
        let request = request.to_vec();
        tokio::task::spawn_blocking(move || {
            lock_testing::cluster::tcp_request(addr.port(), &request)
        })
        .await
        .ok()
        .flatten()
        .ok_or_else(|| format!("{addr}: no answer"))
    }

    /// The data nodes of a Redis Cluster or of the Sentinel set (the stack's, from
    /// `LOCK_TEST_REDIS_CLUSTER_URLS` / `LOCK_TEST_REDIS_SENTINEL_NODES`).
    #[must_use]
    pub fn data_nodes(&self) -> Vec<String> {
        match self.kind {
            BackendKind::RedisCluster => example_support::backend::redis_cluster_urls(),
            BackendKind::RedisSentinel => example_support::backend::redis_sentinel_nodes(),
            _ => vec![self.url.clone()],
        }
    }

    /// Runs `query` on every data node that answers as a primary now (`role:master`), and adds
    /// up the answers; a cluster primary that does not own the key answers `MOVED`, which counts
    /// 0, and a node that is down is passed over.
    async fn on_primaries<F, Fut>(&self, query: F) -> Result<u64, String>
    where
        F: Fn(redis::aio::MultiplexedConnection) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<u64>>,
    {
        let mut total = 0;
        let mut primaries = 0;
        for url in self.data_nodes() {
            let Ok(mut c) = redis_connection(&url).await else {
                continue;
            };
            let role: Result<String, _> = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut c)
                .await;
            if !role.is_ok_and(|info| info.contains("role:master")) {
                continue;
            }
            primaries += 1;
            match query(c).await {
                Ok(n) => total += n,
                Err(e) if e.code() == Some("MOVED") => {}
                Err(e) => return Err(format!("{url}: {e}")),
            }
        }
        if primaries == 0 {
            return Err(format!("no primary answers among {:?}", self.data_nodes()));
        }
        Ok(total)
    }

    async fn redis(&self) -> Result<redis::aio::MultiplexedConnection, String> {
        redis::Client::open(self.url.as_str())
            .map_err(|e| e.to_string())?
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| e.to_string())
    }

    async fn zookeeper(&self) -> Result<zk::Client, String> {
        zk::Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .with_connection_timeout(Duration::from_secs(5))
            .with_fail_eagerly()
            .connect(&self.url)
            .await
            .map_err(|e| e.to_string())
    }

    async fn etcd(&self) -> Result<etcd::Client, String> {
        let endpoints: Vec<&str> = self.url.split(',').map(str::trim).collect();
        etcd::Client::connect(&endpoints, None)
            .await
            .map_err(|e| e.to_string())
    }
}

/// A connection to the one Redis at `url`, bounded so a paused or dead node is passed over.
async fn redis_connection(url: &str) -> Result<redis::aio::MultiplexedConnection, String> {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_response_timeout(Some(Duration::from_secs(1)));
    redis::Client::open(url)
        .map_err(|e| e.to_string())?
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|e| e.to_string())
}

/// The number after `name` on its line of `text`.
fn field(text: &str, name: &str) -> Result<u64, String> {
    text.lines()
        .find_map(|line| line.trim().strip_prefix(name)?.trim().parse().ok())
        .ok_or_else(|| format!("no {name} in the server's answer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn via_replaces_host_and_port_only() {
        let proxy: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        for (url, expected) in [
            ("redis://127.0.0.1:26379/", "redis://127.0.0.1:4000/"),
            ("127.0.0.1:22181", "127.0.0.1:4000"),
            ("http://127.0.0.1:22379", "http://127.0.0.1:4000"),
            (
                "postgres://postgres@127.0.0.1:25432/postgres",
                "postgres://postgres@127.0.0.1:4000/postgres",
            ),
        ] {
            let target = Target::new(BackendKind::Redis, url);
            assert_eq!(target.via(proxy), expected);
            assert_eq!(target.upstream().unwrap().ip().to_string(), "127.0.0.1");
        }
    }
}
