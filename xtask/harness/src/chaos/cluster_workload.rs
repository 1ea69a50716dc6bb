//! The in-process workload of scenario 12 (cluster member or leader killed): a few lock
//! clients, several tasks each, looping acquire → fenced critical sections on the round's
//! [`Resource`] → release on one key, while the coordinator kills cluster members.
//!
//! Client 0 is the one pinned to a single member. On request ([`Workload::arm_victim`]) the
//! next task of client 0 to get the lock becomes *the victim*: it holds until its lease is lost
//! (the coordinator kills its member meanwhile), then stops; with `linger` (the
//! `--unsafe-ignore-lost` switch) any holder whose lease was lost keeps writing for that long.
//!
//! Besides the resource's own counters, the workload records what only the clients see:
//! fencing tokens granted out of order, untyped errors, when the victim's `lost()` fired, and
//! the first section after a kill by a client not pinned to the killed member, under a grant
//! taken after the kill (a holder that already had the lock proves nothing about failover).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lock_core::{FencingToken, LockClient, LockError, LockGuard};
use tokio::task::JoinHandle;
use tokio::time::{sleep, Instant};

use super::resource::Resource;

/// How the workload behaves.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// The watchdog lease every holder takes.
    pub ttl: Duration,
    /// Tasks per client.
    pub tasks: usize,
    /// Critical sections per ordinary hold.
    pub sections: u32,
    /// Pause between two sections of one hold.
    pub period: Duration,
    /// Whether the writes carry the fencing check (`--unsafe-no-fence` turns it off).
    pub fenced: bool,
    /// `--unsafe-ignore-lost`: how long a holder whose lease was lost keeps writing.
    pub linger: Option<Duration>,
    /// The longest the victim holds (if its lease is never lost).
    pub victim_cap: Duration,
}

/// What the workload saw, at the end.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// Critical sections completed.
    pub sections: u64,
    /// Holders whose lease was lost while they held.
    pub lost: u64,
    /// Typed errors (unavailable, timeout, lease lost) from acquire and release.
    pub typed_errors: u64,
    /// Any other error: each is a violation.
    pub untyped_errors: Vec<String>,
    /// Grants whose fencing token was not above every earlier grant's.
    pub fence_regressions: Vec<String>,
    /// The resource failing (its Redis), not the lock.
    pub resource_errors: Vec<String>,
    /// Tasks that had not ended when the workload was stopped (aborted).
    pub stuck_tasks: usize,
}

/// The first section after a kill (see the module docs).
#[derive(Default)]
struct Probe {
    since: Option<Instant>,
    excluded_client: Option<usize>,
    first: Option<Instant>,
}

/// The victim's story.
#[derive(Default)]
struct Victim {
    armed: bool,
    granted: Option<Instant>,
    lost: Option<Instant>,
}

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    sections: AtomicU64,
    lost: AtomicU64,
    typed_errors: AtomicU64,
    max_fence: Mutex<u64>,
    seen: Mutex<Seen>,
    probe: Mutex<Probe>,
    victim: Mutex<Victim>,
    /// Sent on whenever a section completes or the victim gets the lock: what the
    /// coordinator's waits wake on.
    changed: tokio::sync::watch::Sender<()>,
}

/// The running workload.
pub struct Workload {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl Workload {
    /// Starts `plan.tasks` tasks per client locking `key`, writing to `resource`.
    #[must_use]
    pub fn start(clients: &[LockClient], key: &str, resource: &Resource, plan: Plan) -> Self {
        let shared = Arc::new(Shared::default());
        let mut tasks = Vec::new();
        for (index, client) in clients.iter().enumerate() {
            for task in 0..plan.tasks {
                let holder = Holder {
                    client: client.clone(),
                    index,
                    value: format!("c{index}t{task}"),
                    key: key.to_owned(),
                    resource: resource.clone(),
                    plan,
                    shared: Arc::clone(&shared),
                };
                tasks.push(tokio::spawn(holder.run()));
            }
        }
        Self { shared, tasks }
    }

    /// Critical sections completed so far.
    #[must_use]
    pub fn sections(&self) -> u64 {
        self.shared.sections.load(Ordering::SeqCst)
    }

    /// Waits (up to `limit`) until `n` sections have completed; whether they did.
    pub async fn wait_sections(&self, n: u64, limit: Duration) -> bool {
        self.wait_until(Instant::now() + limit, |shared| {
            shared.sections.load(Ordering::SeqCst) >= n
        })
        .await
    }

    /// Waits until `done` holds of the shared state, waking on each change, or `until` passes;
    /// whether it held.
    async fn wait_until(&self, until: Instant, done: impl Fn(&Shared) -> bool) -> bool {
        let mut changed = self.shared.changed.subscribe();
        loop {
            if done(&self.shared) {
                return true;
            }
            if tokio::time::timeout_at(until, changed.changed())
                .await
                .is_err()
            {
                return done(&self.shared);
            }
        }
    }

    /// Makes the next task of client 0 to get the lock the victim (see the module docs).
    pub fn arm_victim(&self) {
        *self.shared.victim.lock().unwrap() = Victim {
            armed: true,
            ..Victim::default()
        };
    }

    /// Waits (up to `limit`) until the victim holds the lock; whether it does.
    pub async fn wait_victim_holding(&self, limit: Duration) -> bool {
        let holding = self
            .wait_until(Instant::now() + limit, |shared| {
                shared.victim.lock().unwrap().granted.is_some()
            })
            .await;
        if !holding {
            self.shared.victim.lock().unwrap().armed = false;
        }
        holding
    }

    /// When the victim's `lost()` fired, if it did.
    #[must_use]
    pub fn victim_lost_at(&self) -> Option<Instant> {
        self.shared.victim.lock().unwrap().lost
    }

    /// Starts watching for the first section, under a grant taken at or after `since`, by a
    /// client other than `excluded_client`.
    pub fn probe(&self, since: Instant, excluded_client: Option<usize>) {
        *self.shared.probe.lock().unwrap() = Probe {
            since: Some(since),
            excluded_client,
            first: None,
        };
    }

    /// Waits (up to `limit` after the probe's start) for that first section; how long after
    /// the probe's start it came.
    pub async fn wait_progress(&self, limit: Duration) -> Option<Duration> {
        let since = self.shared.probe.lock().unwrap().since?;
        let first = |shared: &Shared| shared.probe.lock().unwrap().first;
        self.wait_until(since + limit, |shared| first(shared).is_some())
            .await;
        first(&self.shared).map(|first| first - since)
    }

    /// Stops every task (waiting up to `limit` for them to end, aborting the rest) and returns
    /// what the workload saw.
    pub async fn stop(mut self, limit: Duration) -> Seen {
        self.shared.stop.store(true, Ordering::SeqCst);
        let until = Instant::now() + limit;
        let mut stuck = 0;
        for task in std::mem::take(&mut self.tasks) {
            let left = until.saturating_duration_since(Instant::now());
            let abort = task.abort_handle();
            if tokio::time::timeout(left, task).await.is_err() {
                abort.abort();
                stuck += 1;
            }
        }
        let mut seen = self.shared.seen.lock().unwrap().clone();
        seen.sections = self.sections();
        seen.lost = self.shared.lost.load(Ordering::SeqCst);
        seen.typed_errors = self.shared.typed_errors.load(Ordering::SeqCst);
        seen.stuck_tasks = stuck;
        seen
    }
}

/// One task: a client's loop of acquire → hold → release.
struct Holder {
    client: LockClient,
    index: usize,
    value: String,
    key: String,
    resource: Resource,
    plan: Plan,
    shared: Arc<Shared>,
}

impl Holder {
    fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::SeqCst)
    }

    async fn run(self) {
        while !self.stopped() {
            let acquired = self
                .client
                .lock(&self.key)
                .lease(lock_core::LeaseMode::watchdog(self.plan.ttl))
                .acquire_within(self.plan.ttl * 2)
                .await;
            let guard = match acquired {
                Ok(Some(guard)) => guard,
                Ok(None) => continue,
                Err(e) => {
                    self.error(&e);
                    sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let granted = Instant::now();
            self.check_fence(&guard);
            let victim = self.index == 0 && self.take_victim_role(&guard, granted);
            self.hold(&guard, granted, victim).await;
            if let Err(e) = guard.release().await {
                self.error(&e);
            }
        }
    }

    /// Becomes the victim if one is wanted; then records when its `lost()` fires.
    fn take_victim_role(&self, guard: &LockGuard, granted: Instant) -> bool {
        let mut victim = self.shared.victim.lock().unwrap();
        if !victim.armed {
            return false;
        }
        victim.armed = false;
        victim.granted = Some(granted);
        self.shared.changed.send_replace(());
        let (lost, shared) = (guard.lost(), Arc::clone(&self.shared));
        tokio::spawn(async move {
            lost.await;
            shared.victim.lock().unwrap().lost = Some(Instant::now());
        });
        true
    }

    /// Fencing tokens must grow in grant order. A grant already lost when seen may be older
    /// than a later holder's and is not compared.
    fn check_fence(&self, guard: &LockGuard) {
        let fence = guard.fencing_token().get();
        let mut max = self.shared.max_fence.lock().unwrap();
        if fence <= *max && !guard.is_lost() {
            let text = format!("token {fence} granted after {}", *max);
            self.shared
                .seen
                .lock()
                .unwrap()
                .fence_regressions
                .push(text);
        }
        *max = (*max).max(fence);
    }

    /// Critical sections until the hold is over. The holder stops as soon as `lost()` says
    /// so (the sections run under `select!` with it), unless `linger` asks it to go on.
    async fn hold(&self, guard: &LockGuard, granted: Instant, victim: bool) {
        let fence = guard.fencing_token();
        let sections = async {
            let started = Instant::now();
            let mut lost_at: Option<Instant> = None;
            let mut done = 0;
            loop {
                if guard.is_lost() {
                    let Some(linger) = self.plan.linger else {
                        break;
                    };
                    let at = *lost_at.get_or_insert_with(|| {
                        self.shared.lost.fetch_add(1, Ordering::SeqCst);
                        Instant::now()
                    });
                    if at.elapsed() >= linger {
                        break;
                    }
                } else if self.stopped()
                    || (!victim && done >= self.plan.sections)
                    || (victim && started.elapsed() >= self.plan.victim_cap)
                {
                    break;
                }
                self.section(fence, granted).await;
                done += 1;
                sleep(self.plan.period).await;
            }
        };
        if self.plan.linger.is_some() {
            sections.await;
            return;
        }
        tokio::select! {
            _ = guard.lost() => {
                self.shared.lost.fetch_add(1, Ordering::SeqCst);
            }
            () = sections => {}
        }
    }

    /// One section, in a task of its own: leaving the hold on `lost()` must not cut a
    /// section between the resource's "enter" and "leave" (its counters would think it is
    /// still open). A write already sent lands anyway, as it would in any application.
    async fn section(&self, fence: FencingToken, granted: Instant) {
        let (resource, fenced, value) =
            (self.resource.clone(), self.plan.fenced, self.value.clone());
        let written =
            tokio::spawn(async move { resource.section(fence, fenced, &value).await }).await;
        match written {
            Ok(Ok(_)) => {
                self.shared.sections.fetch_add(1, Ordering::SeqCst);
                let mut probe = self.shared.probe.lock().unwrap();
                let counts = probe.since.is_some_and(|since| granted >= since)
                    && probe.excluded_client != Some(self.index);
                if counts && probe.first.is_none() {
                    probe.first = Some(Instant::now());
                }
                drop(probe);
                self.shared.changed.send_replace(());
            }
            Ok(Err(e)) => self.shared.seen.lock().unwrap().resource_errors.push(e),
            Err(e) => self
                .shared
                .seen
                .lock()
                .unwrap()
                .resource_errors
                .push(e.to_string()),
        }
    }

    fn error(&self, e: &LockError) {
        if e.is_unavailable() || e.is_timeout() || e.is_lost() {
            self.shared.typed_errors.fetch_add(1, Ordering::SeqCst);
        } else {
            let text = format!("client {}: {}", self.index, e.with_causes());
            self.shared.seen.lock().unwrap().untyped_errors.push(text);
        }
    }
}
