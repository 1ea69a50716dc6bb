//! Wake-ups on a Redis Cluster: sharded pub/sub (Redis 7's `SSUBSCRIBE` / `SPUBLISH`).
//!
//! On one server every backend has one channel and a release `PUBLISH`es to it (`wakeups.rs`).
//! On a cluster a `PUBLISH` is sent to every node, and the count it answers (which the scripts
//! read to skip a waiter whose process is gone) is of the publishing node's subscribers only.
//! So on a cluster each backend subscribes, for each key it waits on, to a sharded channel of
//! its own in that key's slot, `<prefix>:wake:<client id>:{<the key's hash tag>}`: the script
//! that releases the key runs on the node that owns the slot and `SPUBLISH`es there, reaching
//! this backend alone and counting it exactly. A waiter holds its channel ([`ChannelHold`])
//! from before it queues until it leaves; channels are counted, so the tasks of one backend
//! waiting on one key share one subscription.
//!
//! A holder does not wait on the key it holds, so it is not subscribed to that key's channel
//! when an operator releases it by force. So each backend also subscribes, from its start, to
//! one sharded channel of its own for revocations, `<prefix>:revoke:{<client id>}` (see
//! [`revocation_channel`]; its hash tag is the client id): after a forced release on a
//! cluster the operator's backend `SPUBLISH`es the revocation there (`operator/force.rs`), and
//! the holder's lost signal fires within a round trip. Nothing is subscribed per lease: a
//! lock's acquisition costs what it did.
//!
//! The subscriptions go on a cluster connection of their own (RESP3, so pushes share it with
//! replies), which redis-rs (1.8) re-subscribes after a reconnect or a failover: its
//! subscription tracker records `SSUBSCRIBE`s too and sends them again to the node that owns
//! each channel's slot after a reconnection or a change of the slot map. A disconnection
//! wakes every local waiter to re-check (messages may have been lost) and has every held lease
//! re-read, as the single server's subscription does when it drops.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{PushInfo, PushKind, RedisResult};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use super::connection::hash_tag;
use super::leases::LeaseBook;
use super::wakeups::{pass_on, WakeHub};
use super::RedisConnection;

/// How often, and how far apart, held leases are re-read after the subscriptions' connection
/// dropped, until the cluster answers (a failover takes a node timeout and an election).
const RECHECK_TRIES: u32 = 20;
const RECHECK_PAUSE: Duration = Duration::from_millis(250);

/// The sharded wake-up channels of one backend on a Redis Cluster.
pub(super) struct ShardWakeups {
    subscriber: ClusterConnection,
    /// `<prefix>:wake:<client id>:`, before a key's hash tag.
    channel_prefix: String,
    /// Subscribed channels, by how many waiters hold each.
    channels: tokio::sync::Mutex<HashMap<String, usize>>,
}

/// A waiter's hold on its wake channel: subscribed while any hold on it lives.
pub(super) struct ChannelHold {
    wakeups: Arc<ShardWakeups>,
    channel: String,
}

impl ShardWakeups {
    /// Connects the subscriptions' cluster connection to the nodes at `urls`, subscribes to
    /// the backend's revocation channel (under the key `prefix`), and routes what it receives
    /// to `hub`'s waiters and the `leases` until `stop`; `connection` passes on the wake-ups of
    /// waiters that have gone and re-reads the `leases` after a disconnection.
    pub(super) async fn start(
        urls: &[String],
        prefix: &str,
        timeout: Duration,
        hub: Arc<WakeHub>,
        leases: Arc<LeaseBook>,
        connection: RedisConnection,
        stop: CancellationToken,
    ) -> RedisResult<Arc<Self>> {
        let (pushes, received) = tokio::sync::mpsc::unbounded_channel();
        let client = ClusterClient::builder(urls.iter().map(String::as_str))
            .use_protocol(redis::ProtocolVersion::RESP3)
            .push_sender(pushes)
            .connection_timeout(timeout)
            .response_timeout(timeout)
            .build()?;
        let subscriber = client.get_async_connection().await?;
        // Subscribed for the backend's life (redis-rs subscribes it again after a reconnect or
        // a failover), before the backend grants its first lease.
        subscriber
            .clone()
            .ssubscribe(revocation_channel(prefix, &hub.client_id))
            .await?;
        let channel_prefix = format!("{}{}:", hub.channel_prefix, hub.client_id);
        tokio::spawn(route(received, hub, leases, connection, stop));
        Ok(Arc::new(Self {
            subscriber,
            channel_prefix,
            channels: tokio::sync::Mutex::default(),
        }))
    }

    /// The channel of `key`'s slot: the prefix and the key's hash tag (`{…}`, as
    /// `lua/publish_wake.lua` finds it).
    fn channel_of(&self, key: &str) -> String {
        format!("{}{}", self.channel_prefix, hash_tag(key))
    }

    /// Subscribes to the wake channel of `key` (unless a hold on it already did) and holds it.
    pub(super) async fn hold(self: &Arc<Self>, key: &str) -> RedisResult<ChannelHold> {
        let channel = self.channel_of(key);
        let mut channels = self.channels.lock().await;
        let holds = channels.entry(channel.clone()).or_insert(0);
        if *holds == 0 {
            if let Err(error) = self.subscriber.clone().ssubscribe(&channel).await {
                channels.remove(&channel);
                return Err(error);
            }
        }
        *holds += 1;
        Ok(ChannelHold {
            wakeups: self.clone(),
            channel,
        })
    }
}

/// The sharded channel on which the backend of `client_id` under the key `prefix` hears, on a
/// Redis Cluster, that an operator released one of its leases by force:
/// `<prefix>:revoke:{<client id>}`. Its hash tag is the client id: the channel's slot is the
/// client's, whatever keys it holds.
pub(super) fn revocation_channel(prefix: &str, client_id: &str) -> String {
    format!("{prefix}:revoke:{{{client_id}}}")
}

impl Drop for ChannelHold {
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (wakeups, channel) = (self.wakeups.clone(), std::mem::take(&mut self.channel));
        runtime.spawn(async move {
            // Under the lock, as subscribing is: an unsubscribe never overtakes a later
            // subscribe to the same channel.
            let mut channels = wakeups.channels.lock().await;
            let Some(holds) = channels.get_mut(&channel) else {
                return;
            };
            *holds -= 1;
            if *holds > 0 {
                return;
            }
            channels.remove(&channel);
            if let Err(error) = wakeups.subscriber.clone().sunsubscribe(&channel).await {
                tracing::debug!(%error, %channel, "leaving a wake channel failed");
            }
        });
    }
}

/// Routes the pushes of the subscriptions' connection until `stop`.
async fn route(
    mut received: UnboundedReceiver<PushInfo>,
    hub: Arc<WakeHub>,
    leases: Arc<LeaseBook>,
    mut connection: RedisConnection,
    stop: CancellationToken,
) {
    loop {
        let push = tokio::select! {
            () = stop.cancelled() => return,
            push = received.recv() => push,
        };
        let Some(push) = push else { return };
        match push.kind {
            PushKind::SMessage => {
                let Some(message) = redis::Msg::from_push_info(push) else {
                    continue;
                };
                let Ok(payload) = std::str::from_utf8(message.get_payload_bytes()) else {
                    continue;
                };
                if leases.revoke(payload) {
                    continue;
                }
                if let Some(lock_key) = hub.deliver(payload) {
                    pass_on(&mut connection, &hub, lock_key).await;
                }
            }
            PushKind::Disconnection => {
                hub.wake_all();
                tokio::spawn(recheck(leases.clone(), connection.clone(), stop.clone()));
            }
            _ => {}
        }
    }
}

/// Re-reads every held lease once the cluster answers again, firing the lost signal of those
/// it no longer holds (a failover to a replica that missed their grants).
async fn recheck(leases: Arc<LeaseBook>, mut connection: RedisConnection, stop: CancellationToken) {
    for _ in 0..RECHECK_TRIES {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(RECHECK_PAUSE) => {}
        }
        match leases.recheck(&mut connection).await {
            Ok(0) => return,
            Ok(lost) => {
                tracing::warn!(
                    lost,
                    "leases gone after the Redis Cluster connection dropped"
                );
                return;
            }
            Err(error) => {
                tracing::debug!(%error, "re-checking leases after a disconnection failed; trying again");
            }
        }
    }
}
