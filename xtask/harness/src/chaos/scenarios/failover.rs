//! Scenarios 19 and 20, the primary failed over (Redis Cluster, Sentinel set: the stack's).
//!
//! A contended in-process workload: [`TASKS`] tasks, each on a backend connection of its own
//! (as separate processes would be), loop acquire (watchdog lease of the run's TTL) → fenced
//! writes with bookkeeping of an unfenced critical section (half the tasks hold ~20 ms, half
//! ~300 ms) → release, on [`KEYS`] keys whose
//! hash slots are all on ONE primary (on the cluster, chosen by the CRC16 of the text inside
//! the lock key's braces, `#chaos:<key>`, and `CLUSTER NODES`; on Sentinel, the primary the
//! sentinels name). The fenced resource is a [`RedisFencedStore`] on the stack's single Redis.
//!
//! The fault: the replicas that may be promoted are stopped (SIGSTOP: the cluster primary's
//! replica; on Sentinel both) and their replication links cut on the primary's side (`CLIENT
//! KILL TYPE replica`: a stopped process's socket would otherwise still take in the stream,
//! and it would read it all once continued), the workload runs on the primary for [`LAG`], the primary is
//! killed (SIGKILL) and the replicas continued: the promoted one lacks the last grants. Then
//! grants must come back within [`RESUME`]; the workload runs [`AFTER`] more and stops; the
//! deployment is restored (`cargo xtask stack up --redis-cluster|--redis-sentinel`: the killed
//! node rejoins as a replica; the Sentinel set is started afresh).
//!
//! Beside the workload, one **stalled holder** per key ([`Task::stalled_holder`]) acquires its
//! key while the replicas are stopped (a lease of [`STALLED_LEASE`], longer than the failover)
//! and goes on writing through the failover without renewing or releasing, as a process
//! paused by a GC or a VM migration would: its grant never reached the replicas, so the
//! promoted one grants the key again while the stalled holder still holds it by its own
//! account (a double grant), and the fence must refuse its writes once a newer holder wrote
//! (stale writes refused > 0) and accept none of them afterwards (stale accepted 0). This is
//! the counter case: the promoted replica's counters are behind, and only the tokens' floor
//! on the server's clock keeps the new grants' tokens above the stalled holder's.
//!
//! Scenario 20 is the same with the backend waiting for one replica's acknowledgement of each
//! grant (`wait_for_replicas(1, 500 ms)`: a grant no replica acknowledged in time is released
//! and the acquire fails).
//!
//! Counted per run: writes accepted and refused by the fence; **stale writes accepted** (a
//! write accepted with a token below one the store had already accepted for the key) — must be
//! 0; **token regressions** (a grant whose token is not above every earlier grant's of the
//! key: the promoted replica's counter behind, with nothing to pass it) — must be 0; writes
//! of a holder a later grant outranked that the store accepted before the newer holder wrote
//! (the fence cannot know of a grant that has not written; counted, not a failure); overlaps of
//! the unfenced sections (two tasks inside one key's at once: reported, not a failure); double
//! grants (a grant of a key while another task holds it, by its own account: granted, not
//! lost, not released); the time from the primary's death to the first grant after it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use example_support::backend::{redis_sentinel_service, BackendKind};
use lock_core::fenced::FencedWrite;
use lock_core::redis::RedisFencedStore;
use lock_core::{LeaseMode, LockClient, LockError, RedisBackend};
use tokio::time::{sleep, Instant};

use super::Chaos;
use crate::chaos::report::Measured;
use crate::chaos::resource::Counts;
use crate::chaos::server_process::ServerProcesses;
use crate::chaos::target::Target;
use crate::shared::cluster_nodes::cluster_primaries;

/// Tasks, each with a backend connection of its own.
const TASKS: usize = 8;
/// Keys, all on one primary.
const KEYS: usize = 4;
/// How long the workload runs on the primary while its replicas are stopped.
const LAG: Duration = Duration::from_secs(1);
/// The bound on the time from the primary's death to the next grant.
const RESUME: Duration = Duration::from_secs(20);
/// How long the workload runs once grants are back.
const AFTER: Duration = Duration::from_secs(2);
/// Writes per hold, and the pause after each: short for even tasks, long for odd ones (their
/// holds, some 300 ms, are likelier to span the primary's death).
const WRITES: u32 = 2;
const WRITE_PAUSE: Duration = Duration::from_millis(10);
const LONG_WRITE_PAUSE: Duration = Duration::from_millis(150);

/// The stalled holders' lease: longer than a failover, so by their own account they still hold
/// when the promoted replica grants their keys again.
const STALLED_LEASE: Duration = Duration::from_secs(30);
/// How often a stalled holder writes.
const STALLED_WRITE_PAUSE: Duration = Duration::from_millis(100);

/// How long a grant waits for a replica's acknowledgement (below the 1 s response timeout).
const ACK_TIMEOUT: Duration = Duration::from_millis(500);

/// Runs the scenario's rounds: without (19) or with (20) replication acknowledged.
pub(super) async fn run(cx: &Chaos, target: &Target, wait: bool) -> Measured {
    let scenario = if wait { 20 } else { 19 };
    let mut m = Measured {
        latency_label: "death→grant",
        ..Measured::default()
    };
    for round in 0..cx.settings.rounds {
        eprintln!(
            "  [{scenario} {}] round {}/{}",
            target.kind.name(),
            round + 1,
            cx.settings.rounds
        );
        let prefix = cx.key(scenario, target.kind, round);
        if let Err(e) = one_round(cx, target, wait, &prefix, &mut m).await {
            m.violation(format!("round {round}: {e}"));
        }
        if let Err(e) = restore(target.kind) {
            m.violation(format!("round {round}: restoring the deployment: {e}"));
        }
    }
    m
}

/// One run: workload, lagging replicas, the primary killed, grants back, figures.
async fn one_round(
    cx: &Chaos,
    target: &Target,
    wait: bool,
    prefix: &str,
    m: &mut Measured,
) -> Result<(), String> {
    let ttl = cx.ttl();
    let (primary, keys) = primary_and_keys(target, prefix).await?;
    let replicas = replicas_of(&primary).await?;
    if replicas.is_empty() {
        return Err(format!("the primary {primary} has no replica"));
    }
    eprintln!("    keys {keys:?} on primary {primary}; replicas {replicas:?}");
    let primary_pid = node_pid(&primary).await?;
    let mut replica_pids = Vec::new();
    for replica in &replicas {
        replica_pids.push(node_pid(replica).await?);
    }

    let resource_backend = RedisBackend::connect(&cx.resource_url)
        .await
        .map_err(|e| format!("the resource's Redis: {e}"))?;
    let store = RedisFencedStore::from_backend(&resource_backend)
        .await
        .map_err(|e| format!("the resource's store: {e}"))?;
    let mut clients = Vec::new();
    for _ in 0..TASKS {
        clients.push(client(target, ttl, wait).await?);
    }
    let mut stalled_clients = Vec::new();
    for _ in 0..KEYS {
        stalled_clients.push(client(target, ttl, wait).await?);
    }
    let shared = Arc::new(Shared::new(&keys));
    let started = Instant::now();
    let handles: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(index, client)| {
            let task = Task {
                index,
                client,
                store: store.clone(),
                keys: keys.clone(),
                prefix: prefix.to_owned(),
                ttl,
                shared: Arc::clone(&shared),
            };
            tokio::spawn(task.run())
        })
        .collect();

    // Warm up, then the replicas lag, then the primary dies.
    let warm = wait_grants(&shared, 8, Duration::from_secs(10)).await;
    if !warm {
        m.violation("fewer than 8 grants in the 10 s before any fault".into());
    }
    let replicas_stopped = ServerProcesses::from_roots(&replica_pids);
    replicas_stopped.pause()?;
    // A stopped replica still receives: the kernel fills its socket with what the primary
    // sends, and it reads all of it once continued. Cutting the links on the primary's side
    // makes the lag real: what is granted from now on reaches no replica.
    let mut primary_connection = connection(&primary).await?;
    let cut: redis::RedisResult<i64> = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("replica")
        .query_async(&mut primary_connection)
        .await;
    match cut {
        Ok(links) => eprintln!("    {links} replication link(s) cut on the primary"),
        Err(e) => return Err(format!("cutting the replication links: {e}")),
    }
    let stalled: Vec<_> = stalled_clients
        .into_iter()
        .zip(&keys)
        .enumerate()
        .map(|(n, (client, key))| {
            let task = Task {
                index: TASKS + n,
                client,
                store: store.clone(),
                keys: vec![key.clone()],
                prefix: prefix.to_owned(),
                ttl,
                shared: Arc::clone(&shared),
            };
            tokio::spawn(task.stalled_holder(key.clone()))
        })
        .collect();
    let before_lag = shared.grants.load(Ordering::SeqCst);
    sleep(LAG).await;
    let lag_grants = shared.grants.load(Ordering::SeqCst) - before_lag;
    ServerProcesses::from_root(primary_pid).kill()?;
    let death = Instant::now();
    *lock(&shared.death) = Some(death);
    replicas_stopped.resume()?;
    m.faults += 1 + replica_pids.len() as u64;
    eprintln!(
        "    {} replica(s) stopped for {LAG:?} ({lag_grants} grants meanwhile), primary killed",
        replica_pids.len()
    );

    // WAIT 1 needs a replica: on the cluster the promoted node's only replica was the dead
    // primary, so once the cluster has promoted, it is started again (as `stack up` does) and
    // rejoins as the new primary's replica. On Sentinel the other replica follows the new
    // primary by itself.
    if wait && target.kind == BackendKind::RedisCluster {
        match promoted(target, &primary, &keys[0], RESUME).await {
            Some(after) => eprintln!(
                "    a replica promoted {:.0} ms after the death; the old primary restarts",
                ms(after)
            ),
            None => m.violation(format!("no replica promoted within {RESUME:?}")),
        }
        let kind = target.kind;
        match tokio::task::spawn_blocking(move || restore(kind)).await {
            Ok(Ok(())) => m.notes.push(
                "WAIT: the killed primary was restarted once a replica was promoted (the \
                 promoted one had no other replica to acknowledge)"
                    .into(),
            ),
            Ok(Err(e)) => m.violation(format!("restarting the killed primary: {e}")),
            Err(e) => m.violation(format!("restarting the killed primary: {e}")),
        }
    }
    let resumed = loop {
        if let Some(at) = *lock(&shared.first_after_death) {
            break Some(at - death);
        }
        if death.elapsed() > RESUME {
            break None;
        }
        sleep(Duration::from_millis(20)).await;
    };
    match resumed {
        Some(after) => {
            m.latencies.push(ms(after));
            eprintln!(
                "    first grant {:.0} ms after the primary's death",
                ms(after)
            );
            sleep(AFTER).await;
        }
        None => m.violation(format!("no grant within {RESUME:?} of the primary's death")),
    }

    shared.stop.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + ttl * 3 + Duration::from_secs(5);
    let mut stuck = 0;
    for handle in handles.into_iter().chain(stalled) {
        let left = deadline.saturating_duration_since(Instant::now());
        if tokio::time::timeout(left, handle).await.is_err() {
            stuck += 1;
        }
    }
    if stuck > 0 {
        m.notes
            .push(format!("{stuck} workload task(s) did not stop in time"));
    }
    clean_up(&cx.resource_url, &resource_backend, &keys, prefix).await;

    let seen = lock(&shared.seen).clone();
    let counts = Counts {
        sections: seen.holds,
        accepted: seen.accepted,
        refused: seen.refused,
        stale: seen.stale_store,
        overlaps: seen.overlaps,
    };
    m.counts.add(counts);
    if counts.stale > 0 {
        m.violation(format!(
            "{} stale write(s) accepted (a token below one the store had accepted)",
            counts.stale
        ));
    }
    if seen.token_regressions > 0 {
        m.violation(format!(
            "{} grant(s) with a token not above the key's earlier grants'",
            seen.token_regressions
        ));
    }
    if let Some(first) = seen.resource_errors.first() {
        m.violation(format!(
            "the resource failed {}× (first: {first})",
            seen.resource_errors.len()
        ));
    }
    let resumed = resumed.map_or("none".to_owned(), |d| format!("{:.0} ms", ms(d)));
    let line = format!(
        "{}: grants {}, stalled holders granted {} of {KEYS}, writes accepted {}, stale refused \
         by the fence {}, stale accepted {}, overlaps {}, double grants {}, token regressions {}, \
         death→first grant {resumed}, holders lost {}, outranked writes accepted before the newer \
         holder wrote {}, lock errors {}{}; {:.1} s",
        if wait { "with WAIT" } else { "no WAIT" },
        seen.grants,
        seen.stalled_grants,
        seen.accepted,
        seen.refused,
        counts.stale,
        seen.overlaps,
        seen.double_grants,
        seen.token_regressions,
        seen.lost,
        seen.stale_grant_order,
        seen.lock_errors,
        seen.first_error
            .as_ref()
            .map_or(String::new(), |e| format!(" (first: {e})")),
        started.elapsed().as_secs_f64()
    );
    eprintln!("    {line}");
    m.notes.push(line);
    for text in seen.examples.iter().take(3) {
        m.notes.push(text.clone());
    }
    Ok(())
}

/// Waits up to `within` for `n` grants in all.
async fn wait_grants(shared: &Shared, n: u64, within: Duration) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if shared.grants.load(Ordering::SeqCst) >= n {
            return true;
        }
        sleep(Duration::from_millis(20)).await;
    }
    false
}

/// A lock client on its own connection to the deployment.
async fn client(target: &Target, ttl: Duration, wait: bool) -> Result<LockClient, String> {
    let builder = match target.kind {
        BackendKind::RedisCluster => RedisBackend::builder_cluster(target.url.split(',')),
        BackendKind::RedisSentinel => {
            RedisBackend::builder_sentinel(target.url.split(','), redis_sentinel_service())
        }
        other => return Err(format!("no failover on {}", other.name())),
    };
    let mut builder = builder.response_timeout(Duration::from_secs(1));
    if wait {
        builder = builder.wait_for_replicas(1, ACK_TIMEOUT);
    }
    let backend = builder
        .connect()
        .await
        .map_err(|e| format!("connecting: {}", e.with_causes()))?;
    LockClient::builder(backend)
        .namespace("chaos")
        .lease(LeaseMode::watchdog(ttl))
        .build()
        .map_err(|e| e.to_string())
}

/// What every task shares.
struct Shared {
    stop: AtomicBool,
    grants: AtomicU64,
    death: Mutex<Option<Instant>>,
    first_after_death: Mutex<Option<Instant>>,
    /// Per key: who holds it by its own account, its grants, the largest accepted token.
    keys: HashMap<String, Mutex<KeyState>>,
    /// Per key: tasks inside the unfenced section now.
    inside: HashMap<String, AtomicU64>,
    seen: Mutex<Seen>,
}

impl Shared {
    fn new(keys: &[String]) -> Self {
        Self {
            stop: AtomicBool::new(false),
            grants: AtomicU64::new(0),
            death: Mutex::new(None),
            first_after_death: Mutex::new(None),
            keys: keys
                .iter()
                .map(|k| (k.clone(), Mutex::new(KeyState::default())))
                .collect(),
            inside: keys
                .iter()
                .map(|k| (k.clone(), AtomicU64::new(0)))
                .collect(),
            seen: Mutex::new(Seen::default()),
        }
    }
}

/// One key's bookkeeping.
#[derive(Default)]
struct KeyState {
    /// The grants so far, in the order they were seen: (task, token).
    grants: Vec<(usize, u64)>,
    /// Holders now, by their own account: (task, grant index, lost flag).
    holders: Vec<(usize, usize, Arc<AtomicBool>)>,
    /// The largest token the store accepted.
    max_accepted: u64,
}

/// The run's figures.
#[derive(Clone, Default)]
struct Seen {
    grants: u64,
    holds: u64,
    accepted: u64,
    refused: u64,
    stale_store: u64,
    stale_grant_order: u64,
    overlaps: u64,
    double_grants: u64,
    /// Stalled holders that got their key during the lag.
    stalled_grants: u64,
    token_regressions: u64,
    lost: u64,
    lock_errors: u64,
    first_error: Option<String>,
    resource_errors: Vec<String>,
    /// A few lines on what went wrong, for the notes.
    examples: Vec<String>,
}

impl Seen {
    fn example(&mut self, text: String) {
        eprintln!("    {text}");
        if self.examples.len() < 6 {
            self.examples.push(text);
        }
    }
}

/// One task of the workload.
struct Task {
    index: usize,
    client: LockClient,
    store: RedisFencedStore,
    keys: Vec<String>,
    prefix: String,
    ttl: Duration,
    shared: Arc<Shared>,
}

impl Task {
    async fn run(self) {
        let mut turn = self.index;
        while !self.shared.stop.load(Ordering::SeqCst) {
            turn += 1;
            let key = &self.keys[turn % self.keys.len()];
            let acquired = self.client.lock(key).acquire_within(self.ttl * 2).await;
            let guard = match acquired {
                Ok(Some(guard)) => guard,
                Ok(None) => continue,
                Err(e) => {
                    self.lock_error(&e);
                    sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let token = guard.fencing_token().get();
            let lost = Arc::new(AtomicBool::new(false));
            {
                let (lost, watched) = (Arc::clone(&lost), guard.lost());
                tokio::spawn(async move {
                    watched.await;
                    lost.store(true, Ordering::SeqCst);
                });
            }
            let grant = self.granted(key, token, &lost);
            for w in 0..WRITES {
                if guard.is_lost() {
                    break;
                }
                self.section(key, token, grant, guard.fencing_token(), w)
                    .await;
                sleep(if self.index.is_multiple_of(2) {
                    WRITE_PAUSE
                } else {
                    LONG_WRITE_PAUSE
                })
                .await;
            }
            if guard.is_lost() {
                lock(&self.shared.seen).lost += 1;
            }
            // Done by its own account before the release leaves: a grant seen after this is
            // no double grant.
            lock(self.state(key))
                .holders
                .retain(|(task, _, _)| *task != self.index);
            if let Err(e) = guard.release().await {
                self.lock_error(&e);
            }
            lock(&self.shared.seen).holds += 1;
            sleep(Duration::from_millis(2)).await;
        }
    }

    /// A stalled holder of `key`: acquires it while the replicas are stopped (tries until the
    /// primary dies), then writes every [`STALLED_WRITE_PAUSE`] until the run stops, never
    /// renewing or releasing, whatever the store says (see the module docs).
    async fn stalled_holder(self, key: String) {
        let guard = loop {
            if self.shared.stop.load(Ordering::SeqCst) || lock(&self.shared.death).is_some() {
                return;
            }
            let request = self
                .client
                .lock(&key)
                .lease(LeaseMode::fixed(STALLED_LEASE));
            match request.try_acquire().await {
                Ok(Some(guard)) => break guard,
                Ok(None) => sleep(Duration::from_millis(5)).await,
                Err(e) => {
                    self.lock_error(&e);
                    sleep(Duration::from_millis(20)).await;
                }
            }
        };
        let token = guard.fencing_token().get();
        // By its own account it holds until its lease ends: never lost.
        let never_lost = Arc::new(AtomicBool::new(false));
        let grant = self.granted(&key, token, &never_lost);
        lock(&self.shared.seen).stalled_grants += 1;
        let mut write = 0;
        while !self.shared.stop.load(Ordering::SeqCst) {
            self.section(&key, token, grant, guard.fencing_token(), write)
                .await;
            write += 1;
            sleep(STALLED_WRITE_PAUSE).await;
        }
        lock(self.state(&key))
            .holders
            .retain(|(task, _, _)| *task != self.index);
        guard.abandon();
    }

    fn state(&self, key: &str) -> &Mutex<KeyState> {
        &self.shared.keys[key]
    }

    /// Records a grant; returns its index among the key's grants.
    fn granted(&self, key: &str, token: u64, lost: &Arc<AtomicBool>) -> usize {
        let now = Instant::now();
        self.shared.grants.fetch_add(1, Ordering::SeqCst);
        if let Some(death) = *lock(&self.shared.death) {
            let mut first = lock(&self.shared.first_after_death);
            if first.is_none() && now > death {
                *first = Some(now);
            }
        }
        let mut state = lock(self.state(key));
        let mut seen = lock(&self.shared.seen);
        seen.grants += 1;
        let others: Vec<(usize, u64)> = state
            .holders
            .iter()
            .filter(|(task, _, lost)| *task != self.index && !lost.load(Ordering::SeqCst))
            .map(|(task, grant, _)| (*task, state.grants[*grant].1))
            .collect();
        if let Some((other, other_token)) = others.first() {
            seen.double_grants += 1;
            seen.example(format!(
                "double grant of {}: task {} got token {token} while task {other} held it \
                 with token {other_token}",
                short(key, &self.prefix),
                self.index
            ));
        }
        if let Some(max) = state.grants.iter().map(|(_, t)| *t).max() {
            if token <= max {
                seen.token_regressions += 1;
                seen.example(format!(
                    "token regression on {}: task {} granted {token} after {max}",
                    short(key, &self.prefix),
                    self.index
                ));
            }
        }
        state.grants.push((self.index, token));
        let grant = state.grants.len() - 1;
        state.holders.push((self.index, grant, Arc::clone(lost)));
        grant
    }

    /// One write of the critical section, with the unfenced section's bookkeeping around it.
    async fn section(
        &self,
        key: &str,
        token: u64,
        grant: usize,
        fence: lock_core::FencingToken,
        write: u32,
    ) {
        let inside = &self.shared.inside[key];
        if inside.fetch_add(1, Ordering::SeqCst) > 0 {
            lock(&self.shared.seen).overlaps += 1;
        }
        // The largest token of a grant of this key seen after this holder's, before the write.
        let later = lock(self.state(key)).grants[grant + 1..]
            .iter()
            .map(|(_, t)| *t)
            .max();
        let value = format!("task {} token {token} write {write}", self.index);
        let written = self
            .store
            .write(&resource_key(&self.prefix, key), fence, value.as_bytes())
            .await;
        inside.fetch_sub(1, Ordering::SeqCst);
        let mut state = lock(self.state(key));
        let mut seen = lock(&self.shared.seen);
        match written {
            Ok(FencedWrite::Accepted) => {
                seen.accepted += 1;
                if token < state.max_accepted {
                    seen.stale_store += 1;
                    seen.example(format!(
                        "stale write accepted on {}: token {token} after {} was accepted",
                        short(key, &self.prefix),
                        state.max_accepted
                    ));
                } else if later.is_some_and(|later| later >= token) {
                    // Outranked by a later grant, but no newer holder has written yet: the
                    // fence cannot know (the newer holder's writes will come after), so this
                    // is counted, not a stale write.
                    seen.stale_grant_order += 1;
                }
                state.max_accepted = state.max_accepted.max(token);
            }
            Ok(FencedWrite::Refused { .. }) => seen.refused += 1,
            Err(e) => seen.resource_errors.push(e.to_string()),
        }
    }

    fn lock_error(&self, e: &LockError) {
        let mut seen = lock(&self.shared.seen);
        seen.lock_errors += 1;
        if seen.first_error.is_none() {
            seen.first_error = Some(e.with_causes().to_string());
        }
    }
}

/// The resource value of `key`.
fn resource_key(prefix: &str, key: &str) -> String {
    format!("{prefix}:value:{key}")
}

/// `key` without the run's prefix, for messages.
fn short<'a>(key: &'a str, prefix: &str) -> &'a str {
    key.strip_prefix(prefix)
        .map_or(key, |k| k.trim_start_matches('-'))
}

/// Deletes the run's resource values.
async fn clean_up(url: &str, _backend: &RedisBackend, keys: &[String], prefix: &str) {
    let Ok(client) = redis::Client::open(url) else {
        return;
    };
    let Ok(mut c) = client.get_multiplexed_async_connection().await else {
        return;
    };
    let names: Vec<String> = keys
        .iter()
        .map(|k| format!("lock:fenced:{}", resource_key(prefix, k)))
        .collect();
    if let Err(e) = redis::cmd("DEL")
        .arg(names)
        .query_async::<u64>(&mut c)
        .await
    {
        eprintln!("    cleaning up the resource values: {e}");
    }
}

/// The primary to kill and [`KEYS`] lock keys (names under the namespace `chaos`) whose slots
/// it serves.
async fn primary_and_keys(target: &Target, prefix: &str) -> Result<(String, Vec<String>), String> {
    match target.kind {
        BackendKind::RedisSentinel => {
            let primary = sentinel_primary(target).await?;
            let keys = (0..KEYS).map(|i| format!("{prefix}-k{i}")).collect();
            Ok((primary, keys))
        }
        BackendKind::RedisCluster => {
            let nodes = target.data_nodes();
            let mut text = None;
            for url in &nodes {
                if let Ok(mut c) = connection(url).await {
                    if let Ok(t) = redis::cmd("CLUSTER")
                        .arg("NODES")
                        .query_async::<String>(&mut c)
                        .await
                    {
                        text = Some(t);
                        break;
                    }
                }
            }
            let text = text.ok_or_else(|| format!("no node of {nodes:?} answers CLUSTER NODES"))?;
            let primaries = cluster_primaries(&text);
            let owner = |slot: u16| {
                primaries
                    .iter()
                    .find(|(_, ranges)| ranges.iter().any(|(a, b)| (*a..=*b).contains(&slot)))
                    .map(|(addr, _)| addr.clone())
            };
            let first = format!("{prefix}-k0");
            let primary = owner(key_slot(&first)).ok_or("the first key's slot has no primary")?;
            let mut keys = vec![first];
            let mut i = 1;
            while keys.len() < KEYS && i < 10_000 {
                let key = format!("{prefix}-k{i}");
                if owner(key_slot(&key)).as_ref() == Some(&primary) {
                    keys.push(key);
                }
                i += 1;
            }
            Ok((format!("redis://{primary}/"), keys))
        }
        other => Err(format!("no failover on {}", other.name())),
    }
}

/// Waits (up to `within`) until a node other than `old` serves the slot of `key`; returns how
/// long after the call that was.
async fn promoted(target: &Target, old: &str, key: &str, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    let old = old.trim_start_matches("redis://").trim_end_matches('/');
    let slot = key_slot(key);
    while started.elapsed() < within {
        for url in target.data_nodes() {
            if url.contains(old) {
                continue;
            }
            let Ok(mut c) = connection(&url).await else {
                continue;
            };
            let Ok(text) = redis::cmd("CLUSTER")
                .arg("NODES")
                .query_async::<String>(&mut c)
                .await
            else {
                continue;
            };
            let owner = cluster_primaries(&text)
                .into_iter()
                .find(|(_, ranges)| ranges.iter().any(|(a, b)| (*a..=*b).contains(&slot)));
            if owner.is_some_and(|(addr, _)| addr != old) {
                return Some(started.elapsed());
            }
            break;
        }
        sleep(Duration::from_millis(100)).await;
    }
    None
}

/// The slot of the lock key of `key` (namespace `chaos`): `lock:{#chaos:<key>}` hashes the
/// text inside the braces.
fn key_slot(key: &str) -> u16 {
    crc16(format!("#chaos:{key}").as_bytes()) % 16384
}

/// CRC16-CCITT (XMODEM), as Redis Cluster hashes keys.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 == 0 {
                crc << 1
            } else {
                (crc << 1) ^ 0x1021
            };
        }
    }
    crc
}

/// The primary the sentinels name now.
async fn sentinel_primary(target: &Target) -> Result<String, String> {
    for url in target.url.split(',') {
        let Ok(mut c) = connection(url).await else {
            continue;
        };
        let reply: Result<Vec<String>, _> = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(redis_sentinel_service())
            .query_async(&mut c)
            .await;
        if let Ok([host, port]) = reply.as_deref() {
            return Ok(format!("redis://{host}:{port}/"));
        }
    }
    Err(format!("no sentinel of {} names a primary", target.url))
}

/// The replicas of the primary at `url`, from its `INFO replication`.
async fn replicas_of(url: &str) -> Result<Vec<String>, String> {
    let mut c = connection(url).await?;
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query_async(&mut c)
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    Ok(info
        .lines()
        .filter(|l| l.starts_with("slave") && l.contains("ip="))
        .filter_map(|l| {
            let field = |name: &str| {
                l.split([':', ','])
                    .find_map(|kv| kv.strip_prefix(name))
                    .map(str::to_owned)
            };
            Some(format!("redis://{}:{}/", field("ip=")?, field("port=")?))
        })
        .collect())
}

/// The pid of the redis-server at `url` (`INFO server`).
async fn node_pid(url: &str) -> Result<u32, String> {
    let mut c = connection(url).await?;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut c)
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    info.lines()
        .find_map(|l| l.trim().strip_prefix("process_id:")?.parse().ok())
        .ok_or_else(|| format!("{url}: no process_id"))
}

async fn connection(url: &str) -> Result<redis::aio::MultiplexedConnection, String> {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_response_timeout(Some(Duration::from_secs(2)));
    redis::Client::open(url)
        .map_err(|e| e.to_string())?
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|e| format!("{url}: {e}"))
}

/// Brings the deployment back as `cargo xtask stack up` does: the killed cluster node starts
/// again and rejoins as a replica; the Sentinel set, a member of which is down, is started
/// afresh.
fn restore(kind: BackendKind) -> Result<(), String> {
    let set = match kind {
        BackendKind::RedisCluster => "--redis-cluster",
        BackendKind::RedisSentinel => "--redis-sentinel",
        other => return Err(format!("no deployment of {}", other.name())),
    };
    eprintln!("    restoring: cargo xtask stack up {set}");
    // The xtask binary `cargo xtask` built (a `cargo xtask` of our own would wait for any
    // build going on in the workspace), else through cargo.
    let built = workspace().join("target/debug/xtask");
    let mut command = if built.exists() {
        std::process::Command::new(built)
    } else {
        let mut cargo =
            std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        cargo.arg("xtask");
        cargo
    };
    let output = command
        .args(["stack", "up", set])
        .current_dir(workspace())
        .output()
        .map_err(|e| format!("cargo xtask stack up {set}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cargo xtask stack up {set}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// The workspace root.
fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `d` in ms.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_redis_cluster_slots() {
        // `CLUSTER KEYSLOT foo` is 12182; `{user1000}.following` hashes `user1000`: 3443.
        assert_eq!(crc16(b"foo") % 16384, 12182);
        assert_eq!(crc16(b"user1000") % 16384, 3443);
    }

    #[test]
    fn primaries_come_from_cluster_nodes() {
        let text = "a 127.0.0.1:26401@36401 myself,master - 0 0 1 connected 0-5460\n\
                    b 127.0.0.1:26404@36404 slave a 0 0 1 connected\n\
                    c 127.0.0.1:26402@36402 master - 0 0 2 connected 5461-10922 16000\n\
                    d 127.0.0.1:26403@36403 master,fail - 0 0 3 connected\n";
        assert_eq!(
            cluster_primaries(text),
            vec![
                ("127.0.0.1:26401".to_owned(), vec![(0, 5460)]),
                (
                    "127.0.0.1:26402".to_owned(),
                    vec![(5461, 10922), (16000, 16000)]
                ),
            ]
        );
    }
}
