//! One pub/sub subscription kept up for as long as its owner lives: subscribes, hands every
//! message to a [`Listener`], and when the connection drops subscribes again, telling the
//! listener both ways so it can make up for what it missed. Shared by the lock's wake-ups and
//! the cache's value pushes.
//!
//! Subscribing again goes through the backend's [`Breaker`]: a failed try counts towards
//! opening it, and while it is open the loop waits to be let through (as the probe, or after
//! another call's probe closed it) instead of retrying every quarter second against a server
//! that is down. Each try is logged at DEBUG; the outage is the breaker's to report.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::availability;
use super::connection::SentinelPrimary;
use crate::breaker::Breaker;

/// The first pause before subscribing again after the subscription dropped.
const RECONNECT_FIRST: Duration = Duration::from_millis(50);
/// The longest pause between two tries while the breaker still lets them through: a try
/// against a server that is down fails at once, and the sooner it is back, the sooner the
/// listener can catch up. Once the breaker is open, its cool-down paces the tries.
const RECONNECT_CAP: Duration = Duration::from_millis(250);

/// Where a backend's subscriptions connect.
#[derive(Clone)]
pub(crate) enum PubSubSource {
    /// The one server.
    Server(Box<redis::Client>),
    /// Any node of a Redis Cluster, tried in turn from the last that answered: a `PUBLISH`
    /// reaches every node of a cluster.
    ClusterNodes {
        nodes: Arc<[redis::Client]>,
        next: Arc<AtomicUsize>,
    },
    /// The primary Sentinel names now (replicas also see what is published on it, but a
    /// primary that failed may come back as a lagging replica).
    Sentinel(Arc<SentinelPrimary>),
}

impl PubSubSource {
    /// A new pub/sub connection.
    pub(crate) async fn open(&self) -> redis::RedisResult<redis::aio::PubSub> {
        match self {
            Self::Server(client) => client.get_async_pubsub().await,
            Self::ClusterNodes { nodes, next } => {
                let start = next.load(Ordering::Relaxed);
                let mut last_error = None;
                for offset in 0..nodes.len() {
                    let index = (start + offset) % nodes.len();
                    match nodes[index].get_async_pubsub().await {
                        Ok(pubsub) => {
                            next.store(index, Ordering::Relaxed);
                            return Ok(pubsub);
                        }
                        Err(error) => last_error = Some(error),
                    }
                }
                Err(last_error.unwrap_or_else(|| {
                    redis::RedisError::from((
                        redis::ErrorKind::InvalidClientConfig,
                        "a Redis Cluster backend without nodes",
                    ))
                }))
            }
            Self::Sentinel(primary) => match primary.client().get_async_pubsub().await {
                Ok(pubsub) => Ok(pubsub),
                Err(error) => {
                    // The primary may have failed over: the next try goes where the
                    // sentinels point now.
                    primary.recheck().await;
                    Err(error)
                }
            },
        }
    }
}

/// What a subscription does with what it receives.
pub(crate) trait Listener: Send {
    /// A message arrived on the channel.
    fn message(&mut self, payload: &[u8]) -> impl Future<Output = ()> + Send;
    /// The subscription is up: for the first time (`first`), or again after a drop, when
    /// messages published meanwhile are lost.
    fn subscribed(&mut self, first: bool) -> impl Future<Output = ()> + Send;
    /// The subscription dropped; it is being re-established.
    fn dropped(&mut self);
}

/// Keeps `channel` subscribed until `stop`. Reports on `ready` once the first subscription is
/// up, or that the first attempt failed (then it gives up: the caller's connect fails).
pub(crate) async fn run(
    source: PubSubSource,
    channel: String,
    breaker: Breaker,
    stop: CancellationToken,
    ready: oneshot::Sender<redis::RedisResult<()>>,
    mut listener: impl Listener,
) {
    let mut ready = Some(ready);
    let mut backoff = RECONNECT_FIRST;
    // When the subscription last dropped, for the event when it is back.
    let mut down_since: Option<tokio::time::Instant> = None;
    loop {
        // The first try is the backend's connect, which reports its own failure.
        let admission = if ready.is_some() {
            None
        } else {
            tokio::select! {
                () = stop.cancelled() => return,
                admission = breaker.admitted() => Some(admission),
            }
        };
        let subscribed = async {
            let mut pubsub = source.open().await?;
            pubsub.subscribe(&channel).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        let pubsub = tokio::select! {
            () = stop.cancelled() => return,
            result = subscribed => result,
        };
        if let Some(admission) = admission {
            availability::settle(admission, &pubsub);
        }
        let pubsub = match pubsub {
            Ok(pubsub) => pubsub,
            Err(error) => {
                if let Some(ready) = ready.take() {
                    ready.send(Err(error)).ok();
                    return;
                }
                tracing::debug!(%channel, %error, "subscribing failed; trying again");
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(RECONNECT_CAP);
                continue;
            }
        };
        let first = match ready.take() {
            Some(ready) => {
                ready.send(Ok(())).ok();
                true
            }
            None => false,
        };
        backoff = RECONNECT_FIRST;
        if let Some(since) = down_since.take() {
            let down_ms = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
            tracing::debug!(%channel, down_ms, "subscribed again after the connection dropped");
        }
        listener.subscribed(first).await;
        let mut messages = pubsub.into_on_message();
        loop {
            let message = tokio::select! {
                () = stop.cancelled() => return,
                message = messages.next() => message,
            };
            let Some(message) = message else { break };
            listener.message(message.get_payload_bytes()).await;
        }
        tracing::debug!(%channel, "subscription dropped; subscribing again");
        down_since = Some(tokio::time::Instant::now());
        listener.dropped();
    }
}
