//! ZooKeeper over TLS: a second standalone server (the `zookeeperd` jars, as
//! [`super::zookeeper`]) serving clients on 127.0.0.1:22183 over TLS only (`secureClientPort`,
//! Netty, no plain `clientPort`), its certificate for 127.0.0.1 signed by a CA of its own
//! ([`super::certs`]; PEM key and trust stores), a client certificate from that CA required
//! (`ssl.clientAuth=need`), and SASL required (`enforce.auth.enabled`, scheme `sasl`):
//! DIGEST-MD5 with the user `locks` (password `lock-stack-tls`) from a JAAS file. Data under
//! `target/stack/zookeeper-tls/`.
//!
//! `LOCK_TEST_ZOOKEEPER_TLS_URL` is its connect string (`tcp+tls://127.0.0.1:22183`);
//! `LOCK_TEST_ZOOKEEPER_TLS_CA`, `LOCK_TEST_ZOOKEEPER_TLS_CERT` and
//! `LOCK_TEST_ZOOKEEPER_TLS_KEY` are the CA's and the client certificate's PEM files, and
//! `LOCK_TEST_ZOOKEEPER_TLS_USER` is `locks:<password>`.

use std::path::{Path, PathBuf};

use super::certs::{self, make_certificates};
use super::zookeeper::{java_with, ZooKeeper};
use super::{spawn_detached, Server, StateDir, PROBE_TIMEOUT};
use crate::cmd;
use crate::{Error, Result};

/// The stack's TLS ZooKeeper.
pub(crate) struct ZooKeeperTls;

/// Default port: the plain ZooKeeper's (22181) plus two (22182 is left to a quorum port).
const DEFAULT_PORT: u16 = 22183;

/// Netty's codec, which its TLS handler needs (Debian's `libnetty-java`, a dependency of
/// `zookeeperd`).
const NETTY_CODEC: &str = "/usr/share/java/netty-codec.jar";

/// The SASL user and its password (a throwaway server on loopback: not a secret).
const USER: &str = "locks";
const PASSWORD: &str = "lock-stack-tls";

impl ZooKeeperTls {
    /// A file of the running (or next) instance's certificates: `ca.crt`, ...
    fn file(&self, name: &str) -> PathBuf {
        certs::dir_of(self).join(name)
    }
}

/// The server's configuration: TLS only, on loopback, SASL required.
fn zoo_cfg(data: &Path, tls: &Path, port: u16) -> String {
    format!(
        "tickTime=1000\ninitLimit=10\nsyncLimit=5\ndataDir={data}\n\
         secureClientPort={port}\nsecureClientPortAddress=127.0.0.1\n\
         serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
         ssl.keyStore.location={key_store}\nssl.keyStore.type=PEM\n\
         ssl.trustStore.location={trust_store}\nssl.trustStore.type=PEM\n\
         ssl.clientAuth=need\n\
         authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n\
         enforce.auth.enabled=true\nenforce.auth.schemes=sasl\n\
         admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\nmaxClientCnxns=0\n",
        data = data.display(),
        key_store = tls.join("server.pem").display(),
        trust_store = tls.join("ca.crt").display(),
    )
}

/// The JAAS configuration of the server's SASL: DIGEST-MD5 users.
fn jaas() -> String {
    format!(
        "Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  \
         user_{USER}=\"{PASSWORD}\";\n}};\n"
    )
}

impl Server for ZooKeeperTls {
    fn name(&self) -> &'static str {
        "zookeeper-tls"
    }

    fn binary(&self) -> &'static str {
        ZooKeeper.binary()
    }

    fn apt_package(&self) -> &'static str {
        ZooKeeper.apt_package()
    }

    fn default_port(&self) -> u16 {
        DEFAULT_PORT
    }

    fn port_env(&self) -> &'static str {
        "LOCK_STACK_ZOOKEEPER_TLS_PORT"
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_ZOOKEEPER_TLS_URL"
    }

    fn url(&self, port: u16) -> String {
        format!("tcp+tls://127.0.0.1:{port}")
    }

    fn extra_env(&self) -> Vec<(&'static str, String)> {
        let path = |name: &str| self.file(name).display().to_string();
        vec![
            ("LOCK_TEST_ZOOKEEPER_TLS_CA", path("ca.crt")),
            ("LOCK_TEST_ZOOKEEPER_TLS_CERT", path("client.crt")),
            ("LOCK_TEST_ZOOKEEPER_TLS_KEY", path("client.key")),
            ("LOCK_TEST_ZOOKEEPER_TLS_USER", format!("{USER}:{PASSWORD}")),
        ]
    }

    fn locate(&self) -> Option<PathBuf> {
        ZooKeeper.locate()
    }

    fn process_name(&self) -> &'static str {
        ZooKeeper.process_name()
    }

    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let tls = certs::dir_of(self);
        make_certificates(&tls)?;
        let write = |path: &Path, text: &str| {
            std::fs::write(path, text)
                .map_err(|err| Error::failed(format!("cannot write {}: {err}", path.display())))
        };
        // ZooKeeper's PEM key store: the key and the certificate in one file.
        let read = |name: &str| {
            std::fs::read_to_string(tls.join(name))
                .map_err(|err| Error::failed(format!("cannot read {name}: {err}")))
        };
        let key_store = format!("{}{}", read("server.key")?, read("server.crt")?);
        write(&tls.join("server.pem"), &key_store)?;
        let config = state.dir.join("zoo.cfg");
        write(&config, &zoo_cfg(&state.dir.join("data"), &tls, port))?;
        let jaas_file = state.dir.join("jaas.conf");
        write(&jaas_file, &jaas())?;
        // Netty's codec: the Debian jar's class path names netty's handler, which needs it,
        // but not the codec itself (a plain server does not load the handler).
        let server = java_with(
            program,
            &config,
            &[NETTY_CODEC],
            &[format!(
                "-Djava.security.auth.login.config={}",
                jaas_file.display()
            )],
        );
        spawn_detached(server, state)
    }

    /// `ruok` over TLS (`openssl s_client` with the client certificate, the CA checking the
    /// server): `imok` once the server serves. Four-letter words need no SASL.
    fn ping(&self, port: u16) -> bool {
        use std::io::Write as _;
        let timeout = format!("{}", PROBE_TIMEOUT.as_secs_f32().max(1.0));
        let mut client = cmd::command(
            "timeout",
            [
                timeout.as_str(),
                "openssl",
                "s_client",
                "-quiet",
                "-verify_return_error",
                "-connect",
                &format!("127.0.0.1:{port}"),
            ],
        );
        client.arg("-CAfile").arg(self.file("ca.crt"));
        client.arg("-cert").arg(self.file("client.crt"));
        client.arg("-key").arg(self.file("client.key"));
        client
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let Ok(mut child) = client.spawn() else {
            return false;
        };
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(b"ruok").ok();
        }
        child
            .wait_with_output()
            .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).contains("imok"))
    }
}
