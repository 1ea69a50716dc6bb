//! The waiters of one SQL backend, by lock key, so a wake-up (a PostgreSQL notification, or a
//! release by this same backend) reaches one waiting task of that key; and the task that
//! routes PostgreSQL notifications to them.
//!
//! The store keeps no waiter entries for SQL locks, so this registry is also what
//! `waiters(full_key)` reports: a waiter whose future is dropped leaves it at once.
//!
//! Of a key's local waiters only one, the *poller*, looks at the database on a timer; the
//! others wait for a wake-up (a notification, a release by this backend, or the poller handing
//! its turn on when it leaves). So however many tasks of a process wait for one key, the
//! database sees one poll of it per backend: a crowd of 1,000 waiters on MySQL cost 340
//! requests per handoff when each polled (`cargo xtask chaos --scenario 10`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::sync::lock;

#[derive(Default)]
pub(crate) struct WaiterHub {
    keys: Mutex<HashMap<String, KeyWaiters>>,
    /// Wake-ups received (notifications routed), for tests and the bench.
    pub(crate) wakeups: AtomicU64,
}

struct KeyWaiters {
    /// Shared by the key's local waiters: `notify_one` wakes one of them, or lets the next one
    /// that waits return at once.
    notify: Arc<Notify>,
    count: usize,
    /// The waiter whose turn it is to poll the database, if one has taken it.
    poller: Option<u64>,
}

/// Numbers the registrations, so the poller can be told apart.
static NEXT_WAITER: AtomicU64 = AtomicU64::new(1);

impl WaiterHub {
    /// Registers a waiter of `lock_key`; dropping the registration removes it.
    pub(crate) fn register(&self, lock_key: &str) -> Waiting<'_> {
        let mut keys = lock(&self.keys);
        let entry = keys
            .entry(lock_key.to_owned())
            .or_insert_with(|| KeyWaiters {
                notify: Arc::new(Notify::new()),
                count: 0,
                poller: None,
            });
        entry.count += 1;
        Waiting {
            hub: self,
            id: NEXT_WAITER.fetch_add(1, Ordering::Relaxed),
            lock_key: lock_key.to_owned(),
            notify: entry.notify.clone(),
            granted: false,
        }
    }

    /// Wakes one local waiter of `lock_key`, if there is one.
    pub(crate) fn wake_one(&self, lock_key: &str) {
        self.wakeups.fetch_add(1, Ordering::Relaxed);
        if let Some(waiters) = lock(&self.keys).get(lock_key) {
            waiters.notify.notify_one();
        }
    }

    #[cfg(feature = "postgres")]
    /// Wakes every local waiter: wake-ups may have been missed (the listener reconnected).
    pub(crate) fn wake_all(&self) {
        for waiters in lock(&self.keys).values() {
            waiters.notify.notify_waiters();
            waiters.notify.notify_one();
        }
    }

    /// How many tasks of this backend wait for `lock_key`.
    pub(crate) fn count(&self, lock_key: &str) -> usize {
        lock(&self.keys).get(lock_key).map_or(0, |w| w.count)
    }
}

/// One waiting task's registration.
pub(crate) struct Waiting<'a> {
    hub: &'a WaiterHub,
    id: u64,
    lock_key: String,
    notify: Arc<Notify>,
    /// Set when the wait ended with the lock: nothing to pass on.
    pub(crate) granted: bool,
}

impl Waiting<'_> {
    /// Resolves when a wake-up for this key arrives.
    pub(crate) async fn woken(&self) {
        self.notify.notified().await;
    }

    /// Whether this waiter polls the database on a timer: it takes the key's turn when nobody
    /// has it. The others wait for a wake-up.
    pub(crate) fn polls(&self) -> bool {
        let mut keys = lock(&self.hub.keys);
        let Some(waiters) = keys.get_mut(&self.lock_key) else {
            return true;
        };
        *waiters.poller.get_or_insert(self.id) == self.id
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut keys = lock(&self.hub.keys);
        let Some(waiters) = keys.get_mut(&self.lock_key) else {
            return;
        };
        waiters.count -= 1;
        let polled = waiters.poller == Some(self.id);
        if polled {
            waiters.poller = None;
        }
        if waiters.count == 0 {
            keys.remove(&self.lock_key);
        } else if polled || !self.granted {
            // The next waiter takes the polling turn; or this waiter may have taken a wake-up
            // it will not use: pass it on. A spurious wake-up costs the next waiter one
            // re-check.
            waiters.notify.notify_one();
        }
    }
}

#[cfg(feature = "postgres")]
/// Routes notifications to local waiters until `stop`, and revocations (on the table's
/// `_revoked` channel) to the leases they name. After the connection was lost (and
/// re-established by the listener, which also listens again) every waiter re-checks, since
/// notifications sent meanwhile are gone (a revocation sent meanwhile reaches its holder at
/// its next renewal, which finds the lease gone and reads the audit record).
///
/// While the connection is down, reconnects back off (50 ms doubling to 2 s) and, once the
/// pool's breaker is open, wait until its probe is due: a database that is down costs a
/// reconnect per cool-down, each logged at DEBUG (the breaker reports the outage).
pub(crate) async fn route_notifications(
    mut listener: sqlx::postgres::PgListener,
    wake: super::dialect::Wake,
) {
    let super::dialect::Wake {
        hub,
        leases,
        revoked,
        breaker,
        stop,
    } = wake;
    let mut backoff = std::time::Duration::from_millis(50);
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return,
            next = listener.try_recv() => next,
        };
        match next {
            Ok(Some(notification)) => {
                backoff = std::time::Duration::from_millis(50);
                if notification.channel() == revoked {
                    leases.revoke(notification.payload());
                } else {
                    hub.wake_one(notification.payload());
                }
            }
            Ok(None) => {
                tracing::debug!("wake-up connection lost and re-established; waiters re-check");
                hub.wake_all();
            }
            Err(error) => {
                tracing::debug!(%error, "wake-up connection down; waiters poll until it is back");
                hub.wake_all();
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = async {
                        tokio::time::sleep(backoff).await;
                        breaker.ready().await;
                    } => {}
                }
                backoff = (backoff * 2).min(std::time::Duration::from_secs(2));
            }
        }
    }
}
