//! The fair lock beside the lock (`cargo xtask bench --backend redis [--only fair]`): 8 tasks,
//! each on a backend of its own (as 8 processes would be), take turns on one key for 2,000
//! critical sections, each a Redis `GET` and `SET` of a counter. For both: handoffs between
//! different tasks, critical sections per second, acquire p50/p99, and the floor measured in
//! the same run (the same `GET` + `SET` with no lock, one task), with the ratios fair/lock and
//! each against the floor.
//!
//! The lock lets a releasing task take the key straight back (barging), so the same task often
//! holds it many times in a row; the fair lock hands it to the longest waiter inside the
//! release, so nearly every section is a handoff.
//!
//! With lock-harness's `compare` feature (which `cargo xtask bench` turns on), rslock runs the
//! same sections beside them: 8 lock managers (as 8 processes would have), each looping on
//! `SET NX PX` with its default retry delay, and a Lua release. rslock has no fencing token and
//! no watchdog; it is what a team would otherwise pick, so the fair lock's goal is its
//! sections/s with every section handed over.
//!
//! The machines are shared and noisy, so the two run in alternating rounds
//! ([`ROUNDS`], the order flipped each round) and the figures are medians over rounds; the
//! server's own time per section (`INFO commandstats`, scripts and plain commands) is shown
//! beside each, apart from the network and the clients.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use lock_core::{LockClient, RedisBackend};
use redis::AsyncCommands;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::{micros, Percentiles};

/// Tasks contending for the key.
pub const TASKS: usize = 8;
/// Critical sections per figure.
pub const SECTIONS: u64 = 2_000;
/// Rounds of each figure; the figures are medians over them.
pub const ROUNDS: usize = 5;

/// Which primitive a figure measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Primitive {
    Lock,
    Fair,
    /// rslock's lock (feature `compare`).
    Rslock,
}

/// One task's way to take the key: a lock client of ours, or an rslock manager.
#[derive(Clone)]
enum Contender {
    Ours(LockClient, Primitive),
    #[cfg(feature = "compare")]
    Rslock(Arc<rslock::LockManager>),
}

/// The key held by one [`Contender`].
enum Holding {
    Ours(lock_core::LockGuard),
    #[cfg(feature = "compare")]
    Rslock(Arc<rslock::LockManager>, rslock::Lock),
}

impl Contender {
    async fn acquire(&self, key: &str) -> Holding {
        match self {
            Self::Ours(locks, primitive) => Holding::Ours(acquire(locks, *primitive, key).await),
            #[cfg(feature = "compare")]
            Self::Rslock(manager) => {
                let lock = manager
                    .acquire_no_guard(key.as_bytes(), std::time::Duration::from_secs(30))
                    .await
                    .unwrap_or_else(|e| panic!("rslock acquire {key}: {e:?}"));
                Holding::Rslock(manager.clone(), lock)
            }
        }
    }
}

impl Holding {
    async fn release(self) {
        match self {
            Self::Ours(guard) => {
                guard.release().await.expect("release");
            }
            #[cfg(feature = "compare")]
            Self::Rslock(manager, lock) => manager.unlock(&lock).await,
        }
    }
}

/// One round of one primitive.
#[derive(Clone, Debug)]
struct Round {
    handoffs: u64,
    per_second: f64,
    samples: Vec<Duration>,
    lost_updates: u64,
    /// Server µs (every command) per critical section.
    server_us: f64,
}

/// The medians of a primitive's rounds.
#[derive(Clone, Copy, Debug)]
struct Figure {
    handoffs: u64,
    per_second: f64,
    acquire: Percentiles,
    lost_updates: u64,
    server_us: f64,
}

impl Figure {
    fn of(rounds: &[Round]) -> Self {
        let mut acquire: Vec<Percentiles> = rounds
            .iter()
            .map(|r| Percentiles::of(&mut r.samples.clone()))
            .collect();
        acquire.sort_by_key(|p| p.p99);
        Self {
            handoffs: median(rounds.iter().map(|r| r.handoffs as f64)) as u64,
            per_second: median(rounds.iter().map(|r| r.per_second)),
            acquire: acquire[acquire.len() / 2],
            lost_updates: rounds.iter().map(|r| r.lost_updates).sum(),
            server_us: median(rounds.iter().map(|r| r.server_us)),
        }
    }

    fn json(&self) -> Value {
        json!({ "handoffs": self.handoffs, "sections": SECTIONS, "sections_per_s": self.per_second,
                "acquire_p50_us": us(self.acquire.p50), "acquire_p99_us": us(self.acquire.p99),
                "acquire_max_us": us(self.acquire.max), "lost_updates": self.lost_updates,
                "server_us_per_section": self.server_us })
    }
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Measures the floor, the lock and the fair lock, prints them and returns them for the JSON
/// report.
pub async fn run(url: &str) -> Value {
    let namespace = format!("bench-fair-{}", std::process::id());
    let lock_clients = clients(url, &namespace, Primitive::Lock).await;
    let fair_clients = clients(url, &namespace, Primitive::Fair).await;
    let rslock_clients = rslock_clients(url).await;
    let (mut floors, mut locks, mut fairs, mut rslocks) = (vec![], vec![], vec![], vec![]);
    let (mut ratios, mut rslock_ratios) = (vec![], vec![]);
    for round in 0..ROUNDS {
        floors.push(floor(url).await);
        // Each round in another order, so none of them always runs first (or last).
        let mut order = vec![Primitive::Lock, Primitive::Fair];
        if !rslock_clients.is_empty() {
            order.push(Primitive::Rslock);
        }
        let turn = round % order.len();
        order.rotate_left(turn);
        let (mut lock, mut fair, mut theirs) = (None, None, None);
        for primitive in order {
            let (contenders, slot) = match primitive {
                Primitive::Lock => (&lock_clients, &mut lock),
                Primitive::Fair => (&fair_clients, &mut fair),
                Primitive::Rslock => (&rslock_clients, &mut theirs),
            };
            *slot = Some(contend(url, contenders, primitive, round).await);
        }
        let (lock, fair) = (lock.expect("lock round"), fair.expect("fair round"));
        ratios.push(fair.per_second / lock.per_second);
        if let Some(theirs) = theirs {
            rslock_ratios.push(fair.per_second / theirs.per_second);
            rslocks.push(theirs);
        }
        locks.push(lock);
        fairs.push(fair);
    }
    let floor = median(floors.into_iter());
    let (lock, fair) = (Figure::of(&locks), Figure::of(&fairs));
    let rslock = (!rslocks.is_empty()).then(|| Figure::of(&rslocks));
    println!("\nfair lock vs lock: {TASKS} tasks (a backend each) on one key, {SECTIONS} critical sections of GET + SET, medians of {ROUNDS} alternating rounds");
    println!("  floor: GET + SET, no lock, one task {floor:>10.0} sections/s");
    let mut figures = vec![("lock", &lock), ("fair lock", &fair)];
    if let Some(rslock) = &rslock {
        figures.push(("rslock", rslock));
    }
    for (name, figure) in figures {
        println!(
            "  {name:<10} handoffs {:>5} of {SECTIONS}  {:>8.0} sections/s ({:.2}× floor)  acquire p50 {:>10}  p99 {:>10}  server {:.0} µs/section  lost updates {}",
            figure.handoffs,
            figure.per_second,
            figure.per_second / floor,
            micros(figure.acquire.p50),
            micros(figure.acquire.p99),
            figure.server_us,
            figure.lost_updates
        );
    }
    let ratio = median(ratios.iter().copied());
    println!(
        "  fair/lock: sections/s {ratio:.2}× (median of the rounds' ratios {ratios:.2?}), acquire p99 {:.2}×  (goals: fair handoffs ≥ 1900, ≥ 1.0×, p99 ≤ 5 ms)",
        fair.acquire.p99.as_secs_f64() / lock.acquire.p99.as_secs_f64().max(1e-12)
    );
    let mut over_rslock = Value::Null;
    if let Some(theirs) = &rslock {
        let over = median(rslock_ratios.iter().copied());
        println!(
            "  fair/rslock: sections/s {over:.2}× (median of the rounds' ratios {rslock_ratios:.2?}), handoffs {} against rslock's {}  (goal: ≥ 1.0× with every section handed over)",
            fair.handoffs, theirs.handoffs
        );
        over_rslock = json!(over);
    }
    json!({ "tasks": TASKS, "sections": SECTIONS, "floor_sections_per_s": floor,
            "lock": lock.json(), "fair": fair.json(), "fair_over_lock_sections_per_s": ratio,
            "rslock": rslock.as_ref().map(Figure::json), "fair_over_rslock_sections_per_s": over_rslock })
}

/// Sections per second of the critical section alone: `GET` + `SET`, one task, no lock.
async fn floor(url: &str) -> f64 {
    let mut data = connection(url).await;
    let key = format!("bench-fair-floor:{}", std::process::id());
    let started = Instant::now();
    for _ in 0..SECTIONS {
        section(&mut data, &key).await;
    }
    let rate = SECTIONS as f64 / started.elapsed().as_secs_f64();
    let _: () = data.del(&key).await.expect("clean up");
    rate
}

async fn connection(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .expect("Redis URL")
        .get_multiplexed_async_connection()
        .await
        .expect("data connection")
}

/// The critical section: a non-atomic increment (a lost update if two overlap).
async fn section(data: &mut redis::aio::MultiplexedConnection, key: &str) -> u64 {
    let value: Option<u64> = data.get(key).await.expect("GET");
    let next = value.unwrap_or(0) + 1;
    let _: () = data.set(key, next).await.expect("SET");
    next
}

/// The server's count of calls and time in them, over every command.
async fn server_usec(data: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(data)
        .await
        .unwrap_or_default();
    info.lines()
        .filter(|line| line.starts_with("cmdstat_"))
        .filter_map(|line| {
            line.split(',')
                .find_map(|pair| pair.strip_prefix("usec="))
                .and_then(|n| n.parse::<u64>().ok())
        })
        .sum()
}

/// [`TASKS`] rslock managers, each with its own connection, warmed up; none without the
/// `compare` feature.
async fn rslock_clients(url: &str) -> Vec<Contender> {
    #[cfg(feature = "compare")]
    {
        let mut managers = Vec::with_capacity(TASKS);
        for _ in 0..TASKS {
            let manager = Contender::Rslock(Arc::new(crate::bench::rslock_compare::manager(url)));
            for i in 0..20 {
                manager
                    .acquire(&format!("rslock-warm-{i}"))
                    .await
                    .release()
                    .await;
            }
            managers.push(manager);
        }
        managers
    }
    #[cfg(not(feature = "compare"))]
    {
        let _ = url;
        Vec::new()
    }
}

/// [`TASKS`] clients, each on a backend of its own, warmed up.
async fn clients(url: &str, namespace: &str, primitive: Primitive) -> Vec<Contender> {
    let mut clients = Vec::with_capacity(TASKS);
    for _ in 0..TASKS {
        let backend = RedisBackend::connect(url).await.expect("connect");
        let locks = LockClient::builder(backend)
            .namespace(namespace)
            .build()
            .expect("client");
        // Warm up the connection, the scripts and the watchdog.
        for i in 0..20 {
            let warm = format!("warm-{i}");
            let guard = acquire(&locks, primitive, &warm).await;
            guard.release().await.expect("release");
        }
        clients.push(Contender::Ours(locks, primitive));
    }
    clients
}

async fn contend(url: &str, clients: &[Contender], primitive: Primitive, round: usize) -> Round {
    let key = format!("contended-{primitive:?}-{round}");
    let data_key = format!("bench-fair-data:{}:{primitive:?}", std::process::id());
    let mut data = connection(url).await;
    let usec_before = server_usec(&mut data).await;
    let done = Arc::new(AtomicU64::new(0));
    let last_holder = Arc::new(AtomicU64::new(u64::MAX));
    let handoffs = Arc::new(AtomicU64::new(0));
    let samples: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(TASKS);
    for (task, contender) in clients.iter().cloned().enumerate() {
        let (key, data_key) = (key.clone(), data_key.clone());
        let (done, last_holder, handoffs, samples) = (
            done.clone(),
            last_holder.clone(),
            handoffs.clone(),
            samples.clone(),
        );
        let mut data = connection(url).await;
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let asked = Instant::now();
                let holding = contender.acquire(&key).await;
                let waited = asked.elapsed();
                if done.load(Ordering::SeqCst) >= SECTIONS {
                    holding.release().await;
                    break;
                }
                section(&mut data, &data_key).await;
                let before = last_holder.swap(task as u64, Ordering::SeqCst);
                if before != u64::MAX && before != task as u64 {
                    handoffs.fetch_add(1, Ordering::SeqCst);
                }
                done.fetch_add(1, Ordering::SeqCst);
                mine.push(waited);
                holding.release().await;
            }
            samples
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(mine);
        }));
    }
    for task in tasks {
        task.await.expect("bench task");
    }
    let elapsed = started.elapsed();
    let server_us = (server_usec(&mut data).await - usec_before) as f64 / SECTIONS as f64;
    let counted: Option<u64> = data.get(&data_key).await.expect("GET");
    let _: () = data.del(&data_key).await.expect("clean up");
    let samples = std::mem::take(&mut *samples.lock().unwrap_or_else(PoisonError::into_inner));
    Round {
        handoffs: handoffs.load(Ordering::SeqCst),
        per_second: SECTIONS as f64 / elapsed.as_secs_f64(),
        samples,
        lost_updates: SECTIONS.saturating_sub(counted.unwrap_or(0)),
        server_us,
    }
}

async fn acquire(locks: &LockClient, primitive: Primitive, key: &str) -> lock_core::LockGuard {
    match primitive {
        Primitive::Lock => locks.lock(key).await,
        Primitive::Fair => locks.fair_lock(key).await,
        Primitive::Rslock => unreachable!("rslock is not a lock-core primitive"),
    }
    .expect("acquire")
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
