//! etcd: a single-member `etcd` (Debian's `etcd-server`) serving clients on
//! 127.0.0.1:22379 and peers on 127.0.0.1:22380 (not 2379/2380), data under
//! `target/stack/etcd/`.

use std::path::Path;
use std::process::Command;

use super::{ask, spawn_detached, Server, StateDir};
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
        let initial = format!("{NAME}={}", peer_url(port));
        spawn_detached(command(program, NAME, &state.dir, port, &initial), state)
    }

    fn ping(&self, port: u16) -> bool {
        healthy(port)
    }
}

/// The member name of the single-member server.
const NAME: &str = "lock-stack";

/// A member's command line: named `name`, data under `dir/data`, clients on
/// `port` and peers on `port + 1` (loopback), in the cluster `initial`
/// (`name=peer-url,...`). Also used for the members of `stack up --etcd-cluster`.
pub(super) fn command(program: &Path, name: &str, dir: &Path, port: u16, initial: &str) -> Command {
    command_serving(
        program,
        name,
        dir,
        &format!("http://127.0.0.1:{port}"),
        port,
        initial,
    )
}

/// [`command`] with the clients served on the URL `client` (on `port`; `https://` for the TLS
/// member, whose TLS options the caller adds).
pub(super) fn command_serving(
    program: &Path,
    name: &str,
    dir: &Path,
    client: &str,
    port: u16,
    initial: &str,
) -> Command {
    let peer = peer_url(port);
    let mut etcd = cmd::command(program, ["--name", name, "--data-dir"]);
    etcd.arg(dir.join("data"));
    etcd.args([
        "--listen-client-urls",
        client,
        "--advertise-client-urls",
        client,
        "--listen-peer-urls",
        &peer,
        "--initial-advertise-peer-urls",
        &peer,
        "--initial-cluster",
        initial,
        "--log-level",
        "warn",
    ]);
    etcd
}

/// The peer URL of the member serving clients on `port`: plain, loopback, `port + 1`.
pub(super) fn peer_url(port: u16) -> String {
    format!("http://127.0.0.1:{}", port.saturating_add(1))
}

/// Whether the member on `port` serves: `/health` is `{"health":"true"}` once
/// it has a leader (itself, when alone) and serves reads.
pub(super) fn healthy(port: u16) -> bool {
    let request = format!("GET /health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    ask(port, request.as_bytes()).is_some_and(|reply| reply.contains(r#""health":"true""#))
}
