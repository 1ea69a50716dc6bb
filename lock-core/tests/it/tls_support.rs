//! Shared by the TLS suites (`etcd_tls`, `zookeeper_tls`, `sql_tls`): a TLS server's settings
//! from the environment, a refused connection checked as typed and quick, and a lock handed
//! over between two clients.

use std::future::Future;
use std::time::Duration;

use lock_core::{LockClient, LockError};
use tokio::time::Instant;

use crate::conformance::unique_key;

/// The stack's TLS server and what a client needs to reach it (the files' contents, PEM).
#[cfg(any(
    feature = "etcd-tls",
    all(feature = "zookeeper-tls", feature = "zookeeper-sasl")
))]
#[derive(Clone)]
pub(crate) struct TlsServer {
    pub(crate) url: String,
    pub(crate) ca: String,
    pub(crate) certificate: String,
    pub(crate) key: String,
    pub(crate) user: String,
    pub(crate) password: String,
}

#[cfg(any(
    feature = "etcd-tls",
    all(feature = "zookeeper-tls", feature = "zookeeper-sasl")
))]
impl TlsServer {
    /// The settings under `prefix` (`<prefix>_URL`, `_CA`, `_CERT`, `_KEY` and `_USER`,
    /// `user:password`); `None` (after saying so) when the suite may skip.
    pub(crate) fn from_env(prefix: &str) -> Option<Self> {
        let url =
            lock_testing::server_url(&format!("{prefix}_URL")).unwrap_or_else(|e| panic!("{e}"))?;
        let var = |suffix: &str| {
            let name = format!("{prefix}_{suffix}");
            std::env::var(&name).unwrap_or_else(|_| panic!("{name} beside the URL"))
        };
        let read = |suffix: &str| {
            let path = var(suffix);
            std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{prefix}_{suffix}={path}: {e}"))
        };
        let user = var("USER");
        let (user, password) = user.split_once(':').expect("user:password");
        Some(Self {
            ca: read("CA"),
            certificate: read("CERT"),
            key: read("KEY"),
            user: user.to_owned(),
            password: password.to_owned(),
            url,
        })
    }
}

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

/// `attempt` fails with an error that `typed` accepts, within 5 s (typed, no panic, no hang);
/// returns the error's chain.
pub(crate) async fn refused<T>(
    attempt: impl Future<Output = lock_core::Result<T>>,
    typed: impl Fn(&LockError) -> bool,
) -> String {
    let started = Instant::now();
    let Err(error) = attempt.await else {
        panic!("connected");
    };
    assert!(typed(&error), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{error}");
    chain(&error)
}

#[cfg(any(feature = "etcd-tls", feature = "postgres-tls", feature = "mysql-tls"))]
/// A lock taken by `first`, waited for by `second` and handed over to it.
pub(crate) async fn lock_wait_and_hand_over(first: LockClient, second: LockClient) {
    let key = unique_key("tls");
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
