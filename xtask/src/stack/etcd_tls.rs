//! etcd over TLS: a second single-member `etcd` serving clients on https://127.0.0.1:22389
//! only (peers on plain 127.0.0.1:22390, `/health` and `/metrics` on plain
//! 127.0.0.1:22391 for the probe), data under `target/stack/etcd-tls/` (fresh at every start),
//! its certificate for 127.0.0.1 signed by a CA of its own ([`super::certs`]), and
//! `--client-cert-auth`: a client shows a certificate from that CA. Authentication is on,
//! with a user `root` (password `lock-stack-tls`) and a user named by the client
//! certificate's common name (`lock-stack-client`), both with the root role, set up with
//! `etcdctl` (Debian's `etcd-client`) once the member serves.
//!
//! `LOCK_TEST_ETCD_TLS_URL` is its URL; `LOCK_TEST_ETCD_TLS_CA`, `LOCK_TEST_ETCD_TLS_CERT`
//! and `LOCK_TEST_ETCD_TLS_KEY` are the CA's and the client's PEM files, and
//! `LOCK_TEST_ETCD_TLS_USER` is `root:<password>`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::certs::{self, make_certificates, CLIENT_NAME};
use super::etcd::{self, Etcd};
use super::{spawn_detached, Server, StateDir, POLL_INTERVAL, READY_TIMEOUT};
use crate::cmd;
use crate::{Error, Result};

/// The stack's TLS etcd.
pub(crate) struct EtcdTls;

/// Default client port (the plain etcd's is 22379, its peer port 22380); the peer port is the
/// next one, the metrics port the one after.
const DEFAULT_PORT: u16 = 22389;

/// The Debian package of `etcdctl`, which sets up the users.
pub(crate) const ETCDCTL_PACKAGE: &str = "etcd-client";

/// The `root` user's password (a throwaway server on loopback: not a secret).
const PASSWORD: &str = "lock-stack-tls";

/// The member name.
const NAME: &str = "lock-stack-tls";

impl EtcdTls {
    /// A PEM file of the running (or next) instance: `ca.crt`, `client.crt`, ...
    fn file(&self, name: &str) -> PathBuf {
        certs::dir_of(self).join(name)
    }
}

impl Server for EtcdTls {
    fn name(&self) -> &'static str {
        "etcd-tls"
    }

    fn binary(&self) -> &'static str {
        Etcd.binary()
    }

    fn apt_package(&self) -> &'static str {
        Etcd.apt_package()
    }

    fn default_port(&self) -> u16 {
        DEFAULT_PORT
    }

    fn port_env(&self) -> &'static str {
        "LOCK_STACK_ETCD_TLS_PORT"
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_ETCD_TLS_URL"
    }

    fn url(&self, port: u16) -> String {
        format!("https://127.0.0.1:{port}")
    }

    fn extra_env(&self) -> Vec<(&'static str, String)> {
        let path = |name: &str| self.file(name).display().to_string();
        vec![
            ("LOCK_TEST_ETCD_TLS_CA", path("ca.crt")),
            ("LOCK_TEST_ETCD_TLS_CERT", path("client.crt")),
            ("LOCK_TEST_ETCD_TLS_KEY", path("client.key")),
            ("LOCK_TEST_ETCD_TLS_USER", format!("root:{PASSWORD}")),
        ]
    }

    /// Launches the member, waits until it serves and turns authentication on; a member that
    /// cannot be set up is stopped again.
    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let tls = certs::dir_of(self);
        make_certificates(&tls)?;
        // Fresh data: the users are set up again below, on a member without authentication.
        let data = state.dir.join("data");
        if data.exists() {
            std::fs::remove_dir_all(&data)
                .map_err(|err| Error::failed(format!("cannot remove {}: {err}", data.display())))?;
        }
        let initial = format!("{NAME}={}", etcd::peer_url(port));
        let metrics = format!("http://127.0.0.1:{}", port.saturating_add(2));
        let mut member =
            etcd::command_serving(program, NAME, &state.dir, &self.url(port), port, &initial);
        member.args(["--listen-metrics-urls", &metrics, "--client-cert-auth"]);
        member.arg("--cert-file").arg(tls.join("server.crt"));
        member.arg("--key-file").arg(tls.join("server.key"));
        member.arg("--trusted-ca-file").arg(tls.join("ca.crt"));
        spawn_detached(member, state)?;
        let deadline = Instant::now() + READY_TIMEOUT;
        while !self.ping(port) {
            if Instant::now() >= deadline {
                return Err(Error::failed(format!(
                    "etcd-tls did not serve on 127.0.0.1:{port} within {}s",
                    READY_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(POLL_INTERVAL);
        }
        let users = [
            format!("user add root:{PASSWORD}"),
            "user grant-role root root".to_owned(),
            format!("user add {CLIENT_NAME}:{PASSWORD}"),
            format!("user grant-role {CLIENT_NAME} root"),
            "auth enable".to_owned(),
        ];
        for words in users {
            let mut etcdctl = self.etcdctl(port)?;
            etcdctl.args(words.split_whitespace());
            let output = etcdctl
                .output()
                .map_err(|err| Error::failed(format!("could not run etcdctl: {err}")))?;
            if !output.status.success() {
                return Err(Error::failed(format!(
                    "`etcdctl {words}` failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                )));
            }
        }
        Ok(())
    }

    /// `/health` on the plain metrics port: `{"health":"true"}` once the member has a leader
    /// (itself) and serves.
    fn ping(&self, port: u16) -> bool {
        etcd::healthy(port.saturating_add(2))
    }
}

impl EtcdTls {
    /// `etcdctl` for the member on `port`, over TLS with the client certificate.
    fn etcdctl(&self, port: u16) -> Result<std::process::Command> {
        let program = cmd::which("etcdctl").ok_or_else(|| {
            Error::failed(format!(
                "`etcdctl` is not on PATH; install the {ETCDCTL_PACKAGE} package"
            ))
        })?;
        let mut etcdctl = cmd::command(program, ["--endpoints", &self.url(port)]);
        etcdctl.arg("--cacert").arg(self.file("ca.crt"));
        etcdctl.arg("--cert").arg(self.file("client.crt"));
        etcdctl.arg("--key").arg(self.file("client.key"));
        etcdctl.env("ETCDCTL_API", "3");
        Ok(etcdctl)
    }
}
