//! A Redis Cluster on loopback: six `redis-server`s in cluster mode (`redis-cluster-1..6` on
//! 127.0.0.1:26401..26406, cluster bus on the port + 10000), three primaries with one replica
//! each, node timeout 1 s, no persistence. Brought up with `stack up --redis-cluster` or by
//! naming the backend (`--backend redis-cluster`). All nodes share one URL variable,
//! `LOCK_TEST_REDIS_CLUSTER_URLS`, holding every running node (comma-separated); the port of
//! node `n` is overridden with `LOCK_STACK_REDIS_CLUSTER_<n>_PORT`.
//!
//! Each node keeps its cluster state in `nodes.conf` in its state dir, which `down` leaves in
//! place: a node stopped with `stack down --with redis-cluster-2` and started again rejoins the
//! cluster it knew (as a replica, if its replica was promoted meanwhile). Once all six nodes
//! run, `up` forms the cluster when it is not formed yet (`redis-cli --cluster create ...
//! --cluster-replicas 1`, on nodes that know nobody), then waits until every node reports
//! `cluster_state:ok` with all 16384 slots assigned and 6 known nodes. Nodes whose states
//! disagree (some fresh, some knowing a cluster; e.g. after a state dir was deleted) are reset
//! (`FLUSHALL`, `CLUSTER RESET HARD`) and formed anew.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use super::redis::{launch_throwaway, Redis};
use super::resp::{self, Reply};
use super::{Server, StateDir, POLL_INTERVAL};
use crate::{cmd, Error, Result};

/// One node (0-based) of the cluster.
pub(crate) struct ClusterNode(usize);

/// The nodes, in start order.
pub(crate) const REDIS_CLUSTER: &[&dyn Server] = &[
    &ClusterNode(0),
    &ClusterNode(1),
    &ClusterNode(2),
    &ClusterNode(3),
    &ClusterNode(4),
    &ClusterNode(5),
];

/// The backend name that stands for every node.
pub(crate) const BACKEND: &str = "redis-cluster";

/// The client that forms the cluster (`redis-cli --cluster create`).
pub(crate) const REDIS_CLI: &str = "redis-cli";

/// Debian package providing [`REDIS_CLI`].
pub(crate) const REDIS_CLI_PACKAGE: &str = "redis-tools";

/// Every hash slot of a Redis Cluster.
const SLOTS: u64 = 16384;

/// How long a formed (or re-formed) cluster may take until every node serves every slot.
const FORM_TIMEOUT: Duration = Duration::from_secs(20);

impl Server for ClusterNode {
    fn name(&self) -> &'static str {
        [
            "redis-cluster-1",
            "redis-cluster-2",
            "redis-cluster-3",
            "redis-cluster-4",
            "redis-cluster-5",
            "redis-cluster-6",
        ][self.0]
    }

    fn binary(&self) -> &'static str {
        Redis.binary()
    }

    fn apt_package(&self) -> &'static str {
        Redis.apt_package()
    }

    fn default_port(&self) -> u16 {
        26401 + u16::try_from(self.0).unwrap_or(0)
    }

    fn port_env(&self) -> &'static str {
        [
            "LOCK_STACK_REDIS_CLUSTER_1_PORT",
            "LOCK_STACK_REDIS_CLUSTER_2_PORT",
            "LOCK_STACK_REDIS_CLUSTER_3_PORT",
            "LOCK_STACK_REDIS_CLUSTER_4_PORT",
            "LOCK_STACK_REDIS_CLUSTER_5_PORT",
            "LOCK_STACK_REDIS_CLUSTER_6_PORT",
        ][self.0]
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_REDIS_CLUSTER_URLS"
    }

    fn url(&self, port: u16) -> String {
        Redis.url(port)
    }

    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let port = port.to_string();
        let mut redis = cmd::command(program, ["--bind", "127.0.0.1", "--port", &port]);
        // `nodes.conf` is relative to `--dir`, i.e. in the state dir, where it survives `down`.
        redis.args([
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            "1000",
        ]);
        // Failover tests may pause a node with `DEBUG SLEEP` (refused by default since Redis 7).
        redis.args(["--enable-debug-command", "local"]);
        launch_throwaway(&mut redis, state)
    }

    fn ping(&self, port: u16) -> bool {
        Redis.ping(port)
    }
}

/// What a node's `CLUSTER INFO` says.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ClusterInfo {
    /// `cluster_state:ok`.
    ok: bool,
    /// `cluster_slots_assigned`.
    slots_assigned: u64,
    /// `cluster_known_nodes` (itself included).
    known_nodes: u64,
}

impl ClusterInfo {
    /// Parses the text of a `CLUSTER INFO` reply.
    fn parse(text: &str) -> Self {
        Self {
            ok: resp::field(text, "cluster_state") == Some("ok"),
            slots_assigned: resp::number(text, "cluster_slots_assigned").unwrap_or(0),
            known_nodes: resp::number(text, "cluster_known_nodes").unwrap_or(0),
        }
    }

    /// Asks the node on `port`; `None` if it does not answer with a `CLUSTER INFO` text.
    fn of(port: u16) -> Option<Self> {
        let reply = resp::query(port, &["CLUSTER", "INFO"])?;
        reply.text().map(Self::parse)
    }

    /// Part of a formed cluster of all our nodes.
    fn formed(&self) -> bool {
        self.ok && self.known_nodes == REDIS_CLUSTER.len() as u64
    }

    /// Formed and serving every slot: what `up` waits for.
    fn serving(&self) -> bool {
        self.formed() && self.slots_assigned == SLOTS
    }

    /// Knows no other node and owns no slot: may join a `--cluster create`.
    fn fresh(&self) -> bool {
        self.known_nodes <= 1 && self.slots_assigned == 0
    }
}

/// What to do with nodes in the states `infos`, before waiting for them to serve.
#[derive(Debug, PartialEq, Eq)]
enum Plan {
    /// Formed already (or every node remembers the whole cluster from its `nodes.conf` and
    /// only has to find the others again): just wait.
    Wait,
    /// Every node is fresh: form the cluster.
    Create,
    /// The nodes disagree: reset every one, then form the cluster.
    ResetAndCreate,
}

/// The plan for nodes in the states `infos`.
fn plan(infos: &[ClusterInfo]) -> Plan {
    let all = REDIS_CLUSTER.len() as u64;
    if infos.iter().all(ClusterInfo::formed) || infos.iter().all(|i| i.known_nodes == all) {
        Plan::Wait
    } else if infos.iter().all(ClusterInfo::fresh) {
        Plan::Create
    } else {
        Plan::ResetAndCreate
    }
}

/// After `up` of any node: with all six running, forms the cluster if needed and waits until
/// every node serves every slot; with fewer, says so and leaves the cluster alone.
pub(super) fn settle() -> Result<()> {
    let ports = super::running_ports(REDIS_CLUSTER)?;
    if ports.len() < REDIS_CLUSTER.len() {
        println!(
            "{BACKEND}: {} of {} nodes running; the cluster is formed and checked only when \
             all run (`cargo xtask stack up --redis-cluster`)",
            ports.len(),
            REDIS_CLUSTER.len()
        );
        return Ok(());
    }
    let infos = ports
        .iter()
        .map(|&port| {
            ClusterInfo::of(port).ok_or_else(|| {
                Error::failed(format!(
                    "{BACKEND}: the node on port {port} does not answer CLUSTER INFO"
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if infos.iter().all(ClusterInfo::serving) {
        println!("{BACKEND}: formed; every node serves all {SLOTS} slots");
        return Ok(());
    }
    let began = Instant::now();
    match plan(&infos) {
        Plan::Wait => println!("{BACKEND}: nodes know the cluster; waiting for it to serve"),
        Plan::Create => create(&ports)?,
        Plan::ResetAndCreate => {
            println!(
                "{BACKEND}: the nodes' cluster states disagree (some fresh, some not); \
                 resetting every node and forming the cluster anew"
            );
            for &port in &ports {
                reset(port)?;
            }
            create(&ports)?;
        }
    }
    wait_serving(&ports)?;
    println!(
        "{BACKEND}: every node serves all {SLOTS} slots ({:.1}s)",
        began.elapsed().as_secs_f64()
    );
    Ok(())
}

/// For `stack status`, when any node runs: what the first running node's `CLUSTER INFO` says.
pub(super) fn status_line() -> Result<Option<String>> {
    let ports = super::running_ports(REDIS_CLUSTER)?;
    let Some(&port) = ports.first() else {
        return Ok(None);
    };
    let line = match ClusterInfo::of(port) {
        Some(info) => format!(
            "{BACKEND}: {} of {} nodes running; node {port} reports cluster_state:{}, {} slots \
             assigned, {} known nodes",
            ports.len(),
            REDIS_CLUSTER.len(),
            if info.ok { "ok" } else { "fail" },
            info.slots_assigned,
            info.known_nodes
        ),
        None => format!("{BACKEND}: node {port} does not answer CLUSTER INFO"),
    };
    Ok(Some(line))
}

/// `redis-cli --cluster create` on `ports`: three primaries, one replica each.
fn create(ports: &[u16]) -> Result<()> {
    let program = cmd::which(REDIS_CLI).ok_or_else(|| {
        Error::failed(format!(
            "`{REDIS_CLI}` is not on PATH (package {REDIS_CLI_PACKAGE})"
        ))
    })?;
    let mut create = cmd::command(program, ["--cluster", "create"]);
    create.args(ports.iter().map(|port| format!("127.0.0.1:{port}")));
    create.args(["--cluster-replicas", "1", "--cluster-yes"]);
    cmd::run(&mut create)
}

/// Empties the node on `port` and makes it forget its cluster (new node id, no slots).
fn reset(port: u16) -> Result<()> {
    // A primary holding keys refuses the reset; a replica refuses FLUSHALL (read-only), and
    // empties itself on the reset. So the flush's answer does not matter, the reset's does.
    let _ = resp::query(port, &["FLUSHALL"]);
    match resp::query(port, &["CLUSTER", "RESET", "HARD"]) {
        Some(Reply::Status(_)) => Ok(()),
        other => Err(Error::failed(format!(
            "{BACKEND}: CLUSTER RESET HARD on port {port} failed: {other:?}"
        ))),
    }
}

/// Polls until every node on `ports` serves every slot, for at most [`FORM_TIMEOUT`].
fn wait_serving(ports: &[u16]) -> Result<()> {
    let deadline = Instant::now() + FORM_TIMEOUT;
    loop {
        let lagging: Vec<u16> = ports
            .iter()
            .copied()
            .filter(|&port| !ClusterInfo::of(port).is_some_and(|info| info.serving()))
            .collect();
        if lagging.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::failed(format!(
                "{BACKEND}: the nodes on ports {lagging:?} do not report cluster_state:ok with \
                 {SLOTS} slots and {} nodes after {}s. To start from scratch: \
                 `cargo xtask stack down --redis-cluster && rm -r target/stack/redis-cluster-*`",
                REDIS_CLUSTER.len(),
                FORM_TIMEOUT.as_secs()
            )));
        }
        thread::sleep(POLL_INTERVAL);
    }
}

#[cfg(test)]
mod tests {
    use super::{plan, ClusterInfo, Plan};

    const FORMED: &str = "cluster_state:ok\r\ncluster_slots_assigned:16384\r\n\
                          cluster_slots_ok:16384\r\ncluster_known_nodes:6\r\ncluster_size:3\r\n";
    const FRESH: &str = "cluster_state:fail\r\ncluster_slots_assigned:0\r\n\
                         cluster_known_nodes:1\r\ncluster_size:0\r\n";
    const REJOINING: &str = "cluster_state:fail\r\ncluster_slots_assigned:16384\r\n\
                             cluster_known_nodes:6\r\n";

    #[test]
    fn parses_cluster_info() {
        let info = ClusterInfo::parse(FORMED);
        assert_eq!(
            info,
            ClusterInfo {
                ok: true,
                slots_assigned: 16384,
                known_nodes: 6
            }
        );
        assert!(info.formed() && info.serving() && !info.fresh());
        let info = ClusterInfo::parse(FRESH);
        assert!(!info.formed() && !info.serving() && info.fresh());
        assert_eq!(ClusterInfo::parse(""), ClusterInfo::default());
    }

    #[test]
    fn plans_by_the_nodes_states() {
        let nodes = |texts: &[&str]| -> Vec<ClusterInfo> {
            texts.iter().map(|text| ClusterInfo::parse(text)).collect()
        };
        assert_eq!(plan(&nodes(&[FORMED; 6])), Plan::Wait);
        assert_eq!(plan(&nodes(&[REJOINING; 6])), Plan::Wait);
        assert_eq!(
            plan(&nodes(&[FORMED, REJOINING, FORMED, FORMED, FORMED, FORMED])),
            Plan::Wait
        );
        assert_eq!(plan(&nodes(&[FRESH; 6])), Plan::Create);
        assert_eq!(
            plan(&nodes(&[FORMED, FRESH, FORMED, FORMED, FORMED, FORMED])),
            Plan::ResetAndCreate
        );
    }
}
