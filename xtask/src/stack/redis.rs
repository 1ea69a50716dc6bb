//! Redis: `redis-server` on 127.0.0.1:26379 (not 6379, so a system redis
//! can keep running), no persistence, daemonized by redis itself.

use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;

use super::{connect, Server, StateDir};
use crate::cmd;
use crate::Result;

/// The stack's redis.
pub(crate) struct Redis;

/// Launches `redis` (a `redis-server` command with its listening arguments) as a throwaway,
/// daemonized instance working in `state`'s directory: shared by the plain and the TLS redis.
pub(super) fn launch_throwaway(redis: &mut Command, state: &StateDir) -> Result<()> {
    // Throwaway instance: no RDB snapshots (`--save ""`) and no AOF, so
    // tests never pay for fsyncs and never see data from a previous run.
    redis.args(["--save", "", "--appendonly", "no"]);
    // `--daemonize yes` makes redis fork, detach (setsid) and point its
    // stdio at /dev/null, so it outlives xtask and does not hold our
    // stdout pipe open; the launch command returns right after forking.
    redis
        .arg("--dir")
        .arg(&state.dir)
        .args(["--daemonize", "yes"])
        .arg("--pidfile")
        .arg(&state.pidfile)
        .arg("--logfile")
        .arg(&state.logfile);
    // A non-zero exit here means redis rejected its arguments before
    // forking (it prints why on our stderr).
    cmd::run(redis)
}

/// Default port: the well-known 6379 shifted by 20000, so it is easy to
/// recognize and does not collide with a system redis.
const DEFAULT_PORT: u16 = 26379;

impl Server for Redis {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn binary(&self) -> &'static str {
        "redis-server"
    }

    fn apt_package(&self) -> &'static str {
        "redis-server"
    }

    fn default_port(&self) -> u16 {
        DEFAULT_PORT
    }

    fn port_env(&self) -> &'static str {
        "LOCK_STACK_REDIS_PORT"
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_REDIS_URL"
    }

    fn url(&self, port: u16) -> String {
        format!("redis://127.0.0.1:{port}/")
    }

    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let port = port.to_string();
        let mut redis = cmd::command(program, ["--bind", "127.0.0.1", "--port", &port]);
        launch_throwaway(&mut redis, state)
    }

    fn ping(&self, port: u16) -> bool {
        let Some(mut stream) = connect(port) else {
            return false;
        };
        // Inline command syntax; a ready server replies `+PONG\r\n`. While
        // loading it replies `-LOADING ...`, which correctly counts as "no".
        if stream.write_all(b"PING\r\n").is_err() {
            return false;
        }
        let mut reply = [0_u8; 7];
        stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG\r\n"
    }
}
