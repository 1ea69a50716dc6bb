//! Three-member clusters on loopback, for failover experiments: `stack up --zk-ensemble`
//! (ZooKeeper members `zookeeper-1..3`, client ports 22281, 22291, 22301; quorum and election
//! ports are the client port + 1 and + 2) and `stack up --etcd-cluster` (etcd members
//! `etcd-1..3`, client ports 22479, 22489, 22499; peer port = client port + 1).
//!
//! Each member is a [`Server`] of its own (own state dir, pidfile, log, port variable
//! `LOCK_STACK_ZOOKEEPER_<n>_PORT` / `LOCK_STACK_ETCD_<n>_PORT`), so `up`, `down`, `status`
//! and `--with zookeeper-2` (to stop one member) work as for single servers. All members of a
//! cluster share one URL variable, `LOCK_TEST_ZOOKEEPER_ENSEMBLE_URL` /
//! `LOCK_TEST_ETCD_CLUSTER_URL`, holding every running member (comma-separated).
//!
//! Members start one after the other and a lone member has no quorum, so readiness is
//! "the process answers" (ZooKeeper's `ruok`, which does not need a quorum; an etcd
//! member's client port accepting connections) for the first member, and "serves with a
//! leader" (`srvr` mode leader/follower, etcd `/health`) from the second on, when a quorum
//! (2 of 3) exists.

use std::path::{Path, PathBuf};

use super::{ask, configured_port, connect, etcd, spawn_detached, zookeeper, Server, StateDir};
use crate::{Error, Result};

/// Port distance between members.
const STRIDE: u16 = 10;

/// One member (0-based) of the stack's ZooKeeper ensemble.
pub(crate) struct ZkMember(usize);

/// One member (0-based) of the stack's etcd cluster.
pub(crate) struct EtcdMember(usize);

/// The ensemble's members, in start order.
pub(crate) const ZK_ENSEMBLE: &[&dyn Server] = &[&ZkMember(0), &ZkMember(1), &ZkMember(2)];

/// The cluster's members, in start order.
pub(crate) const ETCD_CLUSTER: &[&dyn Server] = &[&EtcdMember(0), &EtcdMember(1), &EtcdMember(2)];

/// The client ports of `members` as configured now (env overrides or defaults).
fn ports(members: &[&dyn Server]) -> Result<Vec<u16>> {
    members.iter().map(|&m| configured_port(m)).collect()
}

/// `member`'s offset from the first member's default port.
fn offset(member: usize) -> u16 {
    STRIDE * u16::try_from(member).unwrap_or(0)
}

impl Server for ZkMember {
    fn name(&self) -> &'static str {
        ["zookeeper-1", "zookeeper-2", "zookeeper-3"][self.0]
    }

    fn binary(&self) -> &'static str {
        "java"
    }

    fn apt_package(&self) -> &'static str {
        "zookeeperd"
    }

    fn default_port(&self) -> u16 {
        22281 + offset(self.0)
    }

    fn port_env(&self) -> &'static str {
        [
            "LOCK_STACK_ZOOKEEPER_1_PORT",
            "LOCK_STACK_ZOOKEEPER_2_PORT",
            "LOCK_STACK_ZOOKEEPER_3_PORT",
        ][self.0]
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_ZOOKEEPER_ENSEMBLE_URL"
    }

    fn url(&self, port: u16) -> String {
        format!("127.0.0.1:{port}")
    }

    fn locate(&self) -> Option<PathBuf> {
        zookeeper::ZooKeeper.locate()
    }

    fn process_name(&self) -> &'static str {
        "java"
    }

    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let data = state.dir.join("data");
        let write = |path: &Path, text: String| {
            std::fs::write(path, text)
                .map_err(|err| Error::failed(format!("cannot write {}: {err}", path.display())))
        };
        std::fs::create_dir_all(&data)
            .map_err(|err| Error::failed(format!("cannot create {}: {err}", data.display())))?;
        write(&data.join("myid"), format!("{}\n", self.0 + 1))?;
        let mut config = zookeeper::zoo_cfg(&data, port);
        for (i, peer) in ports(ZK_ENSEMBLE)?.into_iter().enumerate() {
            config.push_str(&format!(
                "server.{}=127.0.0.1:{}:{}\n",
                i + 1,
                peer.saturating_add(1),
                peer.saturating_add(2)
            ));
        }
        let path = state.dir.join("zoo.cfg");
        write(&path, config)?;
        spawn_detached(zookeeper::java(program, &path), state)
    }

    fn ping(&self, port: u16) -> bool {
        if self.0 == 0 {
            return zookeeper::answers_ruok(port);
        }
        ask(port, b"srvr")
            .is_some_and(|reply| reply.contains("Mode: leader") || reply.contains("Mode: follower"))
    }
}

impl Server for EtcdMember {
    fn name(&self) -> &'static str {
        ["etcd-1", "etcd-2", "etcd-3"][self.0]
    }

    fn binary(&self) -> &'static str {
        "etcd"
    }

    fn apt_package(&self) -> &'static str {
        "etcd-server"
    }

    fn default_port(&self) -> u16 {
        22479 + offset(self.0)
    }

    fn port_env(&self) -> &'static str {
        [
            "LOCK_STACK_ETCD_1_PORT",
            "LOCK_STACK_ETCD_2_PORT",
            "LOCK_STACK_ETCD_3_PORT",
        ][self.0]
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_ETCD_CLUSTER_URL"
    }

    fn url(&self, port: u16) -> String {
        format!("http://127.0.0.1:{port}")
    }

    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let initial = ports(ETCD_CLUSTER)?
            .into_iter()
            .enumerate()
            .map(|(i, peer)| format!("etcd-{}=http://127.0.0.1:{}", i + 1, peer.saturating_add(1)))
            .collect::<Vec<_>>()
            .join(",");
        let mut command = etcd::command(program, self.name(), &state.dir, port, &initial);
        command.args(["--initial-cluster-token", "lock-stack-cluster"]);
        spawn_detached(command, state)
    }

    fn ping(&self, port: u16) -> bool {
        if self.0 == 0 {
            return connect(port).is_some();
        }
        etcd::healthy(port)
    }
}

/// Every member of every cluster (RedLock's nodes, the Redis Cluster's nodes and the Sentinel
/// sets' processes too), for `status`, `by_name` and the env file.
pub(crate) fn members() -> impl Iterator<Item = &'static dyn Server> {
    ZK_ENSEMBLE
        .iter()
        .chain(ETCD_CLUSTER)
        .chain(super::redlock::REDLOCK_NODES)
        .chain(super::redis_cluster::REDIS_CLUSTER)
        .chain(super::redis_sentinel::SENTINEL_SET)
        .chain(super::redis_secure::SECURE_SET)
        .copied()
}
