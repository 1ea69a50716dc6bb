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

use crate::conformance::{client_on, conformance_suite};
use crate::etcd::Etcd;
use crate::tls_support::{self, lock_wait_and_hand_over, TlsServer};

/// The member's settings from the environment; `None` (after saying so) when the suite may
/// skip.
fn tls_server() -> Option<TlsServer> {
    TlsServer::from_env("LOCK_TEST_ETCD_TLS")
}

/// Everything a client of the member needs: the CA, the client certificate, the user.
fn with_user(server: &TlsServer) -> EtcdBackendBuilder {
    without_user(server).user(&server.user, &server.password)
}

/// The CA and the client certificate, no user.
fn without_user(server: &TlsServer) -> EtcdBackendBuilder {
    EtcdBackend::builder(&server.url)
        .ca_certificate_pem(server.ca.clone())
        .client_identity_pem(server.certificate.clone(), server.key.clone())
}

async fn tls_harness() -> Option<Etcd> {
    let server = tls_server()?;
    Some(Etcd::on(move || with_user(&server)).await)
}

conformance_suite!(tls_harness());

/// `builder` (its connect timeout 2 s) fails to connect as unavailable within 5 s: typed, no
/// panic, no hang. Returns the error's chain.
async fn refused(builder: EtcdBackendBuilder) -> String {
    let connect = builder
        .connect_timeout(Duration::from_secs(2))
        .response_timeout(Duration::from_secs(1))
        .connect();
    tls_support::refused(connect, LockError::is_unavailable).await
}

/// With the client certificate and no user, etcd takes the certificate's common name as the
/// user (it is one, with the root role): locks are taken, waited for and handed over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_certificate_names_the_user() {
    let Some(server) = tls_server() else { return };
    let first = client_on(without_user(&server).connect().await.unwrap());
    let second = client_on(without_user(&server).connect().await.unwrap());
    lock_wait_and_hand_over(first, second).await;
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
    let wrong = without_user(&server).user(&server.user, "wrong");
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
