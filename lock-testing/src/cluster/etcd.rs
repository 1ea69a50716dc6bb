//! A 3-member etcd cluster on loopback.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use etcd_client as etcd;

use super::{tcp_request_async, Cluster, Member};
use crate::free_port;

/// Three `etcd` members (the binary of `etcd-server`, on `PATH`) on free loopback ports, with
/// a 100 ms heartbeat and a 1 s election timeout, so that a leader's loss is noticed in about a
/// second. Client URLs are `http://127.0.0.1:<port>`.
///
/// ```no_run
/// # async fn demo() -> Result<(), String> {
/// use std::time::Duration;
/// use lock_testing::cluster::{data_dir, try_wait_for_quorum, Cluster, EtcdCluster};
///
/// let mut cluster = EtcdCluster::start(data_dir(&std::env::temp_dir(), "etcd-cluster")?)?;
/// let leader = try_wait_for_quorum(&mut cluster, Duration::from_secs(25)).await?;
/// let follower = (leader + 1) % 3;
/// let pinned = cluster.url(&[follower]); // a client that reaches one member only
/// # let _ = pinned;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct EtcdCluster {
    members: Vec<Member>,
    dir: PathBuf,
}

impl EtcdCluster {
    /// Whether the `etcd` binary is on `PATH`.
    #[must_use]
    pub fn installed() -> bool {
        super::on_path("etcd")
    }

    /// Starts three members keeping their data and logs under `dir` (created if missing);
    /// does not wait for them to form a quorum (see [`super::try_wait_for_quorum`]).
    pub fn start(dir: PathBuf) -> Result<Self, String> {
        let ports: Vec<[u16; 2]> = (0..3).map(|_| [free_port(), free_port()]).collect();
        let initial: String = ports
            .iter()
            .enumerate()
            .map(|(i, [_, peer])| format!("etcd{}=http://127.0.0.1:{peer}", i + 1))
            .collect::<Vec<_>>()
            .join(",");
        let mut members = Vec::new();
        for (i, &[client, peer]) in ports.iter().enumerate() {
            let name = format!("etcd{}", i + 1);
            let home = dir.join(&name);
            std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
            let (initial, data) = (initial.clone(), home.join("data"));
            let command_name = name.clone();
            members.push(Member::new(name, client, home.join("log"), move || {
                let client = format!("http://127.0.0.1:{client}");
                let peer = format!("http://127.0.0.1:{peer}");
                let mut etcd = Command::new("etcd");
                etcd.args(["--name", &command_name, "--data-dir"]);
                etcd.arg(&data);
                etcd.args([
                    "--listen-client-urls",
                    &client,
                    "--advertise-client-urls",
                    &client,
                    "--listen-peer-urls",
                    &peer,
                    "--initial-advertise-peer-urls",
                    &peer,
                    "--initial-cluster",
                    &initial,
                    "--initial-cluster-state",
                    "new",
                    "--initial-cluster-token",
                    "lock-core-failover",
                    "--heartbeat-interval",
                    "100",
                    "--election-timeout",
                    "1000",
                    "--log-level",
                    "warn",
                ]);
                etcd
            }));
        }
        let mut cluster = Self { members, dir };
        for member in &mut cluster.members {
            member.start()?;
        }
        Ok(cluster)
    }

    /// Member `i`'s maintenance status: `(its member id, the leader's member id)`.
    async fn status(&self, i: usize) -> Option<(u64, u64)> {
        if !self.members[i].is_running() {
            return None;
        }
        let mut client = self.client(i).await?;
        let status = client.status().await.ok()?;
        Some((status.header()?.member_id(), status.leader()))
    }

    /// A client of member `i` alone, with short timeouts.
    async fn client(&self, i: usize) -> Option<etcd::Client> {
        let url = format!("http://127.0.0.1:{}", self.members[i].client_port);
        let options = etcd::ConnectOptions::new()
            .with_connect_timeout(Duration::from_millis(500))
            .with_timeout(Duration::from_millis(800));
        etcd::Client::connect([url], Some(options)).await.ok()
    }
}

impl Cluster for EtcdCluster {
    fn members(&mut self) -> &mut [Member] {
        &mut self.members
    }

    /// `/health` is true once the member has a leader and serves a quorum read.
    async fn serving(&self, i: usize) -> bool {
        if !self.members[i].is_running() {
            return false;
        }
        let port = self.members[i].client_port;
        let request = format!("GET /health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
        tcp_request_async(port, request.into_bytes())
            .await
            .is_some_and(|reply| reply.contains(r#""health":"true""#))
    }

    async fn leader(&self) -> Option<usize> {
        let mut ids = Vec::new();
        let mut leader = None;
        for i in 0..self.members.len() {
            let status = self.status(i).await;
            ids.push(status.map(|(id, _)| id));
            leader = leader.or(status.map(|(_, leader)| leader).filter(|&l| l != 0));
        }
        let leader = leader?;
        ids.iter().position(|&id| id == Some(leader))
    }

    /// etcd can hand leadership over: asks member `i` (if it leads) to move it to another
    /// running member. Failures are left for the caller's next [`Cluster::leader`] to see.
    async fn ensure_leader_is_not(&self, i: usize) {
        let Some((id, leader)) = self.status(i).await else {
            return;
        };
        if id != leader {
            return;
        }
        for j in (0..self.members.len()).filter(|&j| j != i) {
            if let Some((target, _)) = self.status(j).await {
                if let Some(mut client) = self.client(i).await {
                    client.move_leader(target).await.ok();
                }
                return;
            }
        }
    }

    fn address(port: u16) -> String {
        format!("http://127.0.0.1:{port}")
    }

    fn data_dir(&self) -> &Path {
        &self.dir
    }
}
