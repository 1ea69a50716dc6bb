//! PostgreSQL and MySQL over TLS (features `postgres-tls`, `mysql-tls`), on the stack's TLS
//! servers: `LOCK_TEST_POSTGRES_TLS_URL` (a cluster that takes TLS with a password and nothing
//! else) and `LOCK_TEST_MYSQL_TLS_URL` (a MariaDB with `require_secure_transport` and a user
//! with a password and `REQUIRE SSL`), each URL verifying the server against the stack's own CA
//! (`sslmode=verify-full&sslrootcert=..`, `ssl-mode=VERIFY_IDENTITY&ssl-ca=..`), as a
//! production URL with a private CA does. `postgres::tls` and `mysql::tls` run the conformance
//! suite there; these are the checks of the TLS settings themselves: the connection is
//! encrypted, and a certificate that does not verify, a plain-text login and a wrong password
//! are each refused with a typed error, quickly.

use lock_core::LockError;

use crate::conformance::client_on;
use crate::sql_support::server_url;
use crate::tls_support::{self, lock_wait_and_hand_over};

const POSTGRES_TLS_URL_ENV: &str = "LOCK_TEST_POSTGRES_TLS_URL";
pub(crate) const MYSQL_TLS_URL_ENV: &str = "LOCK_TEST_MYSQL_TLS_URL";

/// The user the stack's TLS PostgreSQL lets in with the client certificate of that name.
#[cfg(feature = "postgres-tls")]
const CERTIFICATE_USER: &str = "lock-stack-client";

/// The stack's TLS PostgreSQL for the client certificate's user: its URL with the user, no
/// password, and the certificate and key (`LOCK_TEST_POSTGRES_TLS_CERT`, `_KEY`) as `sslcert`
/// and `sslkey`. `None` (after saying so) when the suite may skip.
#[cfg(feature = "postgres-tls")]
pub(crate) fn postgres_certificate_url() -> Option<String> {
    let url = server_url(POSTGRES_TLS_URL_ENV)?;
    let file = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} beside the URL"));
    let (scheme, rest) = url.split_once("://").unwrap();
    let (_, host) = rest.split_once('@').unwrap();
    let url = format!("{scheme}://{CERTIFICATE_USER}@{host}");
    let url = with_param(&url, "sslcert", Some(&file("LOCK_TEST_POSTGRES_TLS_CERT")));
    Some(with_param(
        &url,
        "sslkey",
        Some(&file("LOCK_TEST_POSTGRES_TLS_KEY")),
    ))
}

/// `url` with its query parameter `name` set to `value`, or removed (`None`).
fn with_param(url: &str, name: &str, value: Option<&str>) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut pairs: Vec<String> = query
        .split('&')
        .filter(|pair| !pair.is_empty() && pair.split('=').next() != Some(name))
        .map(str::to_owned)
        .collect();
    if let Some(value) = value {
        pairs.push(format!("{name}={value}"));
    }
    if pairs.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", pairs.join("&"))
    }
}

/// `url` with the password `password` instead of its own.
fn with_password(url: &str, password: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (credentials, host) = rest.split_once('@').unwrap();
    let user = credentials.split(':').next().unwrap();
    format!("{scheme}://{user}:{password}@{host}")
}

/// `connect` fails as unavailable within 5 s (typed, no panic, no hang); returns the error's
/// chain.
async fn refused<T>(connect: impl std::future::Future<Output = lock_core::Result<T>>) -> String {
    tls_support::refused(connect, |error: &LockError| {
        matches!(error, LockError::Unavailable { .. })
    })
    .await
}

#[cfg(feature = "postgres-tls")]
mod postgres {
    use lock_core::PostgresBackend;

    use super::*;

    fn url() -> Option<String> {
        server_url(POSTGRES_TLS_URL_ENV)
    }

    /// Connected over TLS with a password, the stack's CA verifying the server: the session is
    /// encrypted (`pg_stat_ssl`), and locks are taken, waited for and handed over, on the lock
    /// table and on advisory locks.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn verified_tls_with_a_password() {
        let Some(url) = url() else { return };
        let backend = PostgresBackend::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("verify-full with the stack's CA: {e}"));
        let (ssl, version): (bool, Option<String>) =
            sqlx::query_as("SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
                .fetch_one(backend.pool())
                .await
                .unwrap();
        assert!(ssl, "the session is not encrypted");
        assert!(version.is_some_and(|v| v.starts_with("TLS")));
        let other = PostgresBackend::connect(&url).await.unwrap();
        lock_wait_and_hand_over(client_on(backend.clone()), client_on(other.clone())).await;
        lock_wait_and_hand_over(client_on(backend.advisory()), client_on(other.advisory())).await;
    }

    /// `verify-full` without the private CA (the public roots only): the server's certificate
    /// does not verify, and connecting is refused as unavailable, naming the certificate.
    #[tokio::test]
    async fn a_certificate_from_an_unknown_ca_is_refused() {
        let Some(url) = url() else { return };
        let public_roots_only = with_param(&url, "sslrootcert", None);
        let why = refused(PostgresBackend::connect(&public_roots_only)).await;
        assert!(why.contains("certificate"), "{why}");
    }

    /// The server takes no plain-text login: `sslmode=disable` is refused.
    #[tokio::test]
    async fn plain_text_is_refused() {
        let Some(url) = url() else { return };
        let plain = with_param(&url, "sslmode", Some("disable"));
        let why = refused(PostgresBackend::connect(&plain)).await;
        assert!(why.contains("no encryption"), "{why}");
    }

    /// A wrong password over a verified TLS connection is refused.
    #[tokio::test]
    async fn a_wrong_password_is_refused() {
        let Some(url) = url() else { return };
        let why = refused(PostgresBackend::connect(&with_password(&url, "wrong"))).await;
        assert!(why.contains("password authentication failed"), "{why}");
    }

    /// The client certificate logs its user in (`cert` in `pg_hba.conf`); without it, that
    /// user is refused.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_certificate_logs_in() {
        let Some(url) = postgres_certificate_url() else {
            return;
        };
        let backend = PostgresBackend::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("sslcert and sslkey: {e}"));
        let user: String = sqlx::query_scalar("SELECT current_user::text")
            .fetch_one(backend.pool())
            .await
            .unwrap();
        assert_eq!(user, CERTIFICATE_USER);
        let no_certificate = with_param(&with_param(&url, "sslcert", None), "sslkey", None);
        let why = refused(PostgresBackend::connect(&no_certificate)).await;
        assert!(why.contains("certificate"), "{why}");
    }

    /// A CA file that is not there is refused too (as unavailable: sqlx reads it at each
    /// connection).
    #[tokio::test]
    async fn a_missing_ca_file_is_refused() {
        let Some(url) = url() else { return };
        let missing = with_param(&url, "sslrootcert", Some("/nonexistent/ca.pem"));
        refused(PostgresBackend::connect(&missing)).await;
    }
}

#[cfg(feature = "mysql-tls")]
mod mysql {
    use lock_core::MySqlBackend;

    use super::*;

    fn url() -> Option<String> {
        server_url(MYSQL_TLS_URL_ENV)
    }

    /// Connected over TLS with a password, the stack's CA verifying the server: the session is
    /// encrypted (`Ssl_version`), and locks are taken, waited for and handed over.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn verified_tls_with_a_password() {
        let Some(url) = url() else { return };
        let backend = MySqlBackend::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("VERIFY_IDENTITY with the stack's CA: {e}"));
        let (_, version): (String, String) =
            sqlx::query_as("SHOW SESSION STATUS LIKE 'Ssl_version'")
                .fetch_one(backend.pool())
                .await
                .unwrap();
        assert!(
            version.starts_with("TLS"),
            "the session is not encrypted: {version:?}"
        );
        let other = MySqlBackend::connect(&url).await.unwrap();
        lock_wait_and_hand_over(client_on(backend), client_on(other)).await;
    }

    /// `VERIFY_IDENTITY` without the private CA (the public roots only): the server's
    /// certificate does not verify, and connecting is refused as unavailable, naming the
    /// certificate.
    #[tokio::test]
    async fn a_certificate_from_an_unknown_ca_is_refused() {
        let Some(url) = url() else { return };
        let public_roots_only = with_param(&url, "ssl-ca", None);
        let why = refused(MySqlBackend::connect(&public_roots_only)).await;
        assert!(why.contains("certificate"), "{why}");
    }

    /// The user must log in over TLS: `ssl-mode=DISABLED` is refused.
    #[tokio::test]
    async fn plain_text_is_refused() {
        let Some(url) = url() else { return };
        let plain = with_param(&url, "ssl-mode", Some("DISABLED"));
        let why = refused(MySqlBackend::connect(&plain)).await;
        assert!(why.contains("Access denied"), "{why}");
    }

    /// A wrong password over a verified TLS connection is refused.
    #[tokio::test]
    async fn a_wrong_password_is_refused() {
        let Some(url) = url() else { return };
        let why = refused(MySqlBackend::connect(&with_password(&url, "wrong"))).await;
        assert!(why.contains("Access denied"), "{why}");
    }
}
