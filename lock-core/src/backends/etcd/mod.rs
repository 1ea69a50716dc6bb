//! The etcd backend (feature `etcd`): an etcd lease per acquisition, the key with the lowest
//! create revision holds the lock, each waiter watches only the key just before its own.
//!
//! ```no_run
//! use lock_core::{EtcdBackend, LockClient};
//!
//! # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
//! let backend = EtcdBackend::connect("http://127.0.0.1:2379").await?;
//! let locks = LockClient::builder(backend).namespace("shop").build()?;
//! let guard = locks.lock("sku:42").await?;
//! guard.release().await?;
//! # Ok(()) }
//! ```
//!
//! # Layout in etcd
//! The lock `shop:sku:42` with the default prefix `lock` is the key range `lock/shop:sku:42/`
//! (`/` and `%` in the name are percent-encoded, so one lock's range never holds another's
//! keys). Each acquisition grants an etcd lease and puts `lock/shop:sku:42/<lease id in hex>`
//! (value: the owner token) under it, as etcd's own `concurrency.Mutex` does. The key with the
//! lowest create revision holds the lock; a waiter watches the deletion of the key created just
//! before its own, so a release wakes exactly one waiter.
//!
//! # Fencing
//! The fencing token is the holder key's create revision: etcd's revision counter never goes
//! back, and holders are granted in create-revision order.
//!
//! # Leases
//! The watchdog's renewals are keep-alives of the etcd lease plus a check that the key is still
//! ours. etcd lease TTLs are whole seconds and the server raises short ones to its minimum
//! (about 2 s with default election settings), so the TTL asked for is rounded up for etcd,
//! and the exact TTL is kept by the holder's process: a lease not renewed within its TTL is
//! revoked at the TTL. A holder whose process dies is freed by etcd after the rounded-up TTL.
//! `lost()` fires at once when the key is deleted or its lease revoked or expired (the holder
//! watches its own key), and when keep-alives fail until the lease can no longer be trusted.
//! Extending a fixed lease beyond the TTL it was acquired with keeps etcd's lease at the
//! original TTL; if that runs out first, `lost()` tells the holder.
//!
//! # Round trips
//! An uncontended acquire is a lease grant and one transaction; a release is one transaction
//! (the lease is revoked in the background). A waiter adds a read and a watch per wake-up, plus
//! keep-alives of its own lease while it waits; it also looks again on a capped, jittered timer
//! ([`poll_cap`]) should a watch event be lost.
//!
//! [`poll_cap`]: EtcdBackendBuilder::poll_cap

mod held;
mod keys;
mod queue;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use etcd_client as etcd;
use tokio::time::Instant;

use self::queue::Turn;
use crate::backend::{AcquireRequest, Capabilities, Grant, LeaseKind, LockBackend};
use crate::backends::expiry::Expiry;
use crate::{LockError, LockKey, OwnerToken, Result};

const BACKEND: &str = "etcd";

/// Locks in an etcd cluster.
///
/// Cheap to clone: clones share one gRPC channel.
#[derive(Clone)]
pub struct EtcdBackend {
    shared: Arc<Shared>,
}

struct Shared {
    client: etcd::Client,
    endpoints: Vec<String>,
    prefix: String,
    config: EtcdConfig,
}

#[derive(Clone, Copy, Debug)]
struct EtcdConfig {
    response_timeout: Duration,
    connect_timeout: Duration,
    poll_cap: Duration,
    attempts: u32,
}

/// A lease held in etcd: our key and the etcd lease it is attached to.
#[derive(Debug)]
pub struct EtcdLease {
    key: String,
    lease_id: i64,
    create_revision: i64,
    expiry: Arc<Expiry>,
}

/// Settings of an [`EtcdBackend`]; start from [`EtcdBackend::builder`].
#[derive(Clone, Debug)]
#[must_use]
pub struct EtcdBackendBuilder {
    endpoints: Vec<String>,
    prefix: String,
    config: EtcdConfig,
}

impl EtcdBackendBuilder {
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

    /// How many times a request whose reply was lost is sent again (default 3 in all).
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.config.attempts = attempts;
        self
    }

    /// Checks the settings, connects and checks that the cluster answers.
    pub async fn connect(self) -> Result<EtcdBackend> {
        keys::validate_prefix(&self.prefix)?;
        let config = self.config;
        if config.attempts == 0
            || config.response_timeout.is_zero()
            || config.connect_timeout.is_zero()
            || config.poll_cap.is_zero()
        {
            return Err(LockError::InvalidConfig(
                "etcd attempts, timeouts and poll cap must be positive".into(),
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
                attempts: 3,
            },
        }
    }

    /// The key range (a prefix) holding the queue of the lock named `full_key`
    /// (`namespace:key`), for operators and tests.
    #[must_use]
    pub fn lock_prefix(&self, full_key: &str) -> String {
        keys::lock_prefix(&self.shared.prefix, full_key)
    }

    /// The etcd client this backend uses, for other work on the same channel, operators and
    /// tests.
    #[must_use]
    pub fn client(&self) -> etcd::Client {
        self.shared.client.clone()
    }

    /// Runs a request with the response timeout, sending it again (a fresh request built by
    /// `request`) when its reply was lost. Every request sent through here is idempotent.
    async fn call<T, F, Fut>(&self, operation: &'static str, mut request: F) -> Result<T>
    where
        F: FnMut(etcd::Client) -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd::Error>>,
    {
        let config = &self.shared.config;
        let mut failures = 0;
        loop {
            let sent = request(self.shared.client.clone());
            let last = failures + 1 >= config.attempts;
            match tokio::time::timeout(config.response_timeout, sent).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(error)) if !last && is_transient(&error) => {
                    tracing::debug!(operation, %error, "etcd reply lost; sending again");
                }
                Ok(Err(error)) => return Err(to_lock_error(error)),
                Err(_) if !last => {}
                Err(_) => {
                    return Err(LockError::Timeout {
                        backend: BACKEND,
                        operation,
                        after: config.response_timeout,
                    })
                }
            }
            failures += 1;
            tokio::time::sleep(Duration::from_millis(20) * failures).await;
        }
    }

    /// Revokes an etcd lease (deleting its key), logging failures: the lease's TTL ends it
    /// anyway.
    async fn revoke_quietly(&self, lease_id: i64) {
        let revoked = self
            .call("revoke", |mut c| async move {
                match c.lease_revoke(lease_id).await {
                    Err(error) if lease_gone(&error) => Ok(()),
                    other => other.map(drop),
                }
            })
            .await;
        if let Err(error) = revoked {
            tracing::debug!(%error, lease_id, "revoking an etcd lease failed; its TTL ends it");
        }
    }

    /// Revokes in a spawned task (from drop guards and timers).
    fn revoke_in_background(&self, lease_id: i64) {
        let backend = self.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { backend.revoke_quietly(lease_id).await });
        }
    }
}

impl LockBackend for EtcdBackend {
    type Lease = EtcdLease;

    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::new(BACKEND);
        caps.push_wakeups = true;
        caps.loss_push = true;
        caps
    }

    async fn acquire(&self, request: AcquireRequest<'_>) -> Result<Option<Grant<EtcdLease>>> {
        if request.kind != LeaseKind::Exclusive {
            return Err(request.kind.unsupported(BACKEND));
        }
        let prefix = self.lock_prefix(request.key.full());
        loop {
            let mut queued = self.enqueue(&prefix, request.owner, request.ttl).await?;
            match self.wait_turn(&mut queued, &prefix, &request).await? {
                Turn::Holds { sent } => {
                    let (key, lease_id, create_revision) = queued.keep();
                    return Ok(Some(self.grant(
                        key,
                        lease_id,
                        create_revision,
                        request.ttl,
                        sent,
                    )));
                }
                Turn::HeldBefore {
                    key,
                    lease_id,
                    create_revision,
                } => {
                    // A retry by an owner that already holds the lock: the same grant again.
                    let sent = Instant::now();
                    queued.remove().await;
                    return Ok(Some(self.grant(
                        key,
                        lease_id,
                        create_revision,
                        request.ttl,
                        sent,
                    )));
                }
                Turn::Busy => {
                    queued.remove().await;
                    return Ok(None);
                }
                // Our key vanished while waiting (lease expired or revoked, key deleted): queue
                // again with a new lease, at the end.
                Turn::Lost => {}
            }
        }
    }

    async fn renew(&self, lease: &EtcdLease, ttl: Option<Duration>) -> Result<bool> {
        if lease.expiry.is_ended() {
            return Ok(false);
        }
        let sent = Instant::now();
        if ttl.is_some() && !self.keep_alive(lease.lease_id).await? {
            lease.expiry.end();
            return Ok(false);
        }
        let key = lease.key.clone();
        let found = self
            .call("renew", |mut c| {
                let key = key.clone();
                async move { c.get(key, None).await }
            })
            .await?;
        let ours = found
            .kvs()
            .first()
            .is_some_and(|kv| kv.create_revision() == lease.create_revision);
        if !ours {
            lease.expiry.end();
            return Ok(false);
        }
        Ok(match ttl {
            Some(ttl) => lease.expiry.extend(sent + ttl),
            None => !lease.expiry.is_ended(),
        })
    }

    async fn release(&self, lease: &EtcdLease) -> Result<bool> {
        // Stop the TTL timer, but delete whether or not the lease had ended already: a release
        // cut short after ending it (its future dropped) is sent again, and must still delete.
        // The delete is owner-checked by the key's create revision.
        lease.expiry.end();
        let mut tries = 0;
        let (key, revision) = (lease.key.clone(), lease.create_revision);
        let deleted = self
            .call("release", |mut c| {
                tries += 1;
                let txn = etcd::Txn::new()
                    .when([etcd::Compare::create_revision(
                        key.clone(),
                        etcd::CompareOp::Equal,
                        revision,
                    )])
                    .and_then([etcd::TxnOp::delete(key.clone(), None)]);
                async move { c.txn(txn).await }
            })
            .await?
            .succeeded();
        // The key is gone; the lease has nothing left to keep. Revoke it off the caller's path.
        self.revoke_in_background(lease.lease_id);
        // After a lost reply the first delete may have gone through: the key was ours then.
        Ok(deleted || tries > 1)
    }

    /// Revokes the lease of every key in the lock's range stored under this owner token, which
    /// deletes the key. gRPC requests on one channel are not ordered, but a dropped
    /// acquisition's own guard revokes its lease as soon as the lease exists, so a `put` still
    /// in flight lands on a revoked lease (and fails) or is deleted with it; this pass finds
    /// what a failed acquisition left.
    async fn release_abandoned(
        &self,
        key: &LockKey,
        kind: LeaseKind,
        owner: OwnerToken,
    ) -> Result<bool> {
        if kind != LeaseKind::Exclusive {
            // Nothing of another kind is ever stored here (`acquire` refuses it).
            return Ok(false);
        }
        let prefix = self.lock_prefix(key.full());
        let reply = self
            .call("release", |mut c| {
                let prefix = prefix.clone();
                async move {
                    c.get(prefix, Some(etcd::GetOptions::new().with_prefix()))
                        .await
                }
            })
            .await?;
        let owner = owner.to_hex();
        let mut found = false;
        for kv in reply.kvs() {
            if kv.value() == owner.as_bytes() {
                self.revoke_quietly(kv.lease()).await;
                found = true;
            }
        }
        Ok(found)
    }
}

impl std::fmt::Debug for EtcdBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdBackend")
            .field("endpoints", &self.shared.endpoints)
            .field("prefix", &self.shared.prefix)
            .finish_non_exhaustive()
    }
}

/// The etcd lease TTL for a lock TTL: whole seconds, rounded up.
fn ttl_seconds(ttl: Duration) -> i64 {
    let secs = ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0);
    i64::try_from(secs.max(1)).unwrap_or(i64::MAX)
}

/// gRPC `Unavailable` (no leader, connection lost) and `DeadlineExceeded`, and transport errors.
fn is_transient(error: &etcd::Error) -> bool {
    const DEADLINE_EXCEEDED: i32 = 4;
    const UNAVAILABLE: i32 = 14;
    match error {
        etcd::Error::TransportError(_) | etcd::Error::IoError(_) => true,
        etcd::Error::GRpcStatus(status) => {
            matches!(i32::from(status.code()), DEADLINE_EXCEEDED | UNAVAILABLE)
        }
        _ => false,
    }
}

/// The lease does not exist (any more): revoked, expired, never granted.
fn lease_gone(error: &etcd::Error) -> bool {
    match error {
        etcd::Error::LeaseKeepAliveError(message) => message.contains("not found"),
        etcd::Error::GRpcStatus(status) => status.message().contains("lease not found"),
        _ => false,
    }
}

fn to_lock_error(error: etcd::Error) -> LockError {
    LockError::unavailable(BACKEND, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_round_up_to_whole_seconds() {
        assert_eq!(ttl_seconds(Duration::from_millis(300)), 1);
        assert_eq!(ttl_seconds(Duration::from_secs(2)), 2);
        assert_eq!(ttl_seconds(Duration::from_millis(2001)), 3);
    }
}
