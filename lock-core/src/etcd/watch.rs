//! One etcd watch stream per backend, shared by every waiter and holder.
//!
//! etcd multiplexes watches on a stream by watch id. A task owns the stream: a waiter asks it
//! for a watch and gets a [`Watch`] that says when the watch is in place and resolves at its
//! first event; the task routes each reply by watch id, which the backend assigns (so a create
//! needs no answer before the next one is sent). Dropping a [`Watch`] cancels it, so an
//! abandoned wait leaves nothing behind. When the stream breaks every watch fires
//! [`Fired::Interrupted`] and the next watch opens a new stream: waiters look at the store
//! again either way, so nothing is missed.
//!
//! Waiters watch from *now* and look at the store once the watch is in place, rather than
//! watching from the revision they read: etcd serves a watch that starts in the past from its
//! history and moves it to the live event path only in a background pass every 100 ms. A
//! watch created from now can still land there, when a write commits while etcd registers it,
//! which under contention puts up to 100 ms into a handoff now and then. So waiters of a queue
//! share one watch on the queue's range ([`Target::InQueue`]), which this backend keeps while
//! it has waiters there and for [`LINGER`] after: it is created once, is live by the time
//! the next waiters need it, and each event wakes only the waiters it concerns (the one whose
//! entry ahead was deleted; every waiter of a semaphore).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use etcd_client as etcd;
use tokio::sync::{mpsc, oneshot};

use super::router::Router;

/// What ended a [`Watch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fired {
    /// The event waited for happened.
    Event,
    /// The watch or its stream ended without an event (stream broken, history compacted,
    /// etcd unreachable): look again.
    Interrupted,
}

/// What to watch.
pub(super) enum Target {
    /// The deletion of one key, on a watch of its own.
    Deleted(Vec<u8>),
    /// On the backend's shared watch of the queue range `range`: the deletion of the key
    /// `deleted`, or (`None`) any change in the range.
    InQueue {
        /// The queue's key range (a prefix).
        range: Vec<u8>,
        /// The entry whose deletion is waited for.
        deleted: Option<Vec<u8>>,
    },
}

/// How long the shared watch of a queue range stays after its last waiter left.
pub(super) const LINGER: Duration = Duration::from_secs(5);

/// What waiters ask of the task owning the stream.
pub(super) enum Command {
    /// A new watch, by its handle's id.
    Add {
        /// The handle's id (the etcd watch id, for a watch of its own).
        id: i64,
        /// What to watch.
        target: Target,
        /// From which revision (`None`: from now on).
        from_revision: Option<i64>,
        /// Told when the watch is in place.
        created: oneshot::Sender<()>,
        /// Told when it fires.
        fired: oneshot::Sender<Fired>,
    },
    /// A handle dropped before its watch fired.
    Cancel(i64),
}

/// The handle to the backend's shared watch stream.
pub(super) struct Watches {
    commands: mpsc::UnboundedSender<Command>,
    next_id: Arc<AtomicI64>,
}

/// One watch on the shared stream; resolves once, cancels itself when dropped unfired.
pub(super) struct Watch {
    id: i64,
    created: Option<oneshot::Receiver<()>>,
    fired: oneshot::Receiver<Fired>,
    commands: mpsc::UnboundedSender<Command>,
    done: bool,
}

impl Watches {
    /// Starts the task owning the stream (it opens the stream at the first watch, and ends
    /// when the backend goes).
    pub(super) fn start(client: etcd::Client, open_timeout: Duration) -> Self {
        let (commands, receiver) = mpsc::unbounded_channel();
        let next_id = Arc::new(AtomicI64::new(1));
        let router = Router::new(client, open_timeout, next_id.clone());
        tokio::spawn(router.run(receiver));
        Self { commands, next_id }
    }

    /// Watches `target` from `from_revision` (inclusive; `None`: from now on). A
    /// [`Target::InQueue`] watch is always from now on.
    pub(super) fn watch(&self, target: Target, from_revision: Option<i64>) -> Watch {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, fired) = oneshot::channel();
        let (created_sender, created) = oneshot::channel();
        // A send fails only when the task is gone: the watch then reads as interrupted.
        self.commands
            .send(Command::Add {
                id,
                target,
                from_revision,
                created: created_sender,
                fired: sender,
            })
            .ok();
        Watch {
            id,
            created: Some(created),
            fired,
            commands: self.commands.clone(),
            done: false,
        }
    }
}

impl Watch {
    /// Waits until the watch is in place: `true`, and every event from then on will fire it;
    /// `false` when it ended first (see [`fired`](Self::fired)).
    pub(super) async fn created(&mut self) -> bool {
        match self.created.take() {
            Some(created) => created.await.is_ok(),
            None => true,
        }
    }

    /// Waits for the watch to fire.
    pub(super) async fn fired(&mut self) -> Fired {
        let fired = (&mut self.fired).await.unwrap_or(Fired::Interrupted);
        self.done = true;
        fired
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if !self.done {
            // The task may be gone with the backend; then so is the watch.
            self.commands.send(Command::Cancel(self.id)).ok();
        }
    }
}
