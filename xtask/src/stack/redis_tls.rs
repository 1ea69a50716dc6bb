//! Redis over TLS: a second `redis-server` on 127.0.0.1:26380 that speaks only TLS, with a
//! certificate for 127.0.0.1 signed by a CA made for it ([`super::certs`], under its state dir), so
//! the suites connect over `rediss://` as a production setup does, the CA given to the client
//! as a private one. `LOCK_TEST_REDIS_TLS_URL` is its URL, `LOCK_TEST_REDIS_TLS_CA` the CA's
//! PEM file.

use std::path::{Path, PathBuf};

use super::certs::make_certificates;
use super::redis::{launch_throwaway, Redis};
use super::{Server, StateDir};
use crate::cmd;
use crate::Result;

/// The stack's TLS redis.
pub(crate) struct RedisTls;

/// Default port: the plain redis's (26379) plus one.
const DEFAULT_PORT: u16 = 26380;

/// The env var naming the CA's PEM file.
pub(crate) const CA_ENV: &str = "LOCK_TEST_REDIS_TLS_CA";

impl RedisTls {
    /// Where the CA and the server's certificate and key are kept.
    fn tls_dir(state: &StateDir) -> PathBuf {
        state.dir.join("tls")
    }

    /// The CA's PEM file of the running (or next) instance.
    pub(crate) fn ca_file(&self) -> PathBuf {
        Self::tls_dir(&StateDir::of(self)).join("ca.crt")
    }
}

impl Server for RedisTls {
    fn name(&self) -> &'static str {
        "redis-tls"
    }

    fn binary(&self) -> &'static str {
        Redis.binary()
    }

    fn apt_package(&self) -> &'static str {
        Redis.apt_package()
    }

    fn default_port(&self) -> u16 {
        DEFAULT_PORT
    }

    fn port_env(&self) -> &'static str {
        "LOCK_STACK_REDIS_TLS_PORT"
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_REDIS_TLS_URL"
    }

    fn url(&self, port: u16) -> String {
        format!("rediss://127.0.0.1:{port}/")
    }

    fn extra_env(&self) -> Vec<(&'static str, String)> {
        vec![(CA_ENV, self.ca_file().display().to_string())]
    }

    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let tls = Self::tls_dir(state);
        make_certificates(&tls)?;
        let port = port.to_string();
        let mut redis = cmd::command(program, ["--bind", "127.0.0.1", "--port", "0"]);
        redis.args(["--tls-port", &port]);
        redis.arg("--tls-cert-file").arg(tls.join("server.crt"));
        redis.arg("--tls-key-file").arg(tls.join("server.key"));
        redis.arg("--tls-ca-cert-file").arg(tls.join("ca.crt"));
        // Clients show no certificate of their own: only the server is checked.
        redis.args(["--tls-auth-clients", "no"]);
        launch_throwaway(&mut redis, state)
    }

    /// `redis-cli --tls PING` checked against the CA: answers once TLS and Redis both work.
    fn ping(&self, port: u16) -> bool {
        let mut cli = cmd::command(
            "redis-cli",
            ["--tls", "-h", "127.0.0.1", "-p", &port.to_string()],
        );
        cli.arg("--cacert").arg(self.ca_file()).arg("PING");
        cmd::probe(&mut cli).is_some_and(|reply| reply == "PONG")
    }
}
