//! A 3-member ZooKeeper ensemble on loopback losing a follower, then its leader, under a
//! contended lock workload: no overlaps, fencing tokens increasing, progress after each kill.
//!
//! The test runs its own ensemble (`java` with the jar `zookeeperd` installs, as
//! `cargo xtask stack up` does) on free loopback ports, since it must kill members. Without
//! them it fails when `LOCK_TEST_REQUIRE_SERVERS=1` or `CI` is set, and otherwise skips loudly.
//! The scenario is in `cluster_support::failover`.
#![cfg(feature = "zookeeper")]

mod cluster_support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use cluster_support::{data_dir, failover, free_port, on_path, require, tcp_request, Member};
use lock_core::{LockClient, ZooKeeperBackend};

const JAR: &str = "/usr/share/java/zookeeper.jar";
const SLF4J_SIMPLE: &str = "/usr/share/java/slf4j-simple.jar";

struct Ensemble {
    members: Vec<Member>,
    /// Every member's data, removed after a passing run (etcd preallocates ~120 MB each).
    dir: std::path::PathBuf,
}

impl Ensemble {
    /// Three members, each with a client, a quorum and an election port; `tickTime=500` so
    /// elections and session timeouts (2–20 ticks) are short.
    fn start() -> Self {
        let dir = data_dir("zk-ensemble");
        let ports: Vec<[u16; 3]> = (0..3)
            .map(|_| [free_port(), free_port(), free_port()])
            .collect();
        let servers: String = ports
            .iter()
            .enumerate()
            .map(|(i, [_, quorum, election])| {
                format!("server.{}=127.0.0.1:{quorum}:{election}\n", i + 1)
            })
            .collect();
        let mut classpath = JAR.to_owned();
        if Path::new(SLF4J_SIMPLE).exists() {
            classpath.push(':');
            classpath.push_str(SLF4J_SIMPLE);
        }
        let members = ports
            .iter()
            .enumerate()
            .map(|(i, [client, _, _])| {
                let id = i + 1;
                let home = dir.join(format!("zk{id}"));
                let data = home.join("data");
                std::fs::create_dir_all(&data).unwrap();
                std::fs::write(data.join("myid"), format!("{id}\n")).unwrap();
                let config = home.join("zoo.cfg");
                std::fs::write(
                    &config,
                    format!(
                        "tickTime=500\ninitLimit=10\nsyncLimit=4\ndataDir={}\nclientPort={client}\n\
                         clientPortAddress=127.0.0.1\nadmin.enableServer=false\n\
                         4lw.commands.whitelist=ruok,srvr\nmaxClientCnxns=0\n\
                         cnxTimeout=500\n{servers}",
                        data.display()
                    ),
                )
                .unwrap();
                let classpath = classpath.clone();
                Member::new(format!("zk{id}"), *client, home.join("log"), move || {
                    let mut java = Command::new("java");
                    java.args([
                        "-Xmx128m",
                        "-XX:+UseSerialGC",
                        "-XX:TieredStopAtLevel=1",
                        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                        "-Dzookeeper.admin.enableServer=false",
                        "-cp",
                        &classpath,
                        "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                    ]);
                    java.arg(&config);
                    java
                })
            })
            .collect::<Vec<_>>();
        let mut ensemble = Self { members, dir };
        for member in &mut ensemble.members {
            member.start();
        }
        ensemble
    }

    /// The `Mode:` line of member `i`'s `srvr` (`leader`, `follower`), if it serves.
    fn mode(&self, i: usize) -> Option<String> {
        if !self.members[i].is_running() {
            return None;
        }
        let reply = tcp_request(self.members[i].client_port, b"srvr")?;
        reply
            .lines()
            .find_map(|l| l.strip_prefix("Mode: "))
            .map(|m| m.trim().to_owned())
    }
}

impl cluster_support::Cluster for Ensemble {
    fn members(&mut self) -> &mut [Member] {
        &mut self.members
    }

    async fn serving(&self, i: usize) -> bool {
        matches!(
            tokio::task::block_in_place(|| self.mode(i)).as_deref(),
            Some("leader" | "follower")
        )
    }

    async fn leader(&self) -> Option<usize> {
        (0..self.members.len())
            .find(|&i| tokio::task::block_in_place(|| self.mode(i)).as_deref() == Some("leader"))
    }

    /// ZooKeeper has no leadership transfer. A follower that restarts rejoins as a follower,
    /// so the leader chosen at the start (never A) still leads: nothing to do.
    async fn ensure_leader_is_not(&self, _i: usize) {}

    fn address(port: u16) -> String {
        format!("127.0.0.1:{port}")
    }

    fn data_dir(&self) -> &std::path::Path {
        &self.dir
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_ensemble_survives_follower_and_leader_loss() {
    if require(
        &format!("ZooKeeper (`java` and {JAR})"),
        on_path("java") && Path::new(JAR).exists(),
    )
    .is_none()
    {
        return;
    }
    let ensemble = Ensemble::start();
    let key = format!("ensemble:{}", std::process::id());
    failover(ensemble, &key, |url| async move {
        let backend = ZooKeeperBackend::builder(url)
            .session_timeout(Duration::from_secs(4))
            .connect_timeout(Duration::from_secs(3))
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
