//! A granted lease: its TTL timer and the watch on its own key.

use std::sync::Arc;
use std::time::Duration;

use etcd_client as etcd;
use tokio::time::Instant;

use super::{EtcdBackend, EtcdLease};
use crate::backend::Grant;
use crate::backends::expiry::Expiry;
use crate::{FencingToken, LossSignal, LostReason};

impl EtcdBackend {
    /// Turns our key, now first in line, into a granted lease: starts its TTL timer and the
    /// watch on the key itself.
    pub(super) fn grant(
        &self,
        key: String,
        lease_id: i64,
        create_revision: i64,
        ttl: Duration,
        sent: Instant,
    ) -> Grant<EtcdLease> {
        let loss = LossSignal::new();
        let expiry = Arc::new(Expiry::new(sent + ttl));
        tokio::spawn({
            let (backend, expiry, loss) = (self.clone(), expiry.clone(), loss.clone());
            async move {
                if expiry.run_out().await {
                    loss.fire(LostReason::Expired);
                    backend.revoke_quietly(lease_id).await;
                }
            }
        });
        tokio::spawn(watch_own_key(
            self.clone(),
            key.clone(),
            create_revision,
            expiry.clone(),
            loss.clone(),
        ));
        // A create revision is never negative; the fallback only keeps a corrupt reply from
        // panicking.
        let fence = FencingToken::new(u64::try_from(create_revision).unwrap_or_default());
        let lease = EtcdLease {
            key,
            lease_id,
            create_revision,
            expiry,
        };
        Grant::new(lease, fence, sent).with_loss(loss)
    }
}

/// Fires the holder's loss signal when its key is deleted (behind its back, or because its
/// etcd lease was revoked or expired); returns when the lease ends in any way.
async fn watch_own_key(
    backend: EtcdBackend,
    key: String,
    create_revision: i64,
    expiry: Arc<Expiry>,
    loss: LossSignal,
) {
    let mut from = create_revision + 1;
    loop {
        let watched = tokio::select! {
            () = expiry.ended() => return,
            outcome = watch_once(&backend, &key, from) => outcome,
        };
        match watched {
            Watched::Deleted => {
                if expiry.end() {
                    loss.fire(LostReason::NotOwner);
                }
                return;
            }
            // The stream broke or history was compacted: check the key, then watch on.
            Watched::Interrupted => {
                tokio::select! {
                    () = expiry.ended() => return,
                    () = tokio::time::sleep(Duration::from_millis(200)) => {}
                }
                let k = key.clone();
                let found = backend
                    .call("renew", |mut c| {
                        let k = k.clone();
                        async move { c.get(k, None).await }
                    })
                    .await;
                let Ok(found) = found else { continue };
                let ours = found
                    .kvs()
                    .first()
                    .is_some_and(|kv| kv.create_revision() == create_revision);
                if !ours {
                    if expiry.end() {
                        loss.fire(LostReason::NotOwner);
                    }
                    return;
                }
                from = found.header().map_or(from, |h| h.revision() + 1);
            }
        }
    }
}

enum Watched {
    Deleted,
    Interrupted,
}

async fn watch_once(backend: &EtcdBackend, key: &str, from: i64) -> Watched {
    let options = etcd::WatchOptions::new()
        .with_start_revision(from)
        .with_filters([etcd::WatchFilterType::NoPut]);
    let Ok(mut stream) = backend.client().watch(key, Some(options)).await else {
        return Watched::Interrupted;
    };
    loop {
        match stream.message().await {
            Ok(Some(reply)) => {
                if reply
                    .events()
                    .iter()
                    .any(|e| e.event_type() == etcd::EventType::Delete)
                {
                    return Watched::Deleted;
                }
                if reply.canceled() {
                    return Watched::Interrupted;
                }
            }
            Ok(None) | Err(_) => return Watched::Interrupted,
        }
    }
}
