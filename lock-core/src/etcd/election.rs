//! Reading an election's leader: the [`ElectionBackend`] side of [`EtcdBackend`].
//!
//! An election `jobs` is the range `<prefix>/~leader/jobs/`, one entry per candidate in
//! create-revision order (etcd's own election recipe orders its candidates the same way); the
//! first entry leads once it is marked as holding, and its create revision is the term.

use etcd_client as etcd;

use super::keys::{owner_of, parse_value, participant_of, queue_prefix};
use super::EtcdBackend;
use crate::backend::{ElectionBackend, Leader, LeaseKind};
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
                // A create revision is never negative; the fallback only keeps a corrupt reply
                // from panicking.
                let term =
                    FencingToken::new(u64::try_from(kv.create_revision()).unwrap_or_default());
                Leader::new(participant_of(kv.value()).unwrap_or_default(), term)
            });
        Ok(leader)
    }
}
