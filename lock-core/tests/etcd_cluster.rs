//! A 3-member etcd cluster on loopback losing a follower, then its leader, under a contended
//! lock workload: no overlaps, fencing tokens increasing, progress after each kill.
//!
//! The test runs its own cluster (the `etcd` binary of `etcd-server`, as `cargo xtask stack up`
//! does) on free loopback ports, since it must kill members. Without it it fails when
//! `LOCK_TEST_REQUIRE_SERVERS=1` or `CI` is set, and otherwise skips loudly. The scenario is in
//! `cluster_support::failover`.
#![cfg(feature = "etcd")]

mod cluster_support;

use std::process::Command;
use std::time::Duration;

use cluster_support::{data_dir, failover, free_port, on_path, require, tcp_request, Member};
use etcd_client as etcd;
use lock_core::{EtcdBackend, LockClient};

struct Cluster {
    members: Vec<Member>,
    /// Every member's data, removed after a passing run (etcd preallocates ~120 MB each).
    dir: std::path::PathBuf,
}

impl Cluster {
    /// Three members with short heartbeats and election timeouts, so a leader loss is noticed
    /// in about a second.
    fn start() -> Self {
        let dir = data_dir("etcd-cluster");
        let ports: Vec<[u16; 2]> = (0..3).map(|_| [free_port(), free_port()]).collect();
        let initial: String = ports
            .iter()
            .enumerate()
            .map(|(i, [_, peer])| format!("etcd{}=http://127.0.0.1:{peer}", i + 1))
            .collect::<Vec<_>>()
            .join(",");
        let members = ports
            .iter()
            .enumerate()
            .map(|(i, &[client, peer])| {
                let name = format!("etcd{}", i + 1);
                let home = dir.join(&name);
                std::fs::create_dir_all(&home).unwrap();
                let (initial, data) = (initial.clone(), home.join("data"));
                let command_name = name.clone();
                Member::new(name, client, home.join("log"), move || {
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
                })
            })
            .collect::<Vec<_>>();
        let mut cluster = Self { members, dir };
        for member in &mut cluster.members {
            member.start();
        }
        cluster
    }

    /// Member `i`'s maintenance status: `(its member id, the leader's member id)`.
    async fn status(&self, i: usize) -> Option<(u64, u64)> {
        if !self.members[i].is_running() {
            return None;
        }
        let url = format!("http://127.0.0.1:{}", self.members[i].client_port);
        let options = etcd::ConnectOptions::new()
            .with_connect_timeout(Duration::from_millis(500))
            .with_timeout(Duration::from_millis(800));
        let mut client = etcd::Client::connect([url], Some(options)).await.ok()?;
        let status = client.status().await.ok()?;
        Some((status.header()?.member_id(), status.leader()))
    }
}

impl cluster_support::Cluster for Cluster {
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
        tokio::task::block_in_place(|| tcp_request(port, request.as_bytes()))
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

    /// etcd can hand leadership over: ask the leader to move it to another running member.
    async fn ensure_leader_is_not(&self, i: usize) {
        let Some((leader_id, _)) = self.status(i).await else {
            return;
        };
        for j in (0..self.members.len()).filter(|&j| j != i) {
            if let Some((target, _)) = self.status(j).await {
                let url = format!("http://127.0.0.1:{}", self.members[i].client_port);
                let mut client = etcd::Client::connect([url], None).await.unwrap();
                client
                    .move_leader(target)
                    .await
                    .unwrap_or_else(|e| panic!("moving leadership off {leader_id:x}: {e}"));
                return;
            }
        }
    }

    fn address(port: u16) -> String {
        format!("http://127.0.0.1:{port}")
    }

    fn data_dir(&self) -> &std::path::Path {
        &self.dir
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_cluster_survives_follower_and_leader_loss() {
    if require("etcd (`etcd-server`)", on_path("etcd")).is_none() {
        return;
    }
    let cluster = Cluster::start();
    let key = format!("cluster:{}", std::process::id());
    failover(cluster, &key, |url| async move {
        let backend = EtcdBackend::builder(&url)
            .connect_timeout(Duration::from_secs(2))
            .response_timeout(Duration::from_secs(2))
            .connect()
            .await
            .unwrap();
        LockClient::builder(backend)
            .namespace("failover")
            .build()
            .unwrap()
    })
    .await;
}
