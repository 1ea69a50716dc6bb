//! What a `rediss://` connection needs before and after it is tried: a rustls crypto provider
//! (picked here when the process has none, instead of rustls panicking at the first TLS
//! connection), and an error that says the TLS handshake did not complete when a TLS
//! connection times out against a server that accepts TCP (a plain-text server, or the wrong
//! port), instead of a bare "timed out".

use std::time::Duration;

use redis::ConnectionAddr;

use crate::LockError;

/// The host and port of `client` if it connects over TLS.
fn tls_address(client: &redis::Client) -> Option<(&str, u16)> {
    match client.get_connection_info().addr() {
        ConnectionAddr::TcpTls { host, port, .. } => Some((host, *port)),
        _ => None,
    }
}

/// Makes sure rustls has a process-level crypto provider before `client` makes a TLS
/// connection: when none is installed, installs the `ring` provider the `redis-tls` feature
/// brings. rustls does the same by itself when `ring` is the only provider in the build; with
/// `aws-lc-rs` in it as well (the Prometheus exporter's default, for one) it cannot choose, and
/// the first TLS connection would panic. A provider the application installed first is kept.
#[cfg(feature = "redis-tls")]
pub(super) fn ensure_crypto_provider(client: &redis::Client) {
    if tls_address(client).is_some() {
        ensure_any_crypto_provider();
    }
}

/// Installs the `ring` provider when the process has none, for connections whose TLS is not
/// known up front (the servers a Sentinel names, with the connection settings given for them).
#[cfg(feature = "redis-tls")]
#[allow(
    deprecated,
    reason = "rustls 0.23.48 deprecates ring's provider (no post-quantum key exchange); ring is the provider the feature brings, and an application that wants aws-lc-rs installs it first"
)]
pub(super) fn ensure_any_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_some() {
        return;
    }
    // Err: another thread installed one in between, which is as good.
    if rustls::crypto::ring::default_provider()
        .install_default()
        .is_ok()
    {
        tracing::debug!(
            "rustls had no process-level crypto provider: lock-core installed `ring` for rediss://"
        );
    }
}

/// Without `redis-tls` a `rediss://` URL is refused before any connection.
#[cfg(not(feature = "redis-tls"))]
pub(super) fn ensure_crypto_provider(_client: &redis::Client) {}

/// Without `redis-tls` no connection uses TLS.
#[cfg(not(feature = "redis-tls"))]
pub(super) fn ensure_any_crypto_provider() {}

/// `error`, the failure of `client`'s first connection, said for what it is when the client
/// speaks TLS and the attempt timed out: if the server accepts a TCP connection within
/// `timeout`, the TCP part worked and the TLS handshake is what did not complete (a plain-text
/// Redis waits for a command line and never answers a ClientHello).
pub(super) async fn explain_failed_connect(
    client: &redis::Client,
    error: redis::RedisError,
    timeout: Duration,
) -> LockError {
    let Some((host, port)) = tls_address(client).filter(|_| error.is_timeout()) else {
        return super::to_lock_error(error);
    };
    let tcp = tokio::time::timeout(timeout, tokio::net::TcpStream::connect((host, port))).await;
    if !matches!(tcp, Ok(Ok(_))) {
        return super::to_lock_error(error);
    }
    LockError::unavailable(
        super::BACKEND,
        format!(
            "the TLS handshake with {host}:{port} did not complete within {timeout:?}: the \
             server accepts TCP but does not answer TLS (a plain-text Redis, or not its TLS \
             port?); use redis:// for a plain-text server ({error})"
        ),
    )
}
