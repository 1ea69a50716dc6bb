//! Granting, renewing and releasing leases on etcd: the [`LockBackend`] side of
//! [`EtcdBackend`]. An acquisition takes its turn in the primitive's queue (`queue.rs`) and
//! holds under a lease of its own (`held.rs`).

use std::time::Duration;

use super::held::Held;
use super::look::Spec;
use super::queue::Turn;
use super::{keys, EtcdBackend, EtcdLease, BACKEND};
use crate::backend::{Abandoned, AcquireRequest, Capabilities, Grant, LockBackend, OptionalTraits};
use crate::breaker::Breaker;
use crate::Result;

impl LockBackend for EtcdBackend {
    type Lease = EtcdLease;

    fn capabilities(&self) -> Capabilities {
        Capabilities::full(BACKEND)
    }

    async fn acquire(&self, request: AcquireRequest<'_>) -> Result<Option<Grant<EtcdLease>>> {
        let spec = Spec::new(
            &request,
            self.queue_prefix(request.kind, request.key.full()),
        );
        loop {
            match self.take_turn(&spec).await? {
                Turn::Holds {
                    queued,
                    lease,
                    sent,
                    revision,
                } => {
                    let create_revision = queued.create_revision;
                    let key = queued.keep();
                    let held = Held {
                        key,
                        lease,
                        create_revision,
                        revision,
                        audit_key: keys::audit_key(
                            &self.shared.prefix,
                            request.key.full(),
                            request.owner,
                        ),
                    };
                    return Ok(Some(self.grant(held, request.ttl, sent)));
                }
                Turn::Busy(queued) => {
                    queued.remove().await;
                    return Ok(None);
                }
                // Our entry vanished while waiting (session lease lost, entry deleted): queue
                // again, at the end.
                Turn::Lost => {}
            }
        }
    }

    async fn renew(&self, lease: &EtcdLease, ttl: Option<Duration>) -> Result<bool> {
        self.renew_held(lease, ttl).await
    }

    async fn release(&self, lease: &EtcdLease) -> Result<bool> {
        self.release_held(lease).await
    }

    /// Deletes the entry of this owner token in the primitive's range (its key is named by the
    /// token). gRPC requests on one channel are not ordered, so a put of the abandoned
    /// acquisition still in flight could land after the delete: the delete is sent again once
    /// such a put can no longer land (after the response timeout), and it never touches
    /// another acquisition's entry, the token being this acquisition's own.
    async fn release_abandoned(&self, abandoned: &Abandoned) -> Result<bool> {
        // An entry put still on its way would land after the delete (HTTP/2 streams are not
        // ordered): wait for it first.
        self.shared.in_flight.settled(abandoned.owner).await;
        let entry = keys::entry_key(
            &self.queue_prefix(abandoned.kind, abandoned.key.full()),
            abandoned.owner,
        );
        Ok(self.delete_quietly(entry).await)
    }

    fn breaker(&self) -> Option<&Breaker> {
        Some(&self.shared.breaker)
    }

    fn optional_traits(&self) -> OptionalTraits<'_> {
        OptionalTraits::all(self).with_operator(self)
    }
}
