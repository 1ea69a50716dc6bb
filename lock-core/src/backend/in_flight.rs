//! Requests that finish even when the caller's future is dropped, and a clean-up that waits for
//! them.
//!
//! Dropping an acquire future does not stop a request already on its way: the server may
//! apply it later. Where the clean-up after an abandoned acquire can overtake that request (a
//! pool of SQL connections, etcd's concurrent HTTP/2 streams; not Redis or ZooKeeper, whose
//! one connection keeps order), the request could land after its clean-up and leave an
//! orphan. And a request cut short halfway (a SQL transaction whose `START TRANSACTION` went
//! out and whose reply was never read) leaves its pooled connection in a state the next user
//! trips over. [`InFlight::run`] runs each such request in a task of its own, to its end, and
//! [`InFlight::settled`] lets the clean-up wait for every request of an owner first.
//!
//! Found by `cargo xtask chaos --scenario 8` (10,000 acquires dropped at random points): on
//! MySQL a dropped transaction wedged the lock for everyone; on etcd a late entry held the key
//! for up to two seconds.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::sync::lock;
use crate::OwnerToken;

/// The requests in flight, by owner.
#[derive(Clone, Default)]
pub(crate) struct InFlight {
    running: Arc<Mutex<HashMap<OwnerToken, Vec<watch::Receiver<()>>>>>,
}

impl InFlight {
    /// Runs `request` for `owner` in a task of its own, so it runs to its end whatever happens
    /// to the caller. A panic in it comes back as `Err` with its text.
    pub(crate) async fn run<T, F>(&self, owner: OwnerToken, request: F) -> Result<T, String>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let (done, watch) = watch::channel(());
        lock(&self.running)
            .entry(owner)
            .or_default()
            .push(watch.clone());
        let running = self.running.clone();
        let task = tokio::spawn(async move {
            let output = request.await;
            drop(done);
            let mut running = lock(&running);
            if let Some(watches) = running.get_mut(&owner) {
                watches.retain(|w| !w.same_channel(&watch));
                if watches.is_empty() {
                    running.remove(&owner);
                }
            }
            output
        });
        task.await.map_err(|e| e.to_string())
    }

    /// Resolves once every request of `owner` started so far has ended.
    pub(crate) async fn settled(&self, owner: OwnerToken) {
        let watches = lock(&self.running).get(&owner).cloned().unwrap_or_default();
        for mut watch in watches {
            // Never sent on: `changed` fails when the request's task drops its sender.
            while watch.changed().await.is_ok() {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_dropped_caller_leaves_the_request_running_and_the_clean_up_waits_for_it() {
        let in_flight = InFlight::default();
        let owner = OwnerToken::random().unwrap();
        let (applied_tx, applied) = tokio::sync::oneshot::channel();
        let slow = in_flight.run(owner, async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            applied_tx.send(()).ok();
        });
        // The caller gives up after 10 ms: the request goes on.
        assert!(tokio::time::timeout(Duration::from_millis(10), slow)
            .await
            .is_err());
        in_flight.settled(owner).await;
        assert!(applied.await.is_ok(), "settled before the request ended");
        assert!(lock(&in_flight.running).is_empty());
        // Nothing in flight: settled at once.
        tokio::time::timeout(Duration::from_millis(50), in_flight.settled(owner))
            .await
            .unwrap();
    }
}
