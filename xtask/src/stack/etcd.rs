//! etcd: a single-member `etcd` (Debian's `etcd-server`) serving clients on
//! 127.0.0.1:22379 and peers on 127.0.0.1:22380 (not 2379/2380), data under
//! `target/stack/etcd/`.

use std::io::{Read, Write};
use std::path::Path;

use super::{connect, spawn_detached, Server, StateDir};
use crate::cmd;
use crate::Result;

/// The stack's etcd.
pub(crate) struct Etcd;

/// Default client port: the well-known 2379 shifted by 20000; the peer port
/// is the next one.
const DEFAULT_PORT: u16 = 22379;

impl Server for Etcd {
    fn name(&self) -> &'static str {
        "etcd"
    }

    fn binary(&self) -> &'static str {
        "etcd"
    }

    fn apt_package(&self) -> &'static str {
        "etcd-server"
    }

    fn default_port(&self) -> u16 {
        DEFAULT_PORT
    }

    fn port_env(&self) -> &'static str {
        "LOCK_STACK_ETCD_PORT"
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_ETCD_URL"
    }

    fn url(&self, port: u16) -> String {
        format!("http://127.0.0.1:{port}")
    }

    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let client = format!("http://127.0.0.1:{port}");
        let peer = format!("http://127.0.0.1:{}", port.saturating_add(1));
        let mut etcd = cmd::command(program, ["--name", "lock-stack", "--data-dir"]);
        etcd.arg(state.dir.join("data"));
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
            &format!("lock-stack={peer}"),
            "--log-level",
            "warn",
        ]);
        spawn_detached(etcd, state)
    }

    fn ping(&self, port: u16) -> bool {
        let Some(mut stream) = connect(port) else {
            return false;
        };
        // `/health` is `{"health":"true"}` once the member has a leader
        // (itself) and serves reads.
        let request = format!("GET /health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
        if stream.write_all(request.as_bytes()).is_err() {
            return false;
        }
        let mut reply = String::new();
        stream.read_to_string(&mut reply).is_ok() && reply.contains(r#""health":"true""#)
    }
}
