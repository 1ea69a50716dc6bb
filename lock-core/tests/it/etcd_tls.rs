//! etcd over TLS (feature `etcd-tls`), on the stack's TLS member: `https://` only, its
//! certificate signed by a CA of the stack's own (`LOCK_TEST_ETCD_TLS_CA`), `--client-cert-auth`
//! (a client shows a certificate from that CA: `LOCK_TEST_ETCD_TLS_CERT`/`_KEY`) and etcd's
//! authentication on (`LOCK_TEST_ETCD_TLS_USER`, `root:<password>`; the client certificate's
//! common name is a user too). The conformance suite runs there with the CA, the client
//! certificate and the user; the other checks are the settings themselves: the certificate's
//! name as the user, and a missing client certificate, an unknown CA, a wrong password and
//! plain text each refused with a typed error, quickly.

use std::time::Duration;

use lock_core::etcd::EtcdBackendBuilder;
use lock_core::{EtcdBackend, LockError};
use tokio::time::Instant;

use crate::conformance::{client_on, conformance_suite, unique_key};
use crate::etcd::Etcd;

/// The stack's TLS member and what a client needs to reach it.
#[derive(Clone)]
struct TlsServer {
    url: String,
    ca: Vec<u8>,
    certificate: Vec<u8>,
    key: Vec<u8>,
    user: String,
    password: String,
}

/// The member's settings from the environment; `None` (after saying so) when the suite may
/// skip.
fn tls_server() -> Option<TlsServer> {
    let url =
        lock_testing::server_url("LOCK_TEST_ETCD_TLS_URL").unwrap_or_else(|e| panic!("{e}"))?;
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} beside the URL"));
    let read = |name: &str| {
        let path = var(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{name}={path}: {e}"))
    };
    let user = var("LOCK_TEST_ETCD_TLS_USER");
    let (user, password) = user.split_once(':').expect("user:password");
    Some(TlsServer {
        ca: read("LOCK_TEST_ETCD_TLS_CA"),
        certificate: read("LOCK_TEST_ETCD_TLS_CERT"),
        key: read("LOCK_TEST_ETCD_TLS_KEY"),
        user: user.to_owned(),
        password: password.to_owned(),
        url,
    })
}

impl TlsServer {
    /// Everything a client of the member needs: the CA, the client certificate, the user.
    fn builder(&self) -> EtcdBackendBuilder {
        self.without_user().user(&self.user, &self.password)
    }

    /// The CA and the client certificate, no user.
    fn without_user(&self) -> EtcdBackendBuilder {
        EtcdBackend::builder(&self.url)
            .ca_certificate_pem(self.ca.clone())
            .client_identity_pem(self.certificate.clone(), self.key.clone())
    }
}

async fn tls_harness() -> Option<Etcd> {
    let server = tls_server()?;
    Some(Etcd::on(move || server.builder()).await)
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

/// `builder` (its connect timeout 2 s) fails to connect as unavailable within 5 s: typed, no
/// panic, no hang. Returns the error's chain.
async fn refused(builder: EtcdBackendBuilder) -> String {
    let started = Instant::now();
    let result = builder
        .connect_timeout(Duration::from_secs(2))
        .response_timeout(Duration::from_secs(1))
        .connect()
        .await;
    let Err(error) = result else {
        panic!("connected");
    };
    assert!(error.is_unavailable(), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{error}");
    chain(&error)
}

/// With the client certificate and no user, etcd takes the certificate's common name as the
/// user (it is one, with the root role): locks are taken, waited for and handed over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_certificate_names_the_user() {
    let Some(server) = tls_server() else { return };
    let first = client_on(server.without_user().connect().await.unwrap());
    let second = client_on(server.without_user().connect().await.unwrap());
    let key = unique_key("etcd-tls");
    let held = first.lock(&key).await.unwrap();
    let waiter = tokio::spawn(async move {
        let guard = second.lock(&key).await.unwrap();
        let token = guard.fencing_token();
        guard.release().await.unwrap();
        token
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished(), "the waiter did not wait");
    let first_token = held.fencing_token();
    held.release().await.unwrap();
    let second_token = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("the waiter got the lock after the release")
        .unwrap();
    assert!(second_token > first_token);
}

/// The member checks its clients' certificates: without one, connecting is refused.
#[tokio::test]
async fn no_client_certificate_is_refused() {
    let Some(server) = tls_server() else { return };
    let anonymous = EtcdBackend::builder(&server.url)
        .ca_certificate_pem(server.ca.clone())
        .user(&server.user, &server.password);
    refused(anonymous).await;
}

/// Without the private CA (the Mozilla roots only) the member's certificate does not verify.
#[tokio::test]
async fn a_certificate_from_an_unknown_ca_is_refused() {
    let Some(server) = tls_server() else { return };
    let public_roots_only = EtcdBackend::builder(&server.url)
        .client_identity_pem(server.certificate.clone(), server.key.clone())
        .user(&server.user, &server.password);
    let why = refused(public_roots_only).await;
    assert!(
        why.contains("certificate") || why.contains("transport"),
        "{why}"
    );
}

/// A wrong password is refused at connect (etcd's `Authenticate`), with etcd's reason.
#[tokio::test]
async fn a_wrong_password_is_refused() {
    let Some(server) = tls_server() else { return };
    let wrong = server.without_user().user(&server.user, "wrong");
    let why = refused(wrong).await;
    assert!(why.contains("authentication failed"), "{why}");
}

/// The member speaks nothing but TLS: an `http://` URL to its port is refused.
#[tokio::test]
async fn plain_text_is_refused() {
    let Some(server) = tls_server() else { return };
    let plain = server.url.replacen("https://", "http://", 1);
    refused(EtcdBackend::builder(&plain).user(&server.user, &server.password)).await;
}

/// A CA or a client certificate for `http://` endpoints is a mistake, refused before any
/// connection (no server needed).
#[tokio::test]
async fn tls_settings_for_plain_text_endpoints_are_invalid() {
    for builder in [
        EtcdBackend::builder("http://127.0.0.1:1").ca_certificate_pem(b"-".to_vec()),
        EtcdBackend::builder("http://127.0.0.1:1")
            .client_identity_pem(b"-".to_vec(), b"-".to_vec()),
    ] {
        let error = builder.connect().await.unwrap_err();
        assert!(matches!(error, LockError::InvalidConfig(_)), "{error:?}");
    }
}
