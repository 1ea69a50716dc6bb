//! [`LockClientBuilder`]: a client's namespace, default lease and fence retention, checked
//! when it is built.

use std::sync::Arc;
use std::time::Duration;

use crate::backend::key::validate_namespace;
use crate::backend::{DynLockBackend, HolderLabel};
use crate::lease::{MAX_LEASE_TTL, MIN_LEASE_TTL};
use crate::lock::client::{ClientInner, LockClient};
use crate::lock::held::HeldRegistry;
use crate::lock::shutdown::LiveLeases;
use crate::{LeaseMode, LockError, Result};

/// Configures a [`LockClient`].
#[must_use]
pub struct LockClientBuilder {
    backend: Arc<dyn DynLockBackend>,
    namespace: String,
    default_lease: LeaseMode,
    fence_retention: Option<Duration>,
    label: Option<HolderLabel>,
}

impl LockClientBuilder {
    /// Settings on `backend` with `namespace` and `default_lease`, no fence retention of its
    /// own; from [`LockClient::builder`].
    pub(crate) fn new(
        backend: Arc<dyn DynLockBackend>,
        namespace: String,
        default_lease: LeaseMode,
    ) -> Self {
        Self {
            backend,
            namespace,
            default_lease,
            fence_retention: None,
            label: None,
        }
    }

    /// Places every key under `namespace` (`namespace:key`), so services sharing a backend do
    /// not collide. ASCII letters, digits, `-`, `_` and `.`, at most 64 bytes; empty (the default)
    /// is no namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The lease used when a request names none (default: a 30 s watchdog lease).
    pub fn lease(mut self, lease: LeaseMode) -> Self {
        self.default_lease = lease;
        self
    }

    /// How long after each grant, at least, the store keeps what makes the key's next fencing
    /// token larger (within `MIN_LEASE_TTL..=MAX_LEASE_TTL`; default: the backend's own, a
    /// day on Redis and PostgreSQL). For locks on keys that anonymous requests make up (a
    /// cache's URLs), so each leaves nothing behind for long: a Redis fencing counter expires
    /// this long after the last grant (or later: see [`LockGuard::keep_fence_for`]), a
    /// PostgreSQL lock row is swept this long after its lease ended (at the next sweep). A
    /// counter that is gone starts again from the server's clock, past every token it gave;
    /// what the retention adds is room for the server's clock to be stepped back meanwhile.
    ///
    /// ```
    /// use std::time::Duration;
    /// use lock_core::{LockClient, MemoryBackend};
    ///
    /// let locks = LockClient::builder(MemoryBackend::new())
    ///     .fence_retention(Duration::from_secs(60))
    ///     .build();
    /// assert!(locks.is_ok());
    /// ```
    ///
    /// [`LockGuard::keep_fence_for`]: crate::LockGuard::keep_fence_for
    pub fn fence_retention(mut self, retention: Duration) -> Self {
        self.fence_retention = Some(retention);
        self
    }

    /// Who this client's leases say they belong to, kept with each lease and wait where an
    /// operator reads it ([`LockAdmin`](crate::operator::LockAdmin), `lockctl`, the admin
    /// page). Default: [`HolderLabel::from_process`] (host, pid, executable name), read once
    /// when the client is built. Add the version:
    ///
    /// ```
    /// use lock_core::{HolderLabel, LockClient, MemoryBackend};
    ///
    /// let label = HolderLabel::from_process().service("checkout", "2.4.1")?;
    /// let locks = LockClient::builder(MemoryBackend::new()).label(label).build()?;
    /// assert_eq!(locks.label().get("version"), Some("2.4.1"));
    /// # Ok::<(), lock_core::LockError>(())
    /// ```
    pub fn label(mut self, label: HolderLabel) -> Self {
        self.label = Some(label);
        self
    }

    /// Checks the settings and builds the client.
    pub fn build(self) -> Result<LockClient> {
        validate_namespace(&self.namespace)?;
        self.default_lease.validate()?;
        if let Some(retention) = self.fence_retention {
            crate::lease::validate_ttl(retention).map_err(|_| LockError::InvalidDuration {
                what: "fence retention",
                reason: format!(
                    "{retention:?} is outside {:?}..={:?}",
                    MIN_LEASE_TTL, MAX_LEASE_TTL
                ),
            })?;
        }
        Ok(LockClient {
            inner: Arc::new(ClientInner {
                backend: self.backend,
                namespace: self.namespace,
                default_lease: self.default_lease,
                fence_retention: self.fence_retention,
                label: self.label.unwrap_or_else(process_label),
                held: HeldRegistry::default(),
                live: LiveLeases::default(),
                watchdog: Arc::default(),
            }),
        })
    }
}

/// The label of a client built without one: this process's, read once per process.
pub(crate) fn process_label() -> HolderLabel {
    static PROCESS: std::sync::OnceLock<HolderLabel> = std::sync::OnceLock::new();
    PROCESS.get_or_init(HolderLabel::from_process).clone()
}
