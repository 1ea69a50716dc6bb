//! In-process single flight: callers in one process that miss the same key share one
//! computation (or one wait for another instance's), as moka's `get_with` does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::computed::SharedFailure;
use super::Cached;
use crate::sync::lock;

/// What a flight ends with, as its followers receive it: the value, or why there is none.
pub(crate) type Landing = Result<Cached<Vec<u8>>, Landed>;

/// Why a flight landed without a value.
#[derive(Clone, Debug)]
pub(crate) enum Landed {
    /// A computation failed: its failure, as it is shared.
    Failure(SharedFailure),
    /// Anything else (a backend failing closed, a wait that ran out): its message.
    Error(String),
}

type Slot = watch::Receiver<Option<Landing>>;

/// The flights in progress, by full key.
#[derive(Default)]
pub(crate) struct Flights {
    flights: Mutex<HashMap<String, Slot>>,
}

/// How a caller joined a key's flight.
pub(crate) enum Joined {
    /// It runs the flight; the others wait for it.
    Leader(Lead),
    /// Another caller runs it.
    Follower(Slot),
}

impl Flights {
    /// Joins the flight of `key`, starting one when none is in progress.
    pub(crate) fn join(self: &Arc<Self>, key: &str) -> Joined {
        let mut flights = lock(&self.flights);
        if let Some(slot) = flights.get(key) {
            if slot.has_changed().is_ok() {
                return Joined::Follower(slot.clone());
            }
        }
        let (sender, slot) = watch::channel(None);
        flights.insert(key.to_owned(), slot.clone());
        Joined::Leader(Lead {
            flights: self.clone(),
            key: key.to_owned(),
            slot,
            sender: Some(sender),
        })
    }

    /// True while a flight of `key` is in progress.
    pub(crate) fn in_progress(&self, key: &str) -> bool {
        lock(&self.flights)
            .get(key)
            .is_some_and(|slot| slot.has_changed().is_ok())
    }
}

/// Waits for the flight's landing; `None` when its leader went without one (cancelled,
/// panicked): the caller joins again, and one of the waiting callers leads.
pub(crate) async fn follow(mut slot: Slot) -> Option<Landing> {
    let landed = slot.wait_for(Option::is_some).await.ok()?;
    landed.clone()
}

/// The leader's side of a flight. Dropped without [`land`](Self::land), it ends the flight
/// with no landing, so followers try again instead of waiting forever.
pub(crate) struct Lead {
    flights: Arc<Flights>,
    key: String,
    slot: Slot,
    sender: Option<watch::Sender<Option<Landing>>>,
}

impl Lead {
    /// Closes the flight to callers joining it from now on (they start one of their own);
    /// true when callers already joined it and wait for its landing.
    pub(crate) fn close(&mut self) -> bool {
        let mut flights = lock(&self.flights.flights);
        if flights
            .get(&self.key)
            .is_some_and(|slot| slot.same_channel(&self.slot))
        {
            flights.remove(&self.key);
        }
        drop(flights);
        // Besides the leader's own receiver, each follower's.
        self.sender
            .as_ref()
            .is_some_and(|sender| sender.receiver_count() > 1)
    }

    /// Hands `landing` to the followers and ends the flight.
    pub(crate) fn land(mut self, landing: Landing) {
        if let Some(sender) = self.sender.take() {
            sender.send_replace(Some(landing));
        }
    }
}

impl Drop for Lead {
    fn drop(&mut self) {
        let mut flights = lock(&self.flights.flights);
        if flights
            .get(&self.key)
            .is_some_and(|slot| slot.same_channel(&self.slot))
        {
            flights.remove(&self.key);
        }
    }
}
