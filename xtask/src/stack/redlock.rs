//! RedLock's nodes: five independent `redis-server`s (`redlock-1..5` on 127.0.0.1:26391..26395),
//! no persistence, no replication between them, for `--backend redlock`. All share one URL
//! variable, `LOCK_TEST_REDLOCK_URLS`, holding every running node (comma-separated), as a
//! cluster's members do. Brought up by naming the backend (`stress --backend redlock`) or
//! with `stack up --redlock`.

use std::path::Path;

use super::redis::{launch_throwaway, Redis};
use super::{Server, StateDir};
use crate::{cmd, Result};

/// One RedLock node (0-based).
pub(crate) struct RedlockNode(usize);

/// The nodes, in start order.
pub(crate) const REDLOCK_NODES: &[&dyn Server] = &[
    &RedlockNode(0),
    &RedlockNode(1),
    &RedlockNode(2),
    &RedlockNode(3),
    &RedlockNode(4),
];

/// The backend name that stands for every node.
pub(crate) const BACKEND: &str = "redlock";

impl Server for RedlockNode {
    fn name(&self) -> &'static str {
        [
            "redlock-1",
            "redlock-2",
            "redlock-3",
            "redlock-4",
            "redlock-5",
        ][self.0]
    }

    fn binary(&self) -> &'static str {
        Redis.binary()
    }

    fn apt_package(&self) -> &'static str {
        Redis.apt_package()
    }

    fn default_port(&self) -> u16 {
        26391 + u16::try_from(self.0).unwrap_or(0)
    }

    fn port_env(&self) -> &'static str {
        [
            "LOCK_STACK_REDLOCK_1_PORT",
            "LOCK_STACK_REDLOCK_2_PORT",
            "LOCK_STACK_REDLOCK_3_PORT",
            "LOCK_STACK_REDLOCK_4_PORT",
            "LOCK_STACK_REDLOCK_5_PORT",
        ][self.0]
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_REDLOCK_URLS"
    }

    fn url(&self, port: u16) -> String {
        Redis.url(port)
    }

    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let port = port.to_string();
        let mut redis = cmd::command(program, ["--bind", "127.0.0.1", "--port", &port]);
        launch_throwaway(&mut redis, state)
    }

    fn ping(&self, port: u16) -> bool {
        Redis.ping(port)
    }
}
