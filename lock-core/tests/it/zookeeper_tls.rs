//! ZooKeeper over TLS with SASL (features `zookeeper-tls` and `zookeeper-sasl`), on the stack's
//! TLS server: `tcp+tls://` only (Netty, `secureClientPort`), its certificate signed by a CA of
//! the stack's own (`LOCK_TEST_ZOOKEEPER_TLS_CA`), a client certificate from that CA required
//! (`LOCK_TEST_ZOOKEEPER_TLS_CERT`/`_KEY`), and SASL DIGEST-MD5 enforced
//! (`LOCK_TEST_ZOOKEEPER_TLS_USER`, `locks:<password>`). The conformance suite runs there with
//! all three; the other checks are the settings themselves: a missing client certificate, a CA
//! that did not sign the server's certificate, a wrong password and no SASL at all are each
//! refused with a typed error, quickly.

use std::time::Duration;

use lock_core::zookeeper::ZooKeeperBackendBuilder;
use lock_core::{LockError, ZooKeeperBackend};
use tokio::time::Instant;
use zookeeper_client as zk;

use crate::conformance::{client_on, conformance_suite, unique_key};
use crate::zookeeper::ZooKeeper;

/// The stack's TLS server and what a client needs to reach it.
#[derive(Clone)]
struct TlsServer {
    url: String,
    ca: String,
    certificate: String,
    key: String,
    user: String,
    password: String,
}

/// The server's settings from the environment; `None` (after saying so) when the suite may
/// skip.
fn tls_server() -> Option<TlsServer> {
    let url = lock_testing::server_url("LOCK_TEST_ZOOKEEPER_TLS_URL")
        .unwrap_or_else(|e| panic!("{e}"))?;
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} beside the URL"));
    let read = |name: &str| {
        let path = var(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}={path}: {e}"))
    };
    let user = var("LOCK_TEST_ZOOKEEPER_TLS_USER");
    let (user, password) = user.split_once(':').expect("user:password");
    Some(TlsServer {
        ca: read("LOCK_TEST_ZOOKEEPER_TLS_CA"),
        certificate: read("LOCK_TEST_ZOOKEEPER_TLS_CERT"),
        key: read("LOCK_TEST_ZOOKEEPER_TLS_KEY"),
        user: user.to_owned(),
        password: password.to_owned(),
        url,
    })
}

impl TlsServer {
    /// Everything a client needs: the CA, the client certificate, the SASL user.
    fn builder(&self) -> ZooKeeperBackendBuilder {
        self.tls_only().sasl_digest_md5(&self.user, &self.password)
    }

    /// The CA and the client certificate, no SASL.
    fn tls_only(&self) -> ZooKeeperBackendBuilder {
        ZooKeeperBackend::builder(&self.url)
            .ca_certificate_pem(self.ca.clone())
            .client_identity_pem(self.certificate.clone(), self.key.clone())
    }

    /// A zookeeper-client session of the test's own, with everything, to look behind the
    /// backends' backs.
    async fn admin(&self) -> zk::Client {
        // zookeeper-client takes rustls's process-level provider, which this binary (rustls
        // with both providers) cannot pick by itself; lock-core installs one at its first TLS
        // connection, which may not have happened yet in this process.
        // Err: another provider is installed already, which serves as well.
        rustls::crypto::ring::default_provider()
            .install_default()
            .unwrap_or_default();
        let tls = zk::TlsOptions::new()
            .with_pem_ca(&self.ca)
            .unwrap()
            .with_pem_identity(&self.certificate, &self.key)
            .unwrap();
        let sasl = zk::SaslOptions::digest_md5(self.user.clone(), self.password.clone());
        zk::Client::connector()
            .with_tls(tls)
            .with_sasl(sasl)
            .connect(&self.url)
            .await
            .unwrap_or_else(|e| panic!("cannot reach ZooKeeper at {}: {e}", self.url))
    }
}

async fn tls_harness() -> Option<ZooKeeper> {
    let server = tls_server()?;
    let admin = server.admin().await;
    let url = server.url.clone();
    Some(ZooKeeper::on(url, admin, move || server.builder()).await)
}

conformance_suite!(tls_harness());

/// The error and the whole chain of its causes, as one line.
fn chain(error: &LockError) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message = format!("{message}: {cause}");
        source = cause.source();
    }
    message
}

/// `builder` (its connect timeout 2 s) cannot be used: connecting fails, or the session the
/// server accepted fails its first lock, as unavailable, within 5 s (typed, no panic, no hang).
/// Returns the error's chain.
async fn refused(builder: ZooKeeperBackendBuilder) -> String {
    let started = Instant::now();
    let error = match builder
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await
    {
        Err(error) => error,
        Ok(backend) => {
            let locks = client_on(backend);
            match locks.lock(unique_key("zk-tls-refused")).try_acquire().await {
                Err(error) => error,
                Ok(_) => panic!("a session the server should refuse took a lock"),
            }
        }
    };
    assert!(error.is_unavailable() || error.is_timeout(), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{error}");
    chain(&error)
}

/// The server asks for a client certificate: without one, the handshake fails.
#[tokio::test]
async fn no_client_certificate_is_refused() {
    let Some(server) = tls_server() else { return };
    let anonymous = ZooKeeperBackend::builder(&server.url)
        .ca_certificate_pem(server.ca.clone())
        .sasl_digest_md5(&server.user, &server.password);
    refused(anonymous).await;
}

/// A CA that did not sign the server's certificate (here: the client certificate, a
/// certificate but not the server's issuer): the server's certificate does not verify.
#[tokio::test]
async fn a_certificate_from_an_unknown_ca_is_refused() {
    let Some(server) = tls_server() else { return };
    let wrong_ca = ZooKeeperBackend::builder(&server.url)
        .ca_certificate_pem(server.certificate.clone())
        .client_identity_pem(server.certificate.clone(), server.key.clone())
        .sasl_digest_md5(&server.user, &server.password);
    refused(wrong_ca).await;
}

/// A wrong SASL password is refused.
#[tokio::test]
async fn a_wrong_password_is_refused() {
    let Some(server) = tls_server() else { return };
    refused(server.tls_only().sasl_digest_md5(&server.user, "wrong")).await;
}

/// The server enforces SASL: a session that did not authenticate cannot lock.
#[tokio::test]
async fn no_sasl_is_refused() {
    let Some(server) = tls_server() else { return };
    refused(server.tls_only()).await;
}

/// The server speaks nothing but TLS: the plain-text protocol to its port is refused.
#[tokio::test]
async fn plain_text_is_refused() {
    let Some(server) = tls_server() else { return };
    let plain = server.url.replacen("tcp+tls://", "", 1);
    refused(ZooKeeperBackend::builder(&plain).sasl_digest_md5(&server.user, &server.password))
        .await;
}
