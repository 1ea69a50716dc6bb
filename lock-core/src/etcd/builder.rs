//! The backend's settings and connecting.

use std::sync::Arc;
use std::time::Duration;

use etcd_client as etcd;

use super::leases::Spares;
use super::session::Session;
use super::watch::Watches;
use super::{keys, to_lock_error, EtcdBackend, Shared, BACKEND};
use crate::breaker::{Breaker, BreakerOptions};
use crate::{LockError, Result};

/// The settings the backend runs with.
#[derive(Clone, Copy, Debug)]
pub(super) struct EtcdConfig {
    /// How long one request may take.
    pub(super) response_timeout: Duration,
    /// How long connecting may take.
    pub(super) connect_timeout: Duration,
    /// The longest a waiter goes without looking again.
    pub(super) poll_cap: Duration,
    /// The session lease's TTL.
    pub(super) session_ttl: Duration,
    /// How many times a request is sent in all.
    pub(super) attempts: u32,
    /// When the channel's circuit breaker opens.
    pub(super) breaker: BreakerOptions,
}

/// Settings of an [`EtcdBackend`]; start from [`EtcdBackend::builder`].
///
/// ```no_run
/// use std::time::Duration;
/// use lock_core::{EtcdBackend, LockClient};
///
/// # async fn example() -> Result<(), lock_core::LockError> {
/// let backend = EtcdBackend::builder("http://10.0.0.1:2379,http://10.0.0.2:2379")
///     .key_prefix("orders-lock")
///     .connect_timeout(Duration::from_secs(3))
///     .response_timeout(Duration::from_secs(1))
///     .session_ttl(Duration::from_secs(15))
///     .connect()
///     .await?;
/// let locks = LockClient::builder(backend).namespace("orders").build()?;
/// # Ok(()) }
/// ```
///
/// Over TLS (feature `etcd-tls`), with a private CA, a client certificate for etcd's
/// `--client-cert-auth` and a user of etcd's authentication:
///
/// ```no_run
/// # #[cfg(feature = "etcd-tls")]
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// use lock_core::EtcdBackend;
///
/// let backend = EtcdBackend::builder("https://etcd-1.internal:2379,https://etcd-2.internal:2379")
///     .ca_certificate_pem(std::fs::read("/etc/etcd/ca.crt")?)
///     .client_identity_pem(
///         std::fs::read("/etc/etcd/client.crt")?,
///         std::fs::read("/etc/etcd/client.key")?,
///     )
///     .user("orders", std::env::var("ETCD_PASSWORD")?)
///     .connect()
///     .await?;
/// # let _ = backend; Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct EtcdBackendBuilder {
    endpoints: Vec<String>,
    prefix: String,
    config: EtcdConfig,
    security: Security,
}

/// What the channel connects with besides the addresses: TLS material and a user.
#[derive(Clone, Default)]
struct Security {
    /// PEM of the CA certificates `https://` endpoints are verified against (default: the
    /// Mozilla roots).
    #[cfg(feature = "etcd-tls")]
    ca: Option<Vec<u8>>,
    /// PEM of the client certificate and its key.
    #[cfg(feature = "etcd-tls")]
    identity: Option<(Vec<u8>, Vec<u8>)>,
    /// etcd user and password.
    user: Option<(String, String)>,
}

impl std::fmt::Debug for Security {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("Security");
        #[cfg(feature = "etcd-tls")]
        debug
            .field("private_ca", &self.ca.is_some())
            .field("client_identity", &self.identity.is_some());
        // The password stays out of logs.
        debug
            .field("user", &self.user.as_ref().map(|(name, _)| name))
            .finish()
    }
}

impl Security {
    /// `options` with TLS for `https://` endpoints and the user, or why that cannot be.
    fn apply(
        &self,
        options: etcd::ConnectOptions,
        endpoints: &[String],
    ) -> Result<etcd::ConnectOptions> {
        let https = endpoints.iter().any(|e| e.starts_with("https://"));
        #[cfg(not(feature = "etcd-tls"))]
        if https {
            return Err(LockError::InvalidConfig(format!(
                "etcd endpoints {endpoints:?} are https://: TLS needs lock-core's `etcd-tls` \
                 feature"
            )));
        }
        #[cfg(feature = "etcd-tls")]
        let options = if https {
            let mut tls = etcd::TlsOptions::new();
            tls = match &self.ca {
                Some(pem) => tls.ca_certificate(etcd::Certificate::from_pem(pem)),
                None => tls.with_webpki_roots(),
            };
            if let Some((cert, key)) = &self.identity {
                tls = tls.identity(etcd::Identity::from_pem(cert, key));
            }
            options.with_tls(tls)
        } else if self.ca.is_some() || self.identity.is_some() {
            return Err(LockError::InvalidConfig(format!(
                "a CA or client certificate was given for the plain-text etcd endpoints \
                 {endpoints:?}: TLS endpoints are https://"
            )));
        } else {
            options
        };
        Ok(match &self.user {
            // A token lives for minutes (etcd's --auth-token-ttl): fetch a new one when it
            // expired instead of failing the call.
            Some((name, password)) => options
                .with_user(name.as_str(), password.as_str())
                .with_auto_token_refresh(true),
            None => options,
        })
    }
}

impl EtcdBackendBuilder {
    /// Default settings for `endpoints` (URLs separated by commas).
    pub(super) fn new(endpoints: &str) -> Self {
        EtcdBackendBuilder {
            endpoints: endpoints
                .split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(str::to_owned)
                .collect(),
            prefix: "lock".into(),
            config: EtcdConfig {
                response_timeout: Duration::from_secs(2),
                connect_timeout: Duration::from_secs(5),
                poll_cap: Duration::from_secs(1),
                session_ttl: Duration::from_secs(10),
                attempts: 3,
                breaker: BreakerOptions::new(),
            },
            security: Security::default(),
        }
    }

    /// Verify `https://` endpoints against these CA certificates (PEM, one or more) alone,
    /// instead of the Mozilla root certificates (webpki-roots) they are verified against by
    /// default: a cluster whose certificates a private CA signed.
    #[cfg(feature = "etcd-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd-tls")))]
    pub fn ca_certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.security.ca = Some(pem.into());
        self
    }

    /// Show this client certificate and its private key (PEM) to the server: for a cluster
    /// started with `--client-cert-auth`. With etcd's authentication on, a client that gives
    /// no [`user`](Self::user) acts as the user named by the certificate's common name.
    #[cfg(feature = "etcd-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd-tls")))]
    pub fn client_identity_pem(
        mut self,
        certificate: impl Into<Vec<u8>>,
        key: impl Into<Vec<u8>>,
    ) -> Self {
        self.security.identity = Some((certificate.into(), key.into()));
        self
    }

    /// Log in as this etcd user (etcd's authentication, `etcdctl auth enable`): a token is
    /// fetched at connect, a password the cluster refuses fails `connect` as
    /// [`LockError::Unavailable`], and an expired token is fetched again. The user needs
    /// read-write permission on the [key prefix](Self::key_prefix). Without TLS the password
    /// crosses the network in plain text: use `https://` endpoints.
    pub fn user(mut self, name: impl Into<String>, password: impl Into<String>) -> Self {
        self.security.user = Some((name.into(), password.into()));
        self
    }

    /// The prefix of every key this backend writes (default `lock`).
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long one request may take before it counts as lost (default 2 s).
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.config.response_timeout = timeout;
        self
    }

    /// How long connecting may take (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.config.connect_timeout = timeout;
        self
    }

    /// The longest a waiter goes without looking at the queue again, in case a watch event is
    /// lost (default 1 s).
    pub fn poll_cap(mut self, cap: Duration) -> Self {
        self.config.poll_cap = cap;
        self
    }

    /// The TTL of the session lease waiting entries live under (default 10 s, whole seconds,
    /// at least 1): how long the waiting entries of a process that died stay in line.
    pub fn session_ttl(mut self, ttl: Duration) -> Self {
        self.config.session_ttl = ttl;
        self
    }

    /// How many times a request whose reply was lost is sent again (default 3 in all).
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.config.attempts = attempts;
        self
    }

    /// When the channel's [circuit breaker](crate::breaker) opens and how it probes (default
    /// [`BreakerOptions::new`]: 3 failures in a row, a 0.5–5 s cool-down).
    /// `BreakerOptions::new().fail_fast(false)` makes every call wait for its own timeouts
    /// again, with the breaker only reporting.
    pub fn breaker(mut self, options: BreakerOptions) -> Self {
        self.config.breaker = options;
        self
    }

    /// Checks the settings, connects and checks that the cluster answers.
    pub async fn connect(self) -> Result<EtcdBackend> {
        keys::validate_prefix(&self.prefix)?;
        self.config.breaker.validate()?;
        let config = self.config;
        if config.attempts == 0
            || config.response_timeout.is_zero()
            || config.connect_timeout.is_zero()
            || config.poll_cap.is_zero()
            || config.session_ttl < Duration::from_secs(1)
        {
            return Err(LockError::InvalidConfig(
                "etcd attempts, timeouts and poll cap must be positive, the session TTL at least 1 s"
                    .into(),
            ));
        }
        if self.endpoints.is_empty() {
            return Err(LockError::InvalidConfig("no etcd endpoint given".into()));
        }
        let options = etcd::ConnectOptions::new()
            .with_connect_timeout(config.connect_timeout)
            .with_keep_alive(Duration::from_secs(5), config.response_timeout);
        let options = self.security.apply(options, &self.endpoints)?;
        let connecting = etcd::Client::connect(&self.endpoints, Some(options));
        let client = match tokio::time::timeout(config.connect_timeout, connecting).await {
            Ok(Ok(client)) => client,
            Ok(Err(error @ (etcd::Error::InvalidUri(_) | etcd::Error::InvalidArgs(_)))) => {
                return Err(LockError::InvalidConfig(format!(
                    "etcd endpoints {:?}: {error}",
                    self.endpoints
                )))
            }
            Ok(Err(error)) => return Err(to_lock_error(error)),
            Err(_) => {
                return Err(LockError::Timeout {
                    backend: BACKEND,
                    operation: "connect",
                    after: config.connect_timeout,
                })
            }
        };
        let backend = EtcdBackend {
            shared: Arc::new(Shared {
                session: Session::new(client.clone(), config.session_ttl),
                watches: Watches::start(client.clone(), config.response_timeout),
                spares: Spares::default(),
                in_flight: crate::backend::in_flight::InFlight::default(),
                acquiring: super::queue::LocalAcquires::default(),
                enqueues: tokio::sync::Semaphore::new(super::queue::ENQUEUES_IN_FLIGHT),
                breaker: Breaker::new(super::BACKEND, config.breaker),
                client,
                endpoints: self.endpoints,
                prefix: self.prefix,
                config,
            }),
        };
        // The channel connects lazily: make sure someone answers before handing it out.
        backend
            .call("connect", |mut c| async move { c.status().await })
            .await?;
        Ok(backend)
    }
}

impl EtcdBackend {
    /// Connects with default settings to `endpoints`: one URL (`http://host:2379`) or several
    /// separated by commas.
    pub async fn connect(endpoints: &str) -> Result<Self> {
        Self::builder(endpoints).connect().await
    }

    /// Starts configuring a backend for `endpoints` (URLs separated by commas).
    pub fn builder(endpoints: &str) -> EtcdBackendBuilder {
        EtcdBackendBuilder::new(endpoints)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `https://` endpoint in a build without `etcd-tls` is refused before any connection,
    /// naming the feature.
    #[cfg(not(feature = "etcd-tls"))]
    #[tokio::test]
    async fn https_needs_the_tls_feature() {
        let error = EtcdBackend::connect("https://127.0.0.1:1")
            .await
            .expect_err("no TLS in this build");
        assert!(
            matches!(&error, LockError::InvalidConfig(why) if why.contains("etcd-tls")),
            "{error:?}"
        );
    }

    /// The password stays out of the builder's `Debug`.
    #[test]
    fn debug_leaves_the_password_out() {
        let builder = EtcdBackend::builder("http://127.0.0.1:1").user("orders", "hunter2");
        let shown = format!("{builder:?}");
        assert!(
            shown.contains("orders") && !shown.contains("hunter2"),
            "{shown}"
        );
    }
}
