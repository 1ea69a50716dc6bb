//! Count-down latches ([`LatchBackend`]): one key, `<prefix>/~latch/<name>`, whose value is
//! `<count>;<expiry in Unix ms>`, under an etcd lease of the latch's expiry.
//!
//! etcd lease TTLs are whole seconds (and raised to the server's minimum), so the exact expiry
//! travels in the value and every reader applies it: a latch past its expiry counts as zero
//! even while etcd still has the key. Counting down is a compare-and-swap on the key's mod
//! revision; at zero the key is deleted, which wakes every waiter (a watch for the deletion on
//! the backend's shared stream), with a timer at the expiry and the poll cap as safety net.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use etcd_client as etcd;
use tokio::time::{sleep_until, Instant};

use super::keys::latch_key;
use super::watch::{Fired, Target, Watch};
use super::{ttl_seconds, EtcdBackend, BACKEND};
use crate::backend::{KeyInspection, LatchBackend, LatchCount, Waiters};
use crate::{LockError, LockKey, Result};

/// A latch as read.
struct Latch {
    count: u64,
    /// Time left before it expires (zero: expired).
    left: Duration,
    /// When it expires, in Unix ms.
    expires: u64,
    mod_revision: i64,
}

impl Latch {
    /// At zero or expired: waiters may go.
    fn open(&self) -> bool {
        self.count == 0 || self.left.is_zero()
    }
}

/// Wall-clock now in Unix ms (latch expiries are compared across processes).
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Reads a latch value: `<count>;<expiry in Unix ms>`.
fn parse(kv: &etcd::KeyValue) -> Result<Latch> {
    let corrupt = || LockError::Protocol {
        backend: BACKEND,
        detail: format!("latch value {:?}", String::from_utf8_lossy(kv.value())),
    };
    let text = std::str::from_utf8(kv.value()).map_err(|_| corrupt())?;
    let (count, expires) = text.split_once(';').ok_or_else(corrupt)?;
    let count: u64 = count.parse().map_err(|_| corrupt())?;
    let expires: u64 = expires.parse().map_err(|_| corrupt())?;
    Ok(Latch {
        count,
        left: Duration::from_millis(expires.saturating_sub(now_ms())),
        expires,
        mod_revision: kv.mod_revision(),
    })
}

impl EtcdBackend {
    /// The latch `key` and the revision it was read at (`None`: no latch).
    async fn read_latch(&self, key: &str) -> Result<(Option<Latch>, i64)> {
        let reply = self
            .call("latch", |mut c| {
                let key = key.to_owned();
                async move { c.get(key, None).await }
            })
            .await?;
        let revision = reply.header().map_or(0, etcd::ResponseHeader::revision);
        let latch = reply.kvs().first().map(parse).transpose()?;
        Ok((latch, revision))
    }

    /// The operator's view of the latch `full`: its count and time left while it counts
    /// (its waiters are watches etcd does not list).
    pub(super) async fn inspect_latch(&self, full: &str) -> Result<KeyInspection> {
        let (latch, _) = self
            .read_latch(&latch_key(&self.shared.prefix, full))
            .await?;
        let count = latch
            .filter(|latch| !latch.open())
            .map(|latch| LatchCount::new(latch.count, Some(latch.left)));
        Ok(KeyInspection::latch(full, count, Waiters::NotKept))
    }

    /// Runs `txn` (a compare-and-swap): whether it applied.
    async fn latch_txn(&self, txn: etcd::Txn) -> Result<bool> {
        let reply = self
            .call("latch", |mut c| {
                let txn = txn.clone();
                async move { c.txn(txn).await }
            })
            .await?;
        Ok(reply.succeeded())
    }
}

impl LatchBackend for EtcdBackend {
    async fn latch_create(&self, key: &LockKey, count: u64, expire: Duration) -> Result<bool> {
        let key = latch_key(&self.shared.prefix, key.full());
        let seconds = ttl_seconds(expire);
        loop {
            let (latch, _) = self.read_latch(&key).await?;
            if latch.as_ref().is_some_and(|l| !l.open()) {
                return Ok(false);
            }
            let guard = match &latch {
                Some(latch) => etcd::Compare::mod_revision(
                    key.clone(),
                    etcd::CompareOp::Equal,
                    latch.mod_revision,
                ),
                None => etcd::Compare::create_revision(key.clone(), etcd::CompareOp::Equal, 0),
            };
            let granted = self
                .call("latch", |mut c| async move {
                    c.lease_grant(seconds, None).await
                })
                .await?;
            let expires =
                now_ms().saturating_add(u64::try_from(expire.as_millis()).unwrap_or(u64::MAX));
            let put = etcd::TxnOp::put(
                key.clone(),
                format!("{count};{expires}"),
                Some(etcd::PutOptions::new().with_lease(granted.id())),
            );
            if self
                .latch_txn(etcd::Txn::new().when([guard]).and_then([put]))
                .await?
            {
                return Ok(true);
            }
            // Someone else changed it between the read and the swap: look again.
            self.revoke_in_background(granted.id());
        }
    }

    async fn latch_count_down(&self, key: &LockKey) -> Result<u64> {
        let key = latch_key(&self.shared.prefix, key.full());
        loop {
            let (Some(latch), _) = self.read_latch(&key).await? else {
                return Ok(0);
            };
            if latch.open() {
                return Ok(0);
            }
            let left = latch.count - 1;
            let guard = etcd::Compare::mod_revision(
                key.clone(),
                etcd::CompareOp::Equal,
                latch.mod_revision,
            );
            let change = if left == 0 {
                etcd::TxnOp::delete(key.clone(), None)
            } else {
                etcd::TxnOp::put(
                    key.clone(),
                    format!("{left};{}", latch.expires),
                    Some(etcd::PutOptions::new().with_ignore_lease()),
                )
            };
            if self
                .latch_txn(etcd::Txn::new().when([guard]).and_then([change]))
                .await?
            {
                return Ok(left);
            }
        }
    }

    async fn latch_count(&self, key: &LockKey) -> Result<u64> {
        let key = latch_key(&self.shared.prefix, key.full());
        let (latch, _) = self.read_latch(&key).await?;
        Ok(latch.filter(|l| !l.open()).map_or(0, |l| l.count))
    }

    async fn latch_wait(&self, key: &LockKey, deadline: Option<Instant>) -> Result<bool> {
        let key = latch_key(&self.shared.prefix, key.full());
        let mut watch: Option<Watch> = None;
        loop {
            let (latch, _) = self.read_latch(&key).await?;
            let Some(latch) = latch.filter(|l| !l.open()) else {
                return Ok(true);
            };
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Ok(false);
            }
            let mut until =
                (now + crate::jitter::jitter(self.shared.config.poll_cap)).min(now + latch.left);
            if let Some(deadline) = deadline {
                until = until.min(deadline);
            }
            let Some(mut armed) = watch.take() else {
                // Watch from now; once etcd has the watch, read again (see `watch.rs`).
                let mut fresh = self
                    .shared
                    .watches
                    .watch(Target::Deleted(key.clone().into_bytes()), None);
                let created = tokio::select! {
                    created = fresh.created() => created,
                    () = sleep_until(until) => true,
                };
                if created {
                    watch = Some(fresh);
                } else {
                    pause(until).await;
                }
                continue;
            };
            let fired = tokio::select! {
                fired = armed.fired() => Some(fired),
                () = sleep_until(until) => None,
            };
            match fired {
                Some(Fired::Interrupted) => pause(until).await,
                // Not fired: the watch stays for the next round.
                None => watch = Some(armed),
                Some(Fired::Event) => {}
            }
        }
    }
}

/// A short pause before reading again after the watch stream failed.
async fn pause(until: Instant) {
    sleep_until(until.min(Instant::now() + Duration::from_millis(50))).await;
}
