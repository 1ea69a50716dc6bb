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
#[derive(Clone, Debug)]
#[must_use]
pub struct EtcdBackendBuilder {
    endpoints: Vec<String>,
    prefix: String,
    config: EtcdConfig,
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
        }
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
