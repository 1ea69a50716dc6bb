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
use zookeeper_client as zk;

use crate::conformance::{client_on, conformance_suite, unique_key};
use crate::tls_support::{self, TlsServer};
use crate::zookeeper::ZooKeeper;

/// The server's settings from the environment; `None` (after saying so) when the suite may
/// skip.
fn tls_server() -> Option<TlsServer> {
    TlsServer::from_env("LOCK_TEST_ZOOKEEPER_TLS")
}

/// Everything a client needs: the CA, the client certificate, the SASL user.
fn with_sasl(server: &TlsServer) -> ZooKeeperBackendBuilder {
    tls_only(server).sasl_digest_md5(&server.user, &server.password)
}

/// The CA and the client certificate, no SASL.
fn tls_only(server: &TlsServer) -> ZooKeeperBackendBuilder {
    ZooKeeperBackend::builder(&server.url)
        .ca_certificate_pem(server.ca.clone())
        .client_identity_pem(server.certificate.clone(), server.key.clone())
}

/// A zookeeper-client session of the test's own, with everything, to look behind the
/// backends' backs.
#[allow(
    deprecated,
    reason = "rustls 0.23.48 deprecates ring's provider; the tests pick ring, as lock-core does"
)]
async fn admin(server: &TlsServer) -> zk::Client {
    // zookeeper-client takes rustls's process-level provider, which this binary (rustls
    // with both providers) cannot pick by itself; lock-core installs one at its first TLS
    // connection, which may not have happened yet in this process.
    // Err: another provider is installed already, which serves as well.
    rustls::crypto::ring::default_provider()
        .install_default()
        .unwrap_or_default();
    let tls = zk::TlsOptions::new()
        .with_pem_ca(&server.ca)
        .unwrap()
        .with_pem_identity(&server.certificate, &server.key)
        .unwrap();
    let sasl = zk::SaslOptions::digest_md5(server.user.clone(), server.password.clone());
    zk::Client::connector()
        .with_tls(tls)
        .with_sasl(sasl)
        .connect(&server.url)
        .await
        .unwrap_or_else(|e| panic!("cannot reach ZooKeeper at {}: {e}", server.url))
}

async fn tls_harness() -> Option<ZooKeeper> {
    let server = tls_server()?;
    let admin = admin(&server).await;
    let url = server.url.clone();
    Some(ZooKeeper::on(url, admin, move || with_sasl(&server)).await)
}

conformance_suite!(tls_harness());

/// `builder` (its connect timeout 2 s) cannot be used: connecting fails, or the session the
/// server accepted fails its first lock, as unavailable, within 5 s (typed, no panic, no hang).
/// Returns the error's chain.
async fn refused(builder: ZooKeeperBackendBuilder) -> String {
    let attempt = async {
        let backend = builder
            .connect_timeout(Duration::from_secs(2))
            .connect()
            .await?;
        let locks = client_on(backend);
        match locks.lock(unique_key("zk-tls-refused")).try_acquire().await {
            Err(error) => Err::<(), _>(error),
            Ok(_) => panic!("a session the server should refuse took a lock"),
        }
    };
    tls_support::refused(attempt, |error: &LockError| {
        error.is_unavailable() || error.is_timeout()
    })
    .await
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
    refused(tls_only(&server).sasl_digest_md5(&server.user, "wrong")).await;
}

/// The server enforces SASL: a session that did not authenticate cannot lock.
#[tokio::test]
async fn no_sasl_is_refused() {
    let Some(server) = tls_server() else { return };
    refused(tls_only(&server)).await;
}

/// The server speaks nothing but TLS: the plain-text protocol to its port is refused.
#[tokio::test]
async fn plain_text_is_refused() {
    let Some(server) = tls_server() else { return };
    let plain = server.url.replacen("tcp+tls://", "", 1);
    refused(ZooKeeperBackend::builder(&plain).sasl_digest_md5(&server.user, &server.password))
        .await;
}
