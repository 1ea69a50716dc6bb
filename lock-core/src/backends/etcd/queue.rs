//! The waiting line of one lock: our key in it, where it stands, and waiting for the key just
//! before it.

use std::time::Duration;

use etcd_client as etcd;
use tokio::time::{sleep_until, Instant};

use super::keys::{entry_key, lease_of};
use super::{ttl_seconds, EtcdBackend};
use crate::backend::AcquireRequest;
use crate::{LockError, OwnerToken, Result};

/// Our key while it waits: dropping this (a cancelled or failed acquire) revokes its lease in a
/// spawned task, which deletes the key, so the waiter behind us is not held up by an orphan.
pub(super) struct Queued {
    backend: EtcdBackend,
    pub(super) lease_id: i64,
    pub(super) key: String,
    pub(super) create_revision: i64,
    /// The TTL etcd granted the lease (at least the one asked for).
    granted_ttl: Duration,
    /// When the last grant or keep-alive of the lease was sent.
    kept_alive_at: Instant,
    /// The first key of the queue when ours was put: `(key, value)`.
    first: Option<(Vec<u8>, Vec<u8>, i64)>,
    armed: bool,
}

impl Queued {
    /// The key now belongs to a lease: keep it.
    pub(super) fn keep(mut self) -> (String, i64, i64) {
        self.armed = false;
        (
            std::mem::take(&mut self.key),
            self.lease_id,
            self.create_revision,
        )
    }

    /// Revokes the lease and waits for the answer (a try that failed: the next try of the same
    /// client must not find its own stale key ahead of it).
    pub(super) async fn remove(mut self) {
        self.armed = false;
        self.backend.revoke_quietly(self.lease_id).await;
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        if self.armed {
            self.backend.revoke_in_background(self.lease_id);
        }
    }
}

/// What waiting came to.
pub(super) enum Turn {
    /// Our key is first: the lock is ours, trusted from `sent`.
    Holds { sent: Instant },
    /// The same owner token already holds the lock under an earlier key.
    HeldBefore {
        key: String,
        lease_id: i64,
        create_revision: i64,
    },
    /// Still behind another key when the deadline passed.
    Busy,
    /// Our key is gone.
    Lost,
}

impl EtcdBackend {
    /// Grants a lease and puts our key under it (unless a lost reply already did), reading the
    /// first key of the queue in the same transaction.
    pub(super) async fn enqueue(
        &self,
        prefix: &str,
        owner: OwnerToken,
        ttl: Duration,
    ) -> Result<Queued> {
        let seconds = ttl_seconds(ttl);
        let granted_at = Instant::now();
        let granted = self
            .call("acquire", |mut c| async move {
                c.lease_grant(seconds, None).await
            })
            .await?;
        let lease_id = granted.id();
        let mut queued = Queued {
            backend: self.clone(),
            lease_id,
            key: entry_key(prefix, lease_id),
            create_revision: 0,
            granted_ttl: Duration::from_secs(granted.ttl().max(seconds).unsigned_abs()),
            kept_alive_at: granted_at,
            first: None,
            armed: true,
        };
        let (key, value) = (queued.key.clone(), owner.to_hex());
        let first = || {
            let options = etcd::GetOptions::new()
                .with_prefix()
                .with_sort(etcd::SortTarget::Create, etcd::SortOrder::Ascend)
                .with_limit(1);
            etcd::TxnOp::get(prefix, Some(options))
        };
        let reply = self
            .call("acquire", |mut c| {
                let put = etcd::PutOptions::new().with_lease(lease_id);
                let txn = etcd::Txn::new()
                    .when([etcd::Compare::create_revision(
                        key.clone(),
                        etcd::CompareOp::Equal,
                        0,
                    )])
                    .and_then([
                        etcd::TxnOp::put(key.clone(), value.clone(), Some(put)),
                        etcd::TxnOp::get(key.clone(), None),
                        first(),
                    ])
                    .or_else([etcd::TxnOp::get(key.clone(), None), first()]);
                async move { c.txn(txn).await }
            })
            .await?;
        let mut gets = reply.op_responses().into_iter().filter_map(|op| match op {
            etcd::TxnOpResponse::Get(get) => Some(get),
            _ => None,
        });
        let (own, first) = (gets.next(), gets.next());
        let own = own.as_ref().and_then(|get| get.kvs().first());
        queued.create_revision =
            own.map(etcd::KeyValue::create_revision)
                .ok_or_else(|| LockError::Protocol {
                    backend: super::BACKEND,
                    detail: "the key just put is missing (its lease expired at once?)".into(),
                })?;
        queued.first = first
            .as_ref()
            .and_then(|get| get.kvs().first())
            .map(|kv| (kv.key().to_vec(), kv.value().to_vec(), kv.create_revision()));
        Ok(queued)
    }

    /// Waits until our key is first, the deadline passes, or our key is gone.
    pub(super) async fn wait_turn(
        &self,
        queued: &mut Queued,
        prefix: &str,
        request: &AcquireRequest<'_>,
    ) -> Result<Turn> {
        let owner = request.owner.to_hex();
        if let Some((key, value, create_revision)) = queued.first.take() {
            if key == queued.key.as_bytes() {
                return Ok(Turn::Holds {
                    sent: queued.kept_alive_at,
                });
            }
            if value == owner.as_bytes() {
                if let Some(lease_id) = lease_of(prefix, &key) {
                    return Ok(Turn::HeldBefore {
                        key: String::from_utf8_lossy(&key).into_owned(),
                        lease_id,
                        create_revision,
                    });
                }
            }
        }
        loop {
            // Our lease must outlive the wait, whatever its TTL.
            if Instant::now() >= queued.kept_alive_at + queued.granted_ttl / 3 {
                let sent = Instant::now();
                if !self.keep_alive(queued.lease_id).await? {
                    return Ok(Turn::Lost);
                }
                queued.kept_alive_at = sent;
            }
            let sent = Instant::now();
            let Some((ahead, revision)) = self.look(queued, prefix).await? else {
                return Ok(Turn::Lost);
            };
            let Some(ahead) = ahead else {
                // Ours. etcd must keep the key at least as long as the lease is trusted.
                if queued.kept_alive_at + queued.granted_ttl < sent + request.ttl {
                    let sent = Instant::now();
                    if !self.keep_alive(queued.lease_id).await? {
                        return Ok(Turn::Lost);
                    }
                    queued.kept_alive_at = sent;
                }
                return Ok(Turn::Holds { sent });
            };
            if request.deadline_passed() {
                return Ok(Turn::Busy);
            }
            let mut recheck_at = (Instant::now()
                + crate::backends::jitter(self.shared.config.poll_cap))
            .min(queued.kept_alive_at + queued.granted_ttl / 3);
            if let Some(deadline) = request.deadline {
                recheck_at = recheck_at.min(deadline);
            }
            self.wait_deleted(ahead, revision + 1, recheck_at).await;
        }
    }

    /// Reads our key and the key created just before it: `None` when ours is gone, else the key
    /// ahead (if any) and the revision of the read.
    async fn look(&self, queued: &Queued, prefix: &str) -> Result<Option<(Option<Vec<u8>>, i64)>> {
        let (own, before) = (queued.key.clone(), queued.create_revision - 1);
        let reply = self
            .call("acquire", |mut c| {
                let ahead = etcd::GetOptions::new()
                    .with_prefix()
                    .with_max_create_revision(before)
                    .with_sort(etcd::SortTarget::Create, etcd::SortOrder::Descend)
                    .with_limit(1)
                    .with_keys_only();
                let txn = etcd::Txn::new().and_then([
                    etcd::TxnOp::get(own.clone(), None),
                    etcd::TxnOp::get(prefix, Some(ahead)),
                ]);
                async move { c.txn(txn).await }
            })
            .await?;
        let revision = reply.header().map_or(0, etcd::ResponseHeader::revision);
        let gets: Vec<etcd::GetResponse> = reply
            .op_responses()
            .into_iter()
            .filter_map(|op| match op {
                etcd::TxnOpResponse::Get(get) => Some(get),
                _ => None,
            })
            .collect();
        let ours = gets
            .first()
            .and_then(|get| get.kvs().first())
            .is_some_and(|kv| kv.create_revision() == queued.create_revision);
        if !ours {
            return Ok(None);
        }
        let ahead = gets
            .get(1)
            .and_then(|get| get.kvs().first())
            .map(|kv| kv.key().to_vec());
        Ok(Some((ahead, revision)))
    }

    /// Waits until `key` is deleted at or after `from_revision`, or until `recheck_at`. Errors
    /// only shorten the wait: the caller looks at the queue again either way.
    async fn wait_deleted(&self, key: Vec<u8>, from_revision: i64, recheck_at: Instant) {
        let options = etcd::WatchOptions::new()
            .with_start_revision(from_revision)
            .with_filters([etcd::WatchFilterType::NoPut]);
        let watching = async {
            let mut stream = self.client().watch(key, Some(options)).await.ok()?;
            loop {
                match stream.message().await {
                    Ok(Some(reply)) if reply.events().is_empty() && !reply.canceled() => {}
                    _ => return Some(()),
                }
            }
        };
        tokio::select! {
            woken = watching => {
                if woken.is_none() {
                    // The watch could not be set up: don't spin, look again a little later.
                    let pause = Instant::now() + Duration::from_millis(50);
                    sleep_until(pause.min(recheck_at)).await;
                }
            }
            () = sleep_until(recheck_at) => {}
        }
    }

    /// Keeps `lease_id` alive once: `false` when etcd no longer has it.
    pub(super) async fn keep_alive(&self, lease_id: i64) -> Result<bool> {
        self.call("renew", |mut c| async move {
            match c.lease_keep_alive(lease_id).await {
                Ok(_) => Ok(true),
                Err(error) if super::lease_gone(&error) => Ok(false),
                Err(error) => Err(error),
            }
        })
        .await
    }
}
