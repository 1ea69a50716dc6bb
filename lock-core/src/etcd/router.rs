//! The task owning a backend's watch stream: it sends creates and cancels, and routes each
//! reply by watch id to the watch it belongs to (see `watch.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use etcd_client as etcd;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::watch::{Command, Fired, Target, LINGER};

/// The stream, while it is open: where creates and cancels go, and where replies come from.
struct Stream {
    requests: etcd::WatchRequestSender,
    replies: etcd::WatchResponseStream,
}

/// One thing the task owning the stream has to handle.
enum Step {
    Command(Option<Command>),
    Reply(std::result::Result<Option<etcd::WatchResponse>, etcd::Error>),
    Tick,
}

/// Where the task sends a watch's news.
struct Waiter {
    created: Option<oneshot::Sender<()>>,
    fired: oneshot::Sender<Fired>,
}

/// A waiter on a shared queue-range watch, and the entry it waits for (`None`: any change).
struct Listener {
    waiter: Waiter,
    deleted: Option<Vec<u8>>,
}

/// The shared watch of one queue range.
struct Range {
    /// Its etcd watch id.
    id: i64,
    /// Whether etcd has created it.
    created: bool,
    listeners: HashMap<i64, Listener>,
    /// Since when it has had no listener.
    idle_since: Option<Instant>,
}

/// The task owning the stream, and what it routes.
pub(super) struct Router {
    client: etcd::Client,
    open_timeout: Duration,
    next_id: Arc<AtomicI64>,
    stream: Option<Stream>,
    /// Watches of their own, by watch id.
    single: HashMap<i64, Waiter>,
    /// Shared queue-range watches, by range.
    ranges: HashMap<Vec<u8>, Range>,
    /// The range of each shared watch id.
    by_id: HashMap<i64, Vec<u8>>,
    /// The range each listener (by its watch handle's id) is on.
    listening: HashMap<i64, Vec<u8>>,
}

impl Router {
    /// A router with no stream yet; ids of shared watches come from `next_id`.
    pub(super) fn new(
        client: etcd::Client,
        open_timeout: Duration,
        next_id: Arc<AtomicI64>,
    ) -> Self {
        Self {
            client,
            open_timeout,
            next_id,
            stream: None,
            single: HashMap::new(),
            ranges: HashMap::new(),
            by_id: HashMap::new(),
            listening: HashMap::new(),
        }
    }

    /// Sends creates and cancels, routes replies, drops idle range watches; ends with the
    /// backend.
    pub(super) async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let step = tokio::select! {
                command = commands.recv() => Step::Command(command),
                reply = next_reply(&mut self.stream) => Step::Reply(reply),
                _ = tick.tick() => Step::Tick,
            };
            match step {
                Step::Command(None) => return,
                Step::Command(Some(Command::Cancel(id))) => self.cancel(id).await,
                Step::Command(Some(Command::Add {
                    id,
                    target,
                    from_revision,
                    created,
                    fired,
                })) => {
                    if !fired.is_closed() {
                        let waiter = Waiter {
                            created: Some(created),
                            fired,
                        };
                        self.add(id, target, from_revision, waiter).await;
                    }
                }
                Step::Reply(Ok(Some(reply))) => self.route(&reply).await,
                Step::Reply(Ok(None) | Err(_)) => self.interrupt_all(),
                Step::Tick => self.drop_idle().await,
            }
        }
    }

    /// Registers a watch: one of its own, or a listener on the shared watch of its range.
    async fn add(&mut self, id: i64, target: Target, from: Option<i64>, waiter: Waiter) {
        match target {
            Target::Deleted(key) => {
                let mut options = etcd::WatchOptions::new()
                    .with_watch_id(id)
                    .with_filters([etcd::WatchFilterType::NoPut]);
                if let Some(revision) = from {
                    options = options.with_start_revision(revision);
                }
                if self.send_create(key, options).await {
                    self.single.insert(id, waiter);
                } else {
                    waiter.fired.send(Fired::Interrupted).ok();
                    self.interrupt_all();
                }
            }
            Target::InQueue { range, deleted } => {
                if !self.ranges.contains_key(&range) {
                    let range_id = self.next_id.fetch_add(1, Ordering::Relaxed);
                    let options = etcd::WatchOptions::new()
                        .with_watch_id(range_id)
                        .with_prefix();
                    if !self.send_create(range.clone(), options).await {
                        waiter.fired.send(Fired::Interrupted).ok();
                        self.interrupt_all();
                        return;
                    }
                    self.by_id.insert(range_id, range.clone());
                    let shared = Range {
                        id: range_id,
                        created: false,
                        listeners: HashMap::new(),
                        idle_since: None,
                    };
                    self.ranges.insert(range.clone(), shared);
                }
                let Some(shared) = self.ranges.get_mut(&range) else {
                    return;
                };
                let mut waiter = waiter;
                if shared.created {
                    if let Some(created) = waiter.created.take() {
                        created.send(()).ok();
                    }
                }
                shared.idle_since = None;
                shared.listeners.insert(id, Listener { waiter, deleted });
                self.listening.insert(id, range);
            }
        }
    }

    /// Sends a create request, opening the stream with it when there is none.
    async fn send_create(&mut self, key: Vec<u8>, options: etcd::WatchOptions) -> bool {
        if let Some(open) = self.stream.as_mut() {
            return open.requests.watch(key, Some(options)).await.is_ok();
        }
        let opening = self.client.watch(key, Some(options));
        match tokio::time::timeout(self.open_timeout, opening).await {
            Ok(Ok(opened)) => {
                let (requests, replies) = opened.split();
                self.stream = Some(Stream { requests, replies });
                true
            }
            Ok(Err(error)) => {
                tracing::debug!(%error, "opening the etcd watch stream failed");
                false
            }
            Err(_) => false,
        }
    }

    /// Cancels watch `id` on the server; a failure breaks the stream.
    async fn cancel_on_server(&mut self, id: i64) {
        if let Some(open) = self.stream.as_mut() {
            if open.requests.cancel(id).await.is_err() {
                self.interrupt_all();
            }
        }
    }

    /// A waiter gave up its watch.
    async fn cancel(&mut self, id: i64) {
        if self.single.remove(&id).is_some() {
            self.cancel_on_server(id).await;
        } else if let Some(range) = self.listening.remove(&id) {
            if let Some(shared) = self.ranges.get_mut(&range) {
                shared.listeners.remove(&id);
                if shared.listeners.is_empty() {
                    shared.idle_since = Some(Instant::now());
                }
            }
        }
    }

    /// Routes a reply to the watch it belongs to.
    async fn route(&mut self, reply: &etcd::WatchResponse) {
        let id = reply.watch_id();
        if let Some(range) = self.by_id.get(&id).cloned() {
            return self.route_range(&range, reply).await;
        }
        if reply.created() && !reply.canceled() {
            if let Some(created) = self.single.get_mut(&id).and_then(|w| w.created.take()) {
                created.send(()).ok();
            }
        }
        let fired = if reply.canceled() {
            Fired::Interrupted
        } else if reply.events().is_empty() {
            return;
        } else {
            Fired::Event
        };
        if let Some(waiter) = self.single.remove(&id) {
            waiter.fired.send(fired).ok();
            if fired == Fired::Event {
                self.cancel_on_server(id).await;
            }
        }
    }

    /// Routes a reply of a shared range watch to the listeners it concerns.
    async fn route_range(&mut self, range: &[u8], reply: &etcd::WatchResponse) {
        let Some(shared) = self.ranges.get_mut(range) else {
            return;
        };
        if reply.canceled() {
            // History compacted, or the server gave it up: everyone looks again.
            if let Some(shared) = self.ranges.remove(range) {
                self.by_id.remove(&shared.id);
                for (id, listener) in shared.listeners {
                    self.listening.remove(&id);
                    listener.waiter.fired.send(Fired::Interrupted).ok();
                }
            }
            return;
        }
        if reply.created() {
            shared.created = true;
            for listener in shared.listeners.values_mut() {
                if let Some(created) = listener.waiter.created.take() {
                    created.send(()).ok();
                }
            }
        }
        if reply.events().is_empty() {
            return;
        }
        let deleted: Vec<&[u8]> = reply
            .events()
            .iter()
            .filter(|e| e.event_type() == etcd::EventType::Delete)
            .filter_map(|e| e.kv().map(etcd::KeyValue::key))
            .collect();
        let woken: Vec<i64> = shared
            .listeners
            .iter()
            .filter(|(_, l)| match &l.deleted {
                Some(key) => deleted.contains(&key.as_slice()),
                None => true,
            })
            .map(|(id, _)| *id)
            .collect();
        for id in woken {
            if let Some(listener) = shared.listeners.remove(&id) {
                self.listening.remove(&id);
                listener.waiter.fired.send(Fired::Event).ok();
            }
        }
        if shared.listeners.is_empty() && shared.idle_since.is_none() {
            shared.idle_since = Some(Instant::now());
        }
    }

    /// Cancels the range watches nobody has listened to for [`LINGER`].
    async fn drop_idle(&mut self) {
        let now = Instant::now();
        let idle: Vec<Vec<u8>> = self
            .ranges
            .iter()
            .filter(|(_, r)| r.idle_since.is_some_and(|since| now >= since + LINGER))
            .map(|(range, _)| range.clone())
            .collect();
        for range in idle {
            if let Some(shared) = self.ranges.remove(&range) {
                self.by_id.remove(&shared.id);
                self.cancel_on_server(shared.id).await;
            }
        }
    }

    /// Drops the stream and tells every waiter to look again.
    fn interrupt_all(&mut self) {
        self.stream = None;
        for (_, waiter) in self.single.drain() {
            waiter.fired.send(Fired::Interrupted).ok();
        }
        for (_, shared) in self.ranges.drain() {
            for (_, listener) in shared.listeners {
                listener.waiter.fired.send(Fired::Interrupted).ok();
            }
        }
        self.by_id.clear();
        self.listening.clear();
    }
}

/// The next reply of the stream; never resolves while there is none.
async fn next_reply(
    stream: &mut Option<Stream>,
) -> std::result::Result<Option<etcd::WatchResponse>, etcd::Error> {
    match stream.as_mut() {
        Some(open) => open.replies.message().await,
        None => std::future::pending().await,
    }
}
