//! The fault catalogue (issue 15): each scenario runs rounds against one backend and returns
//! a [`Measured`] whose verdict comes from the fenced [`Resource`]'s counters and from what
//! the workers' events say happened when.
//!
//! Every round uses a lock key and a resource value of its own, so fencing tokens of one
//! round never meet another's.

mod backend_down;
mod computer_killed;
mod crowd;
mod delayed_reply;
mod dropped;
mod expiry;
mod failover;
mod kill;
mod late_write;
mod lost_reply;
mod member_kill;
mod origin_failing;
mod partition;
mod pause;
mod redlock_nodes;
mod restart;
mod server_paused;
mod starved;

use std::path::PathBuf;
use std::time::Duration;

use example_support::backend::BackendKind;
use lock_testing::RedisServer;

use super::cache_app;
use super::process::{Event, Worker};
use super::report::{Measured, Outcome};
use super::resource::Resource;
use super::target::Target;
use crate::shared::proxy::FaultProxy;

/// The catalogue: number, short name, and whether it is built.
pub const CATALOGUE: &[(u32, &str, bool)] = &[
    (1, "holder paused", true),
    (7, "client killed", true),
    (13, "key expired early", true),
    (5, "partition", true),
    (3, "reply delayed", true),
    (4, "write delayed", true),
    (6, "redis restarted", true),
    (9, "reply lost", true),
    (2, "server paused", true),
    (8, "acquires dropped", true),
    (10, "1000 waiters", true),
    (11, "watchdog starved", true),
    (12, "member killed", true),
    (15, "origin failing", true),
    (16, "computer killed", true),
    (17, "backend down, web layers", true),
    (18, "redlock nodes faulted", true),
    (19, "primary failover", true),
    (20, "primary failover, WAIT", true),
];

/// How a run is set up.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// The lease every holder takes.
    pub ttl: Duration,
    /// Rounds per scenario and backend.
    pub rounds: u32,
    /// `--short`: the smaller sizes of scenarios 8 and 10 (1,000 drops, 200 waiters).
    pub short: bool,
    /// `--unsafe-no-fence`: workers write without the fencing check.
    pub unsafe_no_fence: bool,
    /// `--unsafe-ignore-lost`: faulted holders keep writing for 3 × TTL after `lost()`.
    pub unsafe_ignore_lost: bool,
    /// `--unsafe-long-lease`: the holder killed in scenario 7 takes a 10× lease; in scenarios 8
    /// and 9 grants are abandoned (not released) with a 10× lease.
    pub unsafe_long_lease: bool,
    /// `--unsafe-poll`: scenario 10's waiters poll instead of waiting for wake-ups.
    pub unsafe_poll: bool,
    /// `--unsafe-no-breaker`: scenario 17's service runs with a breaker that does not fail
    /// fast (every request waits for the connection's timeouts, as before the breaker).
    pub unsafe_no_breaker: bool,
}

/// Everything the scenarios share: settings, the worker binary, the resource's Redis, the
/// lock Redis of this run's own.
pub struct Chaos {
    /// The settings.
    pub settings: Settings,
    /// This program, started as `worker`.
    pub exe: PathBuf,
    /// The resource's Redis (the stack's).
    pub resource_url: String,
    /// The Redis the Redis backend locks on: a server of this run's own, killed in scenario 6.
    pub redis: std::sync::Mutex<RedisServer>,
    /// RedLock's nodes (servers of this run's own; none unless `redlock` runs), paused in
    /// scenario 2 (a majority) and 18 (a minority), restarted empty in 18.
    pub redlock: std::sync::Mutex<Vec<RedisServer>>,
    /// Makes this run's keys unique.
    pub run: String,
}

impl Chaos {
    /// Runs `scenario` against `target`.
    pub async fn run(&self, scenario: u32, target: &Target) -> Outcome {
        if target.kind == BackendKind::Memory {
            return Outcome::NotApplicable("in-process only: no worker process to fault".into());
        }
        let built = CATALOGUE
            .iter()
            .any(|(n, _, built)| *n == scenario && *built);
        if !built {
            return Outcome::NotBuilt;
        }
        if let Some(why) = not_for_redlock(scenario, target.kind) {
            return Outcome::NotApplicable(why.into());
        }
        if let Some(why) = not_for_multi_node(scenario, target.kind) {
            return Outcome::NotApplicable(why.into());
        }
        let measured = match scenario {
            1 => pause::run(self, target).await,
            2 => server_paused::run(self, target).await,
            3 => delayed_reply::run(self, target).await,
            4 => late_write::run(self, target).await,
            5 => partition::run(self, target).await,
            6 if target.kind != BackendKind::Redis => {
                return Outcome::NotApplicable(
                    "kills a server without persistence: only the run's own Redis".into(),
                )
            }
            6 => restart::run(self, target).await,
            7 => kill::run(self, target).await,
            8 => dropped::run(self, target).await,
            9 => lost_reply::run(self, target).await,
            10 => crowd::run(self, target).await,
            11 => starved::run(self, target).await,
            13 if !target.can_expire_early() => {
                return Outcome::NotApplicable(
                    "no outside expiry built for the SQL lock tables".into(),
                )
            }
            13 => expiry::run(self, target).await,
            12 if !matches!(target.kind, BackendKind::Zookeeper | BackendKind::Etcd) => {
                return Outcome::NotApplicable(
                    "no cluster of this server is run (ZooKeeper and etcd only)".into(),
                )
            }
            12 => member_kill::run(self, target).await,
            15 | 16 if !cache_app::has_store(target.kind) => {
                return Outcome::NotApplicable(
                    "the response cache stores in Redis or PostgreSQL".into(),
                )
            }
            15 => origin_failing::run(self, target).await,
            16 => computer_killed::run(self, target).await,
            17 if target.kind != BackendKind::Redis => {
                return Outcome::NotApplicable(
                    "kills the server under the web layers: only the run's own Redis".into(),
                )
            }
            17 => backend_down::run(self, target).await,
            18 if target.kind != BackendKind::Redlock => {
                return Outcome::NotApplicable("faults RedLock's nodes: RedLock only".into())
            }
            18 => redlock_nodes::run(self, target).await,
            19 | 20 if !is_multi_node(target.kind) => {
                return Outcome::NotApplicable(
                    "fails a primary over: Redis Cluster and Sentinel only".into(),
                )
            }
            19 => failover::run(self, target, false).await,
            20 => failover::run(self, target, true).await,
            _ => return Outcome::NotBuilt,
        };
        Outcome::Ran(measured)
    }

    /// The lease.
    #[must_use]
    pub fn ttl(&self) -> Duration {
        self.settings.ttl
    }

    /// The lock key (and resource round) of `round` of `scenario` on `kind`.
    fn key(&self, scenario: u32, kind: BackendKind, round: u32) -> String {
        format!("s{scenario}-{}-r{round}-{}", kind.name(), self.run)
    }

    /// Starts a worker `label` locking `key` straight on the target's server, with `extra`
    /// flags (`holder`: the one faulted, as for [`worker`](Self::worker)).
    fn direct(
        &self,
        label: &str,
        target: &Target,
        key: &str,
        holder: bool,
        extra: &[String],
    ) -> Result<Worker, String> {
        self.worker(label, target.kind, &target.url, key, holder, extra)
    }

    /// Starts a worker `label` locking `key` on `kind` at `url`, with `extra` flags; the
    /// `--unsafe-*` settings are passed on (`holder`: the one faulted).
    fn worker(
        &self,
        label: &str,
        kind: BackendKind,
        url: &str,
        key: &str,
        holder: bool,
        extra: &[String],
    ) -> Result<Worker, String> {
        let mut args = vec![
            "--backend".to_owned(),
            kind.name().to_owned(),
            "--url".to_owned(),
            url.to_owned(),
            "--resource-url".to_owned(),
            self.resource_url.clone(),
            "--round".to_owned(),
            key.to_owned(),
            "--ttl-ms".to_owned(),
            self.ttl().as_millis().to_string(),
        ];
        if self.settings.unsafe_no_fence {
            args.push("--no-fence".to_owned());
        }
        if holder && self.settings.unsafe_ignore_lost {
            args.extend(["--linger-ms".to_owned(), ms(self.ttl() * 3)]);
        }
        args.extend(extra.iter().cloned());
        Worker::spawn(&self.exe, label, &args)
    }

    /// Adds a round's resource counters to `m`, flags stale writes, and cleans up.
    async fn finish_round(&self, resource: &Resource, round: u32, m: &mut Measured) {
        match resource.counts().await {
            Ok(counts) => {
                if counts.stale > 0 {
                    m.violation(format!(
                        "round {round}: the resource accepted {} stale write(s)",
                        counts.stale
                    ));
                }
                m.counts.add(counts);
            }
            Err(e) => m.violation(format!("round {round}: resource counters: {e}")),
        }
        resource.clean_up().await.ok();
    }
}

/// Why `scenario` does not run on RedLock (`None`: it does, or `kind` is another backend).
fn not_for_redlock(scenario: u32, kind: BackendKind) -> Option<&'static str> {
    if kind != BackendKind::Redlock {
        return None;
    }
    match scenario {
        3 | 4 | 5 | 9 => Some(
            "a fault proxy in front of one node faults a minority, which RedLock outvotes: \
             scenario 18 faults a minority, 2 a majority",
        ),
        6 | 17 => Some("restarts the run's own single Redis: scenario 18 restarts a RedLock node"),
        10 => Some("RedLock waiters retry after a pause: no queue of 1,000 waiters to measure"),
        13 => Some("an early expiry on one node is a minority: scenario 18 covers a lost node"),
        _ => None,
    }
}

/// Whether `kind` is a Redis deployment of several data nodes (a cluster, a Sentinel set).
fn is_multi_node(kind: BackendKind) -> bool {
    matches!(kind, BackendKind::RedisCluster | BackendKind::RedisSentinel)
}

/// Why `scenario` does not run on a Redis Cluster or the Sentinel set (`None`: it does, or
/// `kind` is another backend).
fn not_for_multi_node(scenario: u32, kind: BackendKind) -> Option<&'static str> {
    if !is_multi_node(kind) {
        return None;
    }
    match scenario {
        3 | 5 | 9 => Some(
            "a fault proxy in front of one URL is bypassed: the client goes to the addresses \
             the nodes (CLUSTER SLOTS) or the sentinels announce; 19 faults the primary itself",
        ),
        6 | 17 => Some("restarts the run's own single Redis: 19 kills this deployment's primary"),
        12 => Some("kills members of a ZooKeeper or etcd cluster: 19 kills a Redis primary"),
        15 | 16 => Some("the response cache's store is one Redis or PostgreSQL"),
        _ => None,
    }
}

/// Runs `rounds` rounds of `one` (a round's body, given the key and the round's resource),
/// turning a round's error into a violation; prints progress.
async fn rounds<F>(
    cx: &Chaos,
    scenario: u32,
    target: &Target,
    label: &'static str,
    mut one: F,
) -> Measured
where
    F: AsyncFnMut(&Chaos, &str, &Resource, &mut Measured) -> Result<(), String>,
{
    let mut m = Measured {
        latency_label: label,
        ..Measured::default()
    };
    for round in 0..cx.settings.rounds {
        let key = cx.key(scenario, target.kind, round);
        eprintln!(
            "  [{scenario} {}] round {}/{}",
            target.kind.name(),
            round + 1,
            cx.settings.rounds
        );
        let resource = match Resource::connect(&cx.resource_url, &key).await {
            Ok(resource) => resource,
            Err(e) => {
                m.violation(e);
                continue;
            }
        };
        if let Err(e) = one(cx, &key, &resource, &mut m).await {
            m.violation(format!("round {round}: {e}"));
        }
        cx.finish_round(&resource, round, &mut m).await;
    }
    m
}

/// The opening most scenarios share: A (the holder the fault hits, reaching the server at
/// `a_url`) takes the key and writes for a sixth of the lease, then B (straight to the server)
/// waits for the key, to hold it `b_hold` once it has it. Returns A, A's fencing token and B.
async fn holder_and_waiter(
    cx: &Chaos,
    target: &Target,
    a_url: &str,
    key: &str,
    b_hold: Duration,
) -> Result<(Worker, u64, Worker), String> {
    let mut a = cx.worker("A", target.kind, a_url, key, true, &[])?;
    let a_fence = fence_of(&a.wait_for("acquired", START).await?)?;
    // A's writes before the fault: the resource has a token to compare later ones with.
    tokio::time::sleep(cx.ttl() / 6).await;
    let hold = vec!["--hold-ms".to_owned(), ms(b_hold)];
    let mut b = cx.direct("B", target, key, false, &hold)?;
    b.wait_for("ready", START).await?;
    Ok((a, a_fence, b))
}

/// Rounds of a scenario whose fault hits A's acquire (3, 9): in each, A (the holder the fault
/// hits) reaches the server through a fresh [`FaultProxy`], only to acquire, 300 ms after it
/// is ready (so that the fault is set first), with the flags `extra` gives; `one` gets the
/// proxy and A, ready. The latency is from A's answer to the next grant.
async fn answer_rounds<F>(
    cx: &Chaos,
    scenario: u32,
    target: &Target,
    extra: fn(&Chaos) -> Vec<String>,
    mut one: F,
) -> Measured
where
    F: AsyncFnMut(&Chaos, &str, FaultProxy, Worker, &mut Measured) -> Result<(), String>,
{
    rounds(
        cx,
        scenario,
        target,
        "answer→next grant",
        async |cx, key, _resource, m| {
            let proxy = target.proxy().await?;
            let mut flags = vec![
                "--acquire-only".to_owned(),
                "--start-delay-ms".to_owned(),
                "300".to_owned(),
            ];
            flags.extend(extra(cx));
            let via = target.via(proxy.addr());
            let mut a = cx.worker("A", target.kind, &via, key, true, &flags)?;
            a.wait_for("ready", START).await?;
            one(cx, key, proxy, a, m).await
        },
    )
    .await
}

/// A waiter's flags: once it has the key it holds it `hold`; it gives up after `give_up`.
fn hold_then_give_up(hold: Duration, give_up: Duration) -> Vec<String> {
    vec![
        "--hold-ms".to_owned(),
        ms(hold),
        "--give-up-ms".to_owned(),
        ms(give_up),
    ]
}

/// Waits (up to `within`) for B's grant after the key was let go at `from` (wall-clock µs):
/// the gap is a latency of `m`, printed as `said` words it, and a violation (worded by
/// `held`) when it is over the lease + 1 s. Returns B's `acquired` event.
async fn next_grant_within_lease(
    cx: &Chaos,
    m: &mut Measured,
    b: &mut Worker,
    from: u64,
    within: Duration,
    said: impl FnOnce(f64) -> String,
    held: impl FnOnce(f64) -> String,
) -> Result<Event, String> {
    let bound = cx.ttl() + Duration::from_secs(1);
    let taken = b.wait_for("acquired", within).await?;
    let gap = ms_between(from, taken.at);
    m.latencies.push(gap);
    eprintln!("    {}", said(gap));
    if gap > bound.as_secs_f64() * 1000.0 {
        m.violation(held(gap));
    }
    Ok(taken)
}

/// The close of a handover: the faulted holder `a` (called `who`) must not free the lock
/// when it releases, B must (within `b_within`); both then exit.
async fn check_handover_releases(
    m: &mut Measured,
    mut a: Worker,
    who: &str,
    mut b: Worker,
    b_within: Duration,
) -> Result<(), String> {
    check_release(m, who, &a.wait_for("released", START).await?, false);
    check_release(
        m,
        "the next holder",
        &b.wait_for("released", b_within).await?,
        true,
    );
    a.finish(START).await?;
    b.finish(START).await?;
    Ok(())
}

/// Checks the holder `a` began no write after its `lost` event (its `last-write`, waited for
/// up to `within`, says when its last one began).
async fn check_no_write_after_lost(
    m: &mut Measured,
    a: &mut Worker,
    lost: &Event,
    within: Duration,
) -> Result<(), String> {
    let last_write = a.wait_for("last-write", within).await?;
    let last_write_at: u64 = last_write.fields.parse().unwrap_or(u64::MAX);
    if last_write_at > lost.at {
        m.violation(format!(
            "A began a write {:.0} ms after its lost()",
            ms_between(lost.at, last_write_at)
        ));
    }
    Ok(())
}

/// The fencing token of an `acquired` event.
fn fence_of(event: &Event) -> Result<u64, String> {
    event
        .fields
        .parse()
        .map_err(|_| format!("bad fencing token {:?}", event.fields))
}

/// Milliseconds from `from` to `to` (wall-clock µs), signed.
fn ms_between(from: u64, to: u64) -> f64 {
    (to as f64 - from as f64) / 1000.0
}

/// `d` in whole ms, as a flag value.
fn ms(d: Duration) -> String {
    d.as_millis().to_string()
}

/// Checks the taker's token is larger than the faulted holder's.
fn check_fences(m: &mut Measured, a: u64, b: u64) {
    if b <= a {
        m.violation(format!(
            "fencing token went backwards: the next holder got {b} after {a}"
        ));
    }
}

/// Checks a release outcome: the faulted holder's must not free the lock (`false`), the
/// next holder's must (`true`).
fn check_release(m: &mut Measured, who: &str, event: &Event, expected: bool) {
    let got = event.fields.as_str();
    if got == expected.to_string() {
        return;
    }
    if got.starts_with("error") {
        m.notes.push(format!("{who}'s release: {got}"));
    } else {
        m.violation(format!(
            "{who}'s release returned {got}, expected {expected}"
        ));
    }
}

const START: Duration = Duration::from_secs(20);
