//! The etcd backend (feature `etcd`): queue entries ordered by create revision, waiting under
//! one session lease per backend and one shared watch stream, holders under a lease of their
//! own TTL. It offers every primitive ([`Primitives::ALL`]).
//!
//! ```no_run
//! use lock_core::{EtcdBackend, LockClient};
//!
//! # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
//! let backend = EtcdBackend::connect("http://127.0.0.1:2379").await?;
//! let locks = LockClient::builder(backend).namespace("shop").build()?;
//! let guard = locks.lock("sku:42").await?;
//! guard.release().await?;
//! let permit = locks.semaphore("pdf-render", 4).acquire(1).await?;
//! permit.release().await?;
//! # Ok(()) }
//! ```
//!
//! # Layout in etcd
//! The lock `shop:sku:42` with the default prefix `lock` is the key range `lock/shop:sku:42/`;
//! the fair lock, read-write lock and semaphore of the same name are the ranges
//! `lock/~fair/shop:sku:42/`, `lock/~rw/...` and `lock/~sem/...`, and the latch is the key
//! `lock/~latch/shop:sku:42` (see `keys.rs`; names are percent-encoded so no range holds
//! another's keys). Each acquisition puts one entry, `<range><owner token>`, whose value
//! carries the owner token, the kind (and permit count) and, once granted, a holding mark.
//! Entries are ordered by create revision, and who holds what is `queue_rule::admit`, the rule
//! every ordered-queue backend shares: the first entry holds a lock or fair lock; readers share
//! until a write entry is ahead; permits are granted first come, first served within the
//! semaphore's size (the key `size` in its range). A waiter watches only what it waits for:
//! the entry just ahead (locks, writers), the last writer ahead (readers), or the range (a
//! semaphore, where any leaver frees permits), so a release wakes one exclusive waiter.
//!
//! # Waiting: the session and the shared watch stream
//! A backend (and its clones) has one *session*: an etcd lease kept alive in the background.
//! Waiting entries are put under it, so waiting costs no lease of its own, and the entries of a
//! process that dies vanish when its session lease runs out ([`session_ttl`], default 10 s).
//! All watches, waiters' and holders', are multiplexed on **one** watch stream per backend,
//! routed by watch id; the waiters of one queue share one watch of its range, which the
//! backend keeps while it has waiters there (and a few seconds after), and an event wakes only
//! the waiters it concerns. A waiter starts watching, then looks at the queue, so nothing
//! between its look and its watch is missed; a dropped wait cancels its part of the watch.
//! Should an event be lost, waiters also check again on a capped, jittered timer ([`poll_cap`]):
//! a waiter behind one entry reads that entry alone (count only), whatever the queue's length.
//!
//! # Holding: a lease per lock
//! An admitted entry *claims*: one transaction, guarded by the entry's create revision, puts it
//! again under a lease of the lock's TTL (a re-put keeps the create revision) and reads the
//! queue ahead to confirm the admission. A request that finds its queue empty goes in holding
//! at once. The per-lock lease of a clean release has no keys left and is kept for the
//! backend's next acquisition of the same TTL, so a stream of acquisitions grants no leases.
//!
//! # Fencing
//! The fencing token is the revision of the write that put the entry in holding (the put of
//! an entry that went in holding at once, whose create revision it is, or the claim of an
//! admitted waiter): etcd's revision counter never goes back, and an exclusive holder claims
//! only once every entry ahead of it has gone, so after the previous holder's delete; a write
//! lock likewise after every read ahead of it. A forced release (see [`OperatorBackend`]) is
//! a delete too, so every grant after it has a larger token than the release's revision,
//! including a waiter queued before it. (Versions before the operator's view used the create
//! revision, which a waiter queued before a forced release would have kept: during a rolling
//! upgrade, a holder of the older version may present a token smaller than its predecessor's
//! and be refused by a fenced resource, which is safe but not live.)
//!
//! # Labels, the operator's view and the audit trail
//! Each entry's value carries the request's [`HolderLabel`](crate::HolderLabel) and the times
//! of the request and the grant (see `keys.rs`), in the put that already happens. Inspection,
//! listing, forced release and the audit records (`<prefix>/~audit/...`, under an etcd lease
//! of their retention) are described in `operator/mod.rs`.
//!
//! [`OperatorBackend`]: crate::backend::OperatorBackend
//!
//! # Leases
//! The watchdog's renewals are keep-alives of the per-lock lease plus a check that the entry is
//! still ours. etcd lease TTLs are whole seconds and the server raises short ones to its
//! minimum (about 2 s with default election settings), so the TTL asked for is rounded up for
//! etcd, and the exact TTL is kept by the holder's process: a lease not renewed within its TTL
//! is revoked at the TTL. A holder whose process dies is freed by etcd after the rounded-up
//! TTL. `lost()` fires at once when the entry is deleted or its lease revoked or expired (the
//! holder watches its own entry; an entry a forced release deleted fires it as
//! [`LostReason::Revoked`](crate::LostReason::Revoked), after one read of the release's audit
//! record), and when keep-alives fail until the lease can no longer be trusted. Extending a fixed lease beyond the TTL it was acquired with keeps etcd's lease at
//! the original TTL; if that runs out first, `lost()` tells the holder.
//!
//! # TLS and authentication
//! With `etcd-tls`, `https://` endpoints are verified against the Mozilla roots or the CA given
//! to [`ca_certificate_pem`](EtcdBackendBuilder::ca_certificate_pem), with a client
//! certificate from [`client_identity_pem`](EtcdBackendBuilder::client_identity_pem);
//! [`user`](EtcdBackendBuilder::user) logs in as an etcd user (any build).
//!
//! # Round trips
//! An uncontended acquire is one transaction (plus a keep-alive of the reused lease, sent
//! alongside; a lease grant the first time); a release is one transaction. A waiter adds the
//! transaction that queues it, a read after its watch is in place, and the claim (one
//! transaction, with a keep-alive alongside) once admitted: a handoff is the holder's delete,
//! the watch event and the claim.
//!
//! [`poll_cap`]: EtcdBackendBuilder::poll_cap
//! [`session_ttl`]: EtcdBackendBuilder::session_ttl
//! [`Primitives::ALL`]: crate::backend::Primitives::ALL

mod acquire;
mod builder;
mod claim;
mod election;
mod held;
mod keys;
mod latch;
mod leases;
mod look;
mod operator;
mod queue;
mod router;
mod semaphore;
mod session;
mod watch;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use etcd_client as etcd;

pub use self::builder::EtcdBackendBuilder;
use self::builder::EtcdConfig;
pub use self::held::EtcdLease;
use self::leases::Spares;
use self::session::Session;
use self::watch::Watches;
use crate::backend::LeaseKind;
use crate::breaker::Breaker;
use crate::{LockError, Result};

/// The backend's name in errors and metrics.
const BACKEND: &str = "etcd";

/// Locks and the other primitives in an etcd cluster.
///
/// Cheap to clone: clones share one gRPC channel, one session lease and one watch stream.
#[derive(Clone)]
pub struct EtcdBackend {
    shared: Arc<Shared>,
}

/// What the clones of one backend share.
struct Shared {
    client: etcd::Client,
    endpoints: Vec<String>,
    prefix: String,
    config: EtcdConfig,
    session: Session,
    watches: Watches,
    spares: Spares,
    /// Entry puts in flight, which run to their end even if their caller goes away.
    in_flight: crate::backend::in_flight::InFlight,
    /// Acquisitions under way, per queue.
    acquiring: queue::LocalAcquires,
    /// Turns to put an entry (`queue::ENQUEUES_IN_FLIGHT`).
    enqueues: tokio::sync::Semaphore,
    /// The channel's circuit breaker: every request of [`EtcdBackend::call`] goes through it.
    breaker: Breaker,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Spare leases hold no keys: give them back now rather than at their TTL.
        let spares = self.spares.drain();
        if spares.is_empty() {
            return;
        }
        let mut client = self.client.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                for lease in spares {
                    client.lease_revoke(lease.id).await.ok();
                }
            });
        }
    }
}

impl EtcdBackend {
    /// The key range (a prefix) holding the queue of the lock named `full_key`
    /// (`namespace:key`), for operators and tests.
    #[must_use]
    pub fn lock_prefix(&self, full_key: &str) -> String {
        keys::lock_prefix(&self.shared.prefix, full_key)
    }

    /// The key range (a prefix) holding the queue of the primitive of `kind` named `full_key`
    /// (a fair lock, a read-write lock or a semaphore; [`LeaseKind::Exclusive`] is the lock's
    /// [`lock_prefix`](Self::lock_prefix)), for operators and tests.
    #[must_use]
    pub fn queue_prefix(&self, kind: LeaseKind, full_key: &str) -> String {
        keys::queue_prefix(&self.shared.prefix, kind, full_key)
    }

    /// The etcd client this backend uses, for other work on the same channel, operators and
    /// tests.
    #[must_use]
    pub fn client(&self) -> etcd::Client {
        self.shared.client.clone()
    }

    /// The [circuit breaker](crate::breaker) of this backend's channel: every request goes
    /// through it.
    #[must_use]
    pub fn breaker(&self) -> &Breaker {
        &self.shared.breaker
    }

    /// Runs a request through the breaker with the response timeout, sending it again (a
    /// fresh request built by `request`) when its reply was lost. Every request sent through
    /// here is idempotent.
    async fn call<T, F, Fut>(&self, operation: &'static str, request: F) -> Result<T>
    where
        F: FnMut(etcd::Client) -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd::Error>>,
    {
        let config = &self.shared.config;
        let admission = self.shared.breaker.admit()?;
        let outcome = self.call_admitted(operation, request).await;
        match &outcome {
            // `None`: no reply within the response timeout.
            Err(None) => {
                admission.unavailable(format!("no reply within {:?}", config.response_timeout))
            }
            Err(Some(error)) if is_transient(error) => admission.unavailable(error),
            _ => admission.answered(),
        }
        outcome.map_err(|error| match error {
            Some(error) => to_lock_error(error),
            None => LockError::Timeout {
                backend: BACKEND,
                operation,
                after: config.response_timeout,
            },
        })
    }

    async fn call_admitted<T, F, Fut>(
        &self,
        operation: &'static str,
        mut request: F,
    ) -> std::result::Result<T, Option<etcd::Error>>
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
                Ok(Err(error)) => return Err(Some(error)),
                Err(_) if !last => {}
                Err(_) => return Err(None),
            }
            failures += 1;
            tokio::time::sleep(Duration::from_millis(20) * failures).await;
        }
    }

    /// Revokes an etcd lease (deleting its keys), logging failures: the lease's TTL ends it
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

/// gRPC `Unavailable` (no leader, connection lost), `DeadlineExceeded`, a status made locally
/// from a broken connection, and transport errors.
fn is_transient(error: &etcd::Error) -> bool {
    const DEADLINE_EXCEEDED: i32 = 4;
    const UNAVAILABLE: i32 = 14;
    match error {
        etcd::Error::TransportError(_) | etcd::Error::IoError(_) => true,
        // A status made on this side from a broken connection carries the transport error as
        // its source (a status the server sent has none): a reset while the request was out
        // (`Unknown`, "transport error"), or the connection closed by the HTTP/2 layer after
        // many cancelled requests (`ResourceExhausted`, GOAWAY "too_many_internal_resets").
        // The request may have been applied: what is sent again is written to be idempotent.
        // Found by `cargo xtask chaos --scenario 9` and `--scenario 8`.
        etcd::Error::GRpcStatus(status) if std::error::Error::source(status).is_some() => true,
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
