//! A graceful stop: [`LockClient::shutdown`] releases every lease the client holds, stops its
//! watchdog and refuses new acquisitions, so a restarting instance hands its locks on at once
//! instead of leaving them to their TTLs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::task::JoinSet;

use crate::lock::held::HeldLease;
use crate::sync::lock;
use crate::{LockClient, LostReason};

/// The leases a client holds, whoever holds them (every kind, permits included), for
/// [`LockClient::shutdown`]; and whether it was shut down.
#[derive(Default)]
pub(crate) struct LiveLeases {
    leases: Mutex<HashMap<u64, Weak<HeldLease>>>,
    shut_down: AtomicBool,
}

impl LiveLeases {
    /// Records a fresh grant.
    pub(crate) fn insert(&self, lease: &Arc<HeldLease>) {
        lock(&self.leases).insert(lease.seq, Arc::downgrade(lease));
    }

    /// Forgets a lease whose last guard went (released, abandoned, dropped).
    pub(crate) fn remove(&self, lease: &HeldLease) {
        lock(&self.leases).remove(&lease.seq);
    }

    /// True once [`LockClient::shutdown`] ran: acquisitions are refused.
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    /// Marks the client shut down and takes every lease still held.
    fn close(&self) -> Vec<Arc<HeldLease>> {
        self.shut_down.store(true, Ordering::Release);
        lock(&self.leases)
            .drain()
            .filter_map(|(_, lease)| lease.upgrade())
            .collect()
    }
}

/// What [`LockClient::shutdown`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Leases released in the backend (the next waiter may have them now).
    pub released: usize,
    /// Leases the backend no longer had under this client (expired, taken over).
    pub already_gone: usize,
    /// Leases whose release failed (the backend unreachable): their TTLs free them.
    pub failed: usize,
}

impl LockClient {
    /// Releases every lease this client holds (locks, fair locks, read and write shares,
    /// permits, leaderships, on every clone of the client), stops its watchdog, and refuses
    /// acquisitions from then on with [`LockError::ShutDown`](crate::LockError::ShutDown):
    /// for a graceful restart, so the next instance gets the locks at once instead of after
    /// their leases run out. Every holder's [`lost()`](crate::LockGuard::lost) fires with
    /// [`LostReason::ShutDown`] first, so work racing it stops before its lock is given away;
    /// the guards' own releases and drops afterwards do nothing. Releases run concurrently;
    /// one the backend cannot take is counted in [`ShutdownReport::failed`] and left to its
    /// TTL. Calling it again releases nothing more.
    ///
    /// ```
    /// use lock_core::{LockClient, LostReason, MemoryBackend};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let backend = MemoryBackend::new();
    /// let locks = LockClient::new(backend.clone());
    /// let job = locks.lock("nightly-report").await?;
    ///
    /// // SIGTERM: hand everything on before exiting.
    /// let report = locks.shutdown().await;
    /// assert_eq!(report.released, 1);
    /// assert_eq!(job.lost().await, LostReason::ShutDown);
    /// assert!(locks.lock("nightly-report").try_acquire().await.unwrap_err().is_shut_down());
    ///
    /// // Another instance takes it at once.
    /// let next = LockClient::new(backend);
    /// assert!(next.lock("nightly-report").try_acquire().await?.is_some());
    /// # Ok(()) }
    /// ```
    pub async fn shutdown(&self) -> ShutdownReport {
        let inner = &self.inner;
        let leases = inner.live.close();
        for lease in &leases {
            // Renewals stop and holders learn first: nothing runs on a lock being given away.
            lease.stop.cancel();
            inner.watchdog.forget(lease);
            lease.lose(LostReason::ShutDown);
        }
        inner.watchdog.close();
        let mut releases = JoinSet::new();
        for lease in leases {
            releases.spawn(async move {
                let outcome = lease.lease.release().await;
                (lease, outcome)
            });
        }
        let mut report = ShutdownReport::default();
        while let Some(done) = releases.join_next().await {
            let Ok((lease, outcome)) = done else {
                report.failed += 1; // the release task panicked
                continue;
            };
            match outcome {
                Ok(true) => report.released += 1,
                Ok(false) => report.already_gone += 1,
                Err(error) => {
                    tracing::warn!(key = %lease.key, error = %error.with_causes(), "release at shutdown failed; the lease's TTL will free the lock");
                    report.failed += 1;
                }
            }
        }
        tracing::info!(
            released = report.released,
            already_gone = report.already_gone,
            failed = report.failed,
            "lock client shut down"
        );
        report
    }
}
