//! A 3-member ZooKeeper ensemble on loopback.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{tcp_request_async, Cluster, Member};
use crate::free_port;

/// The ZooKeeper jar the `zookeeperd` package installs.
pub const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";
/// SLF4J's simple logger, put on the class path when present (the members then log warnings
/// only).
const SLF4J_SIMPLE: &str = "/usr/share/java/slf4j-simple.jar";

/// Three ZooKeeper members (`java` with [`ZOOKEEPER_JAR`]) on free loopback ports, each with a
/// client, a quorum and an election port, and `tickTime=500`, so that elections are short and
/// session timeouts may be 1–10 s. Client addresses are `127.0.0.1:<port>`.
///
/// ```no_run
/// # async fn demo() -> Result<(), String> {
/// use std::time::Duration;
/// use lock_testing::cluster::{data_dir, try_wait_for_quorum, Cluster, ZooKeeperEnsemble};
///
/// let dir = data_dir(&std::env::temp_dir(), "zk-ensemble")?;
/// let mut ensemble = ZooKeeperEnsemble::start(dir)?;
/// let leader = try_wait_for_quorum(&mut ensemble, Duration::from_secs(25)).await?;
/// let connect_string = ensemble.url(&[0, 1, 2]);
/// # let _ = (leader, connect_string);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct ZooKeeperEnsemble {
    members: Vec<Member>,
    dir: PathBuf,
}

impl ZooKeeperEnsemble {
    /// Whether `java` is on `PATH` and [`ZOOKEEPER_JAR`] exists.
    #[must_use]
    pub fn installed() -> bool {
        super::on_path("java") && Path::new(ZOOKEEPER_JAR).exists()
    }

    /// Starts three members keeping their data, configuration and logs under `dir` (created if
    /// missing); does not wait for them to form a quorum (see
    /// [`super::try_wait_for_quorum`]).
    pub fn start(dir: PathBuf) -> Result<Self, String> {
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
        let mut classpath = ZOOKEEPER_JAR.to_owned();
        if Path::new(SLF4J_SIMPLE).exists() {
            classpath.push(':');
            classpath.push_str(SLF4J_SIMPLE);
        }
        let io = |path: &Path, e: std::io::Error| format!("{}: {e}", path.display());
        let mut members = Vec::new();
        for (i, [client, _, _]) in ports.iter().enumerate() {
            let id = i + 1;
            let home = dir.join(format!("zk{id}"));
            let data = home.join("data");
            std::fs::create_dir_all(&data).map_err(|e| io(&data, e))?;
            std::fs::write(data.join("myid"), format!("{id}\n")).map_err(|e| io(&data, e))?;
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
            .map_err(|e| io(&config, e))?;
            let classpath = classpath.clone();
            members.push(Member::new(
                format!("zk{id}"),
                *client,
                home.join("log"),
                move || {
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
                },
            ));
        }
        let mut ensemble = Self { members, dir };
        for member in &mut ensemble.members {
            member.start()?;
        }
        Ok(ensemble)
    }

    /// The `Mode:` line of member `i`'s `srvr` (`leader`, `follower`), if it serves.
    async fn mode(&self, i: usize) -> Option<String> {
        if !self.members[i].is_running() {
            return None;
        }
        let reply = tcp_request_async(self.members[i].client_port, b"srvr".to_vec()).await?;
        reply
            .lines()
            .find_map(|l| l.strip_prefix("Mode: "))
            .map(|m| m.trim().to_owned())
    }
}

impl Cluster for ZooKeeperEnsemble {
    fn members(&mut self) -> &mut [Member] {
        &mut self.members
    }

    async fn serving(&self, i: usize) -> bool {
        matches!(self.mode(i).await.as_deref(), Some("leader" | "follower"))
    }

    async fn leader(&self) -> Option<usize> {
        for i in 0..self.members.len() {
            if self.mode(i).await.as_deref() == Some("leader") {
                return Some(i);
            }
        }
        None
    }

    /// ZooKeeper has no leadership transfer: nothing to do. (A follower that restarts rejoins
    /// as a follower, so the leader usually stays where it was.)
    async fn ensure_leader_is_not(&self, _i: usize) {}

    fn address(port: u16) -> String {
        format!("127.0.0.1:{port}")
    }

    fn data_dir(&self) -> &Path {
        &self.dir
    }
}
