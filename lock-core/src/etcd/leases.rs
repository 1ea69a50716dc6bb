//! The per-lock leases holders keep their entry under, and the spares kept for reuse.
//!
//! A holder's entry must outlive its process only by the lock's TTL, so it lives under an etcd
//! lease of that TTL, not under the session lease. A lease whose holder released cleanly has
//! no keys left; the backend keeps it as a spare for its next acquisition with the same TTL
//! instead of revoking it and granting another, so a steady stream of acquisitions costs no
//! lease grants (Raft writes), only keep-alives, which the etcd leader answers alone.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::{ttl_seconds, EtcdBackend};
use crate::sync::lock;
use crate::Result;

/// Spares kept per backend; more are revoked.
const MAX_SPARES: usize = 16;

/// An etcd lease for one holder.
#[derive(Clone, Copy, Debug)]
pub(super) struct LockLease {
    /// The etcd lease id.
    pub(super) id: i64,
    /// The TTL asked for, in whole seconds (spares are matched on it).
    pub(super) seconds: i64,
    /// The TTL etcd keeps it for after each keep-alive (at least `seconds`).
    pub(super) life: Duration,
    /// When the last grant or keep-alive of it was sent: etcd keeps it until at least
    /// `kept_alive_at + life`.
    pub(super) kept_alive_at: Instant,
}

impl LockLease {
    /// True when etcd may already have dropped it (or will before a request reaches it).
    fn stale(&self, now: Instant) -> bool {
        self.kept_alive_at + self.life <= now + Duration::from_secs(1)
    }
}

/// Leases of released holds, ready for reuse.
#[derive(Default)]
pub(super) struct Spares {
    leases: Mutex<Vec<LockLease>>,
}

impl Spares {
    /// Every spare, for revoking when the backend goes.
    pub(super) fn drain(&self) -> Vec<LockLease> {
        std::mem::take(&mut *lock(&self.leases))
    }
}

impl EtcdBackend {
    /// A lease for a holder of `ttl`: a spare when there is one (`true`: it needs a keep-alive
    /// before it can be trusted for `ttl`), else a new grant (`false`).
    pub(super) async fn lock_lease(&self, ttl: Duration) -> Result<(LockLease, bool)> {
        let seconds = ttl_seconds(ttl);
        let now = Instant::now();
        let spare = {
            let mut spares = lock(&self.shared.spares.leases);
            spares.retain(|l| !l.stale(now));
            spares
                .iter()
                .rposition(|l| l.seconds == seconds)
                .map(|i| spares.swap_remove(i))
        };
        if let Some(spare) = spare {
            return Ok((spare, true));
        }
        Ok((self.grant_lock_lease(seconds).await?, false))
    }

    /// A new lease of `seconds`.
    pub(super) async fn grant_lock_lease(&self, seconds: i64) -> Result<LockLease> {
        let sent = Instant::now();
        let granted = self
            .call("acquire", |mut c| async move {
                c.lease_grant(seconds, None).await
            })
            .await?;
        Ok(LockLease {
            id: granted.id(),
            seconds,
            life: Duration::from_secs(granted.ttl().max(seconds).unsigned_abs()),
            kept_alive_at: sent,
        })
    }

    /// Keeps `lease` for the next holder (it has no keys left), or revokes it when enough
    /// are kept already.
    pub(super) fn spare(&self, lease: LockLease) {
        let kept = {
            let mut spares = lock(&self.shared.spares.leases);
            if spares.len() < MAX_SPARES && !lease.stale(Instant::now()) {
                spares.push(lease);
                true
            } else {
                false
            }
        };
        if !kept {
            self.revoke_in_background(lease.id);
        }
    }
}
