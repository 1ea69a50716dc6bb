//! [`Runs`]: what the suites' test handlers count of their runs, and the gate that holds a
//! run inside the handler until the test lets it go.

use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Semaphore};

/// The runs of a test handler: how many started, how many were inside at once, how many were
/// dropped before they answered (cancelled by the middleware), what each was given (`T`: the
/// lock or claim the layer handed the handler, [recorded](Self::record) in order), and a gate
/// that [held](Run::hold) runs wait at until the test [opens](Self::open) it.
///
/// ```
/// use lock_testing::Runs;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let runs: Runs = Runs::new();
/// let held = async {
///     let mut run = runs.start();
///     run.hold().await;
///     run.answered();
/// };
/// let test = async {
///     runs.entered(1).await;
///     assert_eq!(runs.inside(), 1);
///     runs.open(1);
/// };
/// tokio::join!(held, test);
/// drop(runs.start()); // dropped before it answered
/// assert_eq!((runs.runs(), runs.cancelled(), runs.most_inside()), (2, 1, 1));
/// # }
/// ```
#[derive(Debug)]
pub struct Runs<T = ()> {
    given: Mutex<Vec<T>>,
    started: AtomicUsize,
    cancelled: AtomicUsize,
    inside: AtomicUsize,
    most_inside: AtomicUsize,
    entered: watch::Sender<usize>,
    gate: Semaphore,
}

impl<T> Default for Runs<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Runs<T> {
    /// How long [`entered`](Self::entered) waits, as every suite bounds its steps: 20 s.
    pub const LIMIT: Duration = Duration::from_secs(20);

    /// No run yet, the gate closed.
    #[must_use]
    pub fn new() -> Self {
        Self {
            given: Mutex::new(Vec::new()),
            started: AtomicUsize::new(0),
            cancelled: AtomicUsize::new(0),
            inside: AtomicUsize::new(0),
            most_inside: AtomicUsize::new(0),
            entered: watch::channel(0).0,
            gate: Semaphore::new(0),
        }
    }

    /// Counts a run that starts now; it is inside the handler until the [`Run`] is dropped.
    pub fn start(&self) -> Run<'_, T> {
        let number = self.started.fetch_add(1, Ordering::SeqCst) + 1;
        let inside = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_inside.fetch_max(inside, Ordering::SeqCst);
        Run {
            runs: self,
            number,
            answered: false,
        }
    }

    /// Records what a run was given.
    ///
    /// # Panics
    /// When a run panicked while recording.
    pub fn record(&self, given: T) {
        self.given.lock().unwrap().push(given);
    }

    /// What each run was given, in the order they [recorded](Self::record) it.
    ///
    /// # Panics
    /// When a run panicked while recording.
    #[must_use]
    pub fn records(&self) -> Vec<T>
    where
        T: Clone,
    {
        self.given.lock().unwrap().clone()
    }

    /// How many runs started, whatever came of them.
    #[must_use]
    pub fn runs(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    /// How many runs were dropped before they answered.
    #[must_use]
    pub fn cancelled(&self) -> usize {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// How many runs are inside now (started, not yet answered or dropped).
    #[must_use]
    pub fn inside(&self) -> usize {
        self.inside.load(Ordering::SeqCst)
    }

    /// The most runs that were inside at the same moment.
    #[must_use]
    pub fn most_inside(&self) -> usize {
        self.most_inside.load(Ordering::SeqCst)
    }

    /// Resolves once runs have [held](Run::hold) at the gate `n` times in all, within
    /// [`LIMIT`](Self::LIMIT).
    ///
    /// # Panics
    /// When they have not.
    pub async fn entered(&self, n: usize) {
        let mut entered = self.entered.subscribe();
        tokio::time::timeout(Self::LIMIT, entered.wait_for(|count| *count >= n))
            .await
            .unwrap_or_else(|_| panic!("the handler was entered {n} times in time"))
            .expect("the handler is alive");
    }

    /// Lets `n` held (or future) runs go on.
    pub fn open(&self, n: usize) {
        self.gate.add_permits(n);
    }
}

/// One run, inside the handler until dropped; counted as cancelled when dropped before
/// [`answered`](Self::answered).
#[derive(Debug)]
#[must_use = "the run leaves the handler when dropped"]
pub struct Run<'a, T = ()> {
    runs: &'a Runs<T>,
    number: usize,
    answered: bool,
}

impl<T> Run<'_, T> {
    /// The run's number: the runs started before it and this one, from 1.
    #[must_use]
    pub fn number(&self) -> usize {
        self.number
    }

    /// Counts as entered, then waits at the gate for a permit ([`Runs::open`]).
    ///
    /// # Panics
    /// Never: the gate is never closed.
    pub async fn hold(&mut self) {
        self.runs.entered.send_modify(|count| *count += 1);
        self.runs
            .gate
            .acquire()
            .await
            .expect("the gate is never closed")
            .forget();
    }

    /// The run answered: dropping it now is not a cancellation.
    pub fn answered(&mut self) {
        self.answered = true;
    }
}

impl<T> Drop for Run<'_, T> {
    fn drop(&mut self) {
        self.runs.inside.fetch_sub(1, Ordering::SeqCst);
        if !self.answered {
            self.runs.cancelled.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A suite's test handler: [`Runs`] shared by its clones, what each run was given `T` (the
/// lock or the claim the layer handed it). Each suite gives it its answer
/// ([`keyed_lock::Handler`](super::keyed_lock::Handler),
/// [`idempotency::Handler`](super::idempotency::Handler)); its counts are the [`Runs`]'.
///
/// ```
/// use lock_testing::SuiteHandler;
///
/// let handler: SuiteHandler<&str> = SuiteHandler::new();
/// let clone = handler.clone();
/// clone.record("given");
/// assert_eq!(handler.records(), ["given"], "clones share their runs");
/// ```
#[derive(Debug)]
pub struct SuiteHandler<T>(Arc<Runs<T>>);

impl<T> SuiteHandler<T> {
    /// A handler that has not run yet, its gate closed.
    #[must_use]
    pub fn new() -> Self {
        Self(Arc::new(Runs::new()))
    }
}

impl<T> Clone for SuiteHandler<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> Default for SuiteHandler<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Deref for SuiteHandler<T> {
    type Target = Runs<T>;

    fn deref(&self) -> &Runs<T> {
        &self.0
    }
}
