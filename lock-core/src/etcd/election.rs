//! Reading an election's leader: the [`ElectionBackend`] side of [`EtcdBackend`].
//!
//! An election `jobs` is the range `<prefix>/~leader/jobs/`, one entry per candidate in
//! create-revision order (etcd's own election recipe orders its candidates the same way); the
//! first entry leads once it is marked as holding, and the revision of the write that marked
//! it (its mod revision, the leader's fencing token, see `held.rs`) is the term.
//! Observers wait on the backend's shared watch of that range.

use etcd_client as etcd;
use tokio::time::{sleep_until, Instant};

use super::keys::{owner_of, parse_value, participant_of, queue_prefix};
use super::watch::Target;
use super::EtcdBackend;
use crate::backend::{ElectionBackend, Leader, LeaderWait, LeaseKind};
use crate::{FencingToken, LockKey, Result};

impl ElectionBackend for EtcdBackend {
    async fn leader(&self, key: &LockKey) -> Result<Option<Leader>> {
        let prefix = queue_prefix(&self.shared.prefix, LeaseKind::Leader, key.full());
        let reply = self
            .call("read", |mut c| {
                let prefix = prefix.clone();
                async move {
                    let first = etcd::GetOptions::new()
                        .with_prefix()
                        .with_sort(etcd::SortTarget::Create, etcd::SortOrder::Ascend)
                        .with_limit(1);
                    c.get(prefix, Some(first)).await
                }
            })
            .await?;
        let leader = reply
            .kvs()
            .first()
            .filter(|kv| owner_of(&prefix, kv.key()).is_some() && parse_value(kv.value()).1)
            .map(|kv| {
                // A revision is never negative; the fallback only keeps a corrupt reply from
                // panicking.
                let term = FencingToken::new(u64::try_from(kv.mod_revision()).unwrap_or_default());
                Leader::new(participant_of(kv.value()).unwrap_or_default(), term)
            });
        Ok(leader)
    }

    /// Puts a watch on the election's range before reading it: a change after the read fires
    /// the watch (a candidate joining, leaving, or marking itself the holder).
    async fn leader_after(&self, wait: LeaderWait<'_>) -> Result<Option<Leader>> {
        let LeaderWait { key, seen, until } = wait;
        let range = queue_prefix(&self.shared.prefix, LeaseKind::Leader, key.full());
        loop {
            let target = Target::InQueue {
                range: range.clone().into_bytes(),
                deleted: None,
            };
            let mut watch = self.shared.watches.watch(target, None);
            let watching = tokio::select! {
                created = watch.created() => created,
                () = sleep_until(until) => false,
            };
            let leader = self.leader(key).await?;
            if leader.as_ref() != seen || Instant::now() >= until {
                return Ok(leader);
            }
            if !watching {
                // No watch to be had (the stream is down): read again at `until`.
                sleep_until(until).await;
                return self.leader(key).await;
            }
            tokio::select! {
                _ = watch.fired() => {}
                () = sleep_until(until) => return Ok(leader),
            }
        }
    }
}
