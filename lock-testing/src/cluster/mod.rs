//! Multi-member clusters on loopback, for tests and tools that kill members: a 3-member etcd
//! cluster ([`EtcdCluster`], feature `etcd`) and a 3-member ZooKeeper ensemble
//! ([`ZooKeeperEnsemble`], feature `zookeeper`), behind one [`Cluster`] trait.
//!
//! Each member is a child process ([`Member`]) on free loopback ports, killed when dropped. The
//! cluster keeps its data in a directory of the caller's choosing ([`data_dir`] makes a fresh
//! one); removing it afterwards is the caller's job (etcd preallocates ~120 MB per member).
//!
//! ```no_run
//! # #[cfg(feature = "etcd")]
//! # async fn demo() -> Result<(), String> {
//! use std::time::Duration;
//! use lock_testing::cluster::{data_dir, try_wait_for_quorum, Cluster, EtcdCluster};
//!
//! let dir = data_dir(&std::env::temp_dir(), "etcd-demo")?;
//! let mut cluster = EtcdCluster::start(dir.clone())?;
//! let leader = try_wait_for_quorum(&mut cluster, Duration::from_secs(25)).await?;
//! let url = cluster.url(&[0, 1, 2]); // every member, for a client
//! cluster.members()[leader].kill(); // the fault
//! drop(cluster);
//! std::fs::remove_dir_all(dir).ok();
//! # let _ = url;
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::time::Instant;

#[cfg(feature = "etcd")]
mod etcd;
#[cfg(feature = "zookeeper")]
mod zookeeper;

#[cfg(feature = "etcd")]
pub use etcd::EtcdCluster;
#[cfg(feature = "zookeeper")]
pub use zookeeper::{ZooKeeperEnsemble, ZOOKEEPER_JAR};

/// Whether `program` is on `PATH`.
///
/// ```
/// assert!(!lock_testing::cluster::on_path("no-such-program-here"));
/// ```
#[must_use]
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// A fresh, empty directory `base/name` (whatever was there before is removed).
///
/// ```
/// let dir = lock_testing::cluster::data_dir(&std::env::temp_dir(), "cluster-doc").unwrap();
/// assert!(dir.is_dir() && std::fs::read_dir(&dir).unwrap().next().is_none());
/// std::fs::remove_dir_all(dir).unwrap();
/// ```
pub fn data_dir(base: &Path, name: &str) -> Result<PathBuf, String> {
    let dir = base.join(name);
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// The command that starts a member (called again on every restart).
type MemberCommand = Box<dyn Fn() -> Command + Send + Sync>;

/// One member's process, with its client port and log file; killed when dropped.
pub struct Member {
    /// Its name (`etcd1`, `zk2`, ...), for messages.
    pub name: String,
    /// The port clients reach it on (loopback).
    pub client_port: u16,
    /// Where its stdout and stderr go (appended to across restarts).
    pub log: PathBuf,
    command: MemberCommand,
    child: Option<Child>,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("name", &self.name)
            .field("client_port", &self.client_port)
            .field("running", &self.is_running())
            .finish_non_exhaustive()
    }
}

impl Member {
    /// A member (not started) run by `command`, logging to `log`.
    pub fn new(
        name: impl Into<String>,
        client_port: u16,
        log: PathBuf,
        command: impl Fn() -> Command + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            client_port,
            log,
            command: Box::new(command),
            child: None,
        }
    }

    /// Starts the process (it must not run already); does not wait for it to serve.
    pub fn start(&mut self) -> Result<(), String> {
        if self.child.is_some() {
            return Err(format!("{} already runs", self.name));
        }
        let error = |e: std::io::Error| format!("cannot start {}: {e}", self.name);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(error)?;
        let child = (self.command)()
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(error)?)
            .stderr(log)
            .spawn()
            .map_err(error)?;
        self.child = Some(child);
        Ok(())
    }

    /// Kills the process (SIGKILL: a crash, no goodbye) and waits for it; nothing if it does
    /// not run.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().ok();
            child.wait().ok();
        }
    }

    /// Whether it was started and not killed since.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// The last lines of its log, for failure messages.
    #[must_use]
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sends `request` to a loopback port and reads the reply to EOF (connect within 300 ms, read
/// within 500 ms); `None` when any of it fails. Blocking: from async code, call it in
/// `tokio::task::spawn_blocking`.
pub fn tcp_request(port: u16, request: &[u8]) -> Option<String> {
    use std::io::{Read, Write};
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(300)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .ok()?;
    stream.write_all(request).ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    Some(reply)
}

/// [`tcp_request`] off the async runtime's threads.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
async fn tcp_request_async(port: u16, request: Vec<u8>) -> Option<String> {
    tokio::task::spawn_blocking(move || tcp_request(port, &request))
        .await
        .ok()
        .flatten()
}

/// A cluster of members that a test may kill and restart, as a failover scenario needs it.
pub trait Cluster: Send + Sync {
    /// The members, in a fixed order.
    fn members(&mut self) -> &mut [Member];
    /// Whether member `i` is up and part of a quorum that serves requests.
    fn serving(&self, i: usize) -> impl Future<Output = bool> + Send;
    /// The index of the current leader, as far as a running member knows.
    fn leader(&self) -> impl Future<Output = Option<usize>> + Send;
    /// Moves leadership off member `i` if it leads (engines that cannot do nothing).
    fn ensure_leader_is_not(&self, i: usize) -> impl Future<Output = ()> + Send;
    /// How a client addresses a member listening on `port` (`host:port` or a URL).
    fn address(port: u16) -> String;
    /// A connect string / URL list for the given members, comma-separated.
    fn url(&mut self, members: &[usize]) -> String {
        let all = self.members();
        members
            .iter()
            .map(|&i| Self::address(all[i].client_port))
            .collect::<Vec<_>>()
            .join(",")
    }
    /// Where the members keep their data.
    fn data_dir(&self) -> &Path;
}

/// Waits (up to `limit`) until every running member serves and one of them leads; returns the
/// leader's index, or an error with the tail of every member's log.
pub async fn try_wait_for_quorum<C: Cluster>(
    cluster: &mut C,
    limit: Duration,
) -> Result<usize, String> {
    let started = Instant::now();
    loop {
        let running: Vec<usize> = (0..cluster.members().len())
            .filter(|&i| cluster.members()[i].is_running())
            .collect();
        let mut all = true;
        for &i in &running {
            all &= cluster.serving(i).await;
        }
        if all {
            if let Some(leader) = cluster.leader().await {
                if cluster.members()[leader].is_running() {
                    return Ok(leader);
                }
            }
        }
        if started.elapsed() > limit {
            let logs: Vec<String> = cluster
                .members()
                .iter()
                .map(|m| format!("--- {} ---\n{}", m.name, m.log_tail()))
                .collect();
            return Err(format!(
                "no quorum with a leader within {limit:?}\n{}",
                logs.join("\n")
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// [`try_wait_for_quorum`], panicking when there is no quorum by `limit` (for tests).
///
/// # Panics
/// When no quorum with a leader forms within `limit`.
pub async fn wait_for_quorum<C: Cluster>(cluster: &mut C, limit: Duration) -> usize {
    match try_wait_for_quorum(cluster, limit).await {
        Ok(leader) => leader,
        Err(e) => panic!("{e}"),
    }
}
