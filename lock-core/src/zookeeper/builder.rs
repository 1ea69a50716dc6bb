//! Settings of a [`ZooKeeperBackend`] and opening its session.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::security::Security;
use super::session::Session;
use super::{path, Shared, ZooKeeperBackend, BACKEND};
use crate::breaker::{Breaker, BreakerOptions};
use crate::{LockError, Result};

/// The settings a backend keeps.
#[derive(Clone, Copy, Debug)]
pub(super) struct ZkConfig {
    pub(super) session_timeout: Duration,
    pub(super) connect_timeout: Duration,
    pub(super) poll_cap: Duration,
    pub(super) attempts: u32,
    pub(super) breaker: BreakerOptions,
}

/// Settings of a [`ZooKeeperBackend`]; start from [`ZooKeeperBackend::builder`].
#[derive(Clone, Debug)]
#[must_use]
pub struct ZooKeeperBackendBuilder {
    cluster: String,
    root: String,
    config: ZkConfig,
    security: Security,
}

impl ZooKeeperBackendBuilder {
    /// The node every lock node is created under (default `/locks`). Give a Curator user the
    /// same root and key to share locks with it.
    pub fn root(mut self, root: impl Into<String>) -> Self {
        self.root = root.into();
        self
    }

    /// The session timeout to ask for (default 10 s; the server bounds it, by default to
    /// 2–20 × its `tickTime`). A holder whose process dies frees its locks after this.
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.config.session_timeout = timeout;
        self
    }

    /// How long opening a session may take (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.config.connect_timeout = timeout;
        self
    }

    /// The longest a waiter goes without checking what it waits for again, in case a watch
    /// event is lost (default 1 s). A lock waiter checks the node ahead of it and its own (two
    /// `exists`); a semaphore waiter lists the queue.
    pub fn poll_cap(mut self, cap: Duration) -> Self {
        self.config.poll_cap = cap;
        self
    }

    /// How many times a request whose connection was lost is sent again (default 3 in all).
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.config.attempts = attempts;
        self
    }

    /// When the [circuit breaker](crate::breaker) opens and how it probes (default
    /// [`BreakerOptions::new`]: 3 failures in a row, a 0.5–5 s cool-down).
    /// `BreakerOptions::new().fail_fast(false)` makes every call wait for its own timeouts
    /// again, with the breaker only reporting.
    pub fn breaker(mut self, options: BreakerOptions) -> Self {
        self.config.breaker = options;
        self
    }

    /// Verify `tcp+tls://` servers against these CA certificates (PEM, one or more): required
    /// for TLS, as zookeeper-client knows no public root certificates. The server's
    /// certificate must name the host of the connect string (an IP address works when the
    /// certificate lists it).
    #[cfg(feature = "zookeeper-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "zookeeper-tls")))]
    pub fn ca_certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.security.ca = Some(pem.into());
        self
    }

    /// Show this client certificate and its private key (PEM) to `tcp+tls://` servers: for
    /// servers with `ssl.clientAuth=need` (ZooKeeper's default for its secure port) or `want`.
    #[cfg(feature = "zookeeper-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "zookeeper-tls")))]
    pub fn client_identity_pem(
        mut self,
        certificate: impl Into<Vec<u8>>,
        key: impl Into<Vec<u8>>,
    ) -> Self {
        self.security.identity = Some((certificate.into(), key.into()));
        self
    }

    /// Authenticate every session with SASL DIGEST-MD5 as `user` (a `user_<name>` of the
    /// server's JAAS `Server` section), as a server with `enforce.auth.enabled=true` and
    /// `enforce.auth.schemes=sasl` demands. A password the server refuses fails `connect` as
    /// [`LockError::Unavailable`]. DIGEST-MD5 does not encrypt the session: use it over TLS.
    #[cfg(feature = "zookeeper-sasl")]
    #[cfg_attr(docsrs, doc(cfg(feature = "zookeeper-sasl")))]
    pub fn sasl_digest_md5(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.security.sasl = Some((user.into(), password.into()));
        self
    }

    /// Checks the settings and opens the session.
    pub async fn connect(self) -> Result<ZooKeeperBackend> {
        path::validate_root(&self.root)?;
        self.config.breaker.validate()?;
        let config = self.config;
        if config.attempts == 0 || config.connect_timeout.is_zero() || config.poll_cap.is_zero() {
            return Err(LockError::InvalidConfig(
                "ZooKeeper attempts, connect timeout and poll cap must be positive".into(),
            ));
        }
        let security = self.security.prepare(&self.cluster)?;
        let session = Session::connect(
            &self.cluster,
            &security,
            config.session_timeout,
            config.connect_timeout,
        )
        .await?;
        Ok(ZooKeeperBackend {
            shared: Arc::new(Shared {
                cluster: self.cluster,
                security,
                root: self.root,
                config,
                session: Mutex::new(session),
                reconnecting: tokio::sync::Mutex::new(()),
                breaker: Breaker::new(BACKEND, config.breaker),
            }),
        })
    }
}

impl ZooKeeperBackend {
    /// Connects with default settings to `cluster`, a ZooKeeper connect string
    /// (`host:port,host:port[/chroot]`).
    pub async fn connect(cluster: &str) -> Result<Self> {
        Self::builder(cluster).connect().await
    }

    /// Starts configuring a backend for the connect string `cluster`.
    pub fn builder(cluster: impl Into<String>) -> ZooKeeperBackendBuilder {
        ZooKeeperBackendBuilder {
            cluster: cluster.into(),
            root: "/locks".into(),
            config: ZkConfig {
                session_timeout: Duration::from_secs(10),
                connect_timeout: Duration::from_secs(5),
                poll_cap: Duration::from_secs(1),
                attempts: 3,
                breaker: BreakerOptions::new(),
            },
            security: Security::default(),
        }
    }
}
