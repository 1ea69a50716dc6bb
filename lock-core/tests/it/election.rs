//! Leader election (`LockClient::election`) on memory and on real Redis, ZooKeeper and etcd
//! servers: candidates lead in campaign order with strictly increasing terms, the leader is
//! read and followed by anyone, a withdrawn candidacy leaves nothing behind, bad participant
//! ids are typed errors; and with the leader's *process* killed (`SIGKILL`) or paused past its
//! lease (`SIGSTOP`), a new leader takes over within the lease with a larger term, and a
//! resource that checks terms accepts no write of the old leader's once the new one wrote.
//!
//! The kill tests start this test binary again as the leader (`LOCK_TEST_ELECTION_CHILD` set),
//! as the cache and SQL kill tests do.

use std::time::Duration;

use lock_core::backend::LeaseKind;
use lock_core::{FencingToken, LockClient, LockError, MemoryBackend};
use tokio::time::{timeout, Instant};

use crate::conformance::{self, unique_key};

/// Bound on any one test.
const BOUND: Duration = Duration::from_secs(60);

/// The stores an election runs on here.
#[derive(Clone, Copy, Debug)]
enum Store {
    Memory,
    #[cfg(feature = "redis")]
    Redis,
    /// The stack's Redis Cluster.
    #[cfg(feature = "redis")]
    RedisCluster,
    /// The primary of the stack's Sentinel set.
    #[cfg(feature = "redis")]
    RedisSentinel,
    #[cfg(feature = "zookeeper")]
    ZooKeeper,
    #[cfg(feature = "etcd")]
    Etcd,
}

impl Store {
    fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            #[cfg(feature = "redis")]
            Self::Redis => "redis",
            #[cfg(feature = "redis")]
            Self::RedisCluster => "redis-cluster",
            #[cfg(feature = "redis")]
            Self::RedisSentinel => "redis-sentinel",
            #[cfg(feature = "zookeeper")]
            Self::ZooKeeper => "zookeeper",
            #[cfg(feature = "etcd")]
            Self::Etcd => "etcd",
        }
    }

    fn parse(name: &str) -> Self {
        match name {
            #[cfg(feature = "redis")]
            "redis" => Self::Redis,
            #[cfg(feature = "redis")]
            "redis-cluster" => Self::RedisCluster,
            #[cfg(feature = "redis")]
            "redis-sentinel" => Self::RedisSentinel,
            #[cfg(feature = "zookeeper")]
            "zookeeper" => Self::ZooKeeper,
            #[cfg(feature = "etcd")]
            "etcd" => Self::Etcd,
            _ => Self::Memory,
        }
    }

    /// The server's URL, `None` for memory; panics when a required server is not configured
    /// (and skips loudly otherwise, in `server_url`).
    fn url(self) -> Option<Option<String>> {
        let variable = match self {
            Self::Memory => return Some(None),
            #[cfg(feature = "redis")]
            Self::Redis => "LOCK_TEST_REDIS_URL",
            #[cfg(feature = "redis")]
            Self::RedisCluster => "LOCK_TEST_REDIS_CLUSTER_URLS",
            #[cfg(feature = "redis")]
            Self::RedisSentinel => "LOCK_TEST_REDIS_SENTINEL_URLS",
            #[cfg(feature = "zookeeper")]
            Self::ZooKeeper => "LOCK_TEST_ZOOKEEPER_URL",
            #[cfg(feature = "etcd")]
            Self::Etcd => "LOCK_TEST_ETCD_URL",
        };
        lock_testing::server_url(variable)
            .unwrap_or_else(|e| panic!("{e}"))
            .map(Some)
    }

    /// `n` instances of a service, each with a client (and connection, session) of its own;
    /// `None` when the server is not configured and not required.
    async fn instances(self, n: usize) -> Option<Vec<LockClient>> {
        let url = self.url()?;
        let memory = MemoryBackend::new();
        let mut all = Vec::new();
        for _ in 0..n {
            all.push(match (self, &url) {
                (Self::Memory, _) | (_, None) => LockClient::new(memory.clone()),
                #[cfg(feature = "redis")]
                (Self::Redis, Some(url)) => {
                    LockClient::new(lock_core::RedisBackend::connect(url).await.unwrap())
                }
                #[cfg(feature = "redis")]
                (Self::RedisCluster, Some(_)) => {
                    let deployment = crate::redis_support::Deployment::cluster()?;
                    LockClient::new(deployment.backend().await)
                }
                #[cfg(feature = "redis")]
                (Self::RedisSentinel, Some(_)) => {
                    let deployment = crate::redis_support::Deployment::sentinel()?;
                    LockClient::new(deployment.backend().await)
                }
                #[cfg(feature = "zookeeper")]
                (Self::ZooKeeper, Some(url)) => {
                    let backend = lock_core::ZooKeeperBackend::builder(url)
                        .session_timeout(Duration::from_secs(2))
                        .connect()
                        .await
                        .unwrap();
                    LockClient::new(backend)
                }
                #[cfg(feature = "etcd")]
                (Self::Etcd, Some(url)) => {
                    let backend = lock_core::EtcdBackend::builder(url)
                        .session_ttl(Duration::from_secs(2))
                        .connect()
                        .await
                        .unwrap();
                    LockClient::new(backend)
                }
            });
        }
        Some(all)
    }
}

/// Waits (bounded) until `n` candidates queue in `election` (the store says nothing when one
/// does: it is read).
async fn queued(locks: &LockClient, election: &str, n: usize) {
    let what = format!("{n} candidates queued");
    conformance::eventually(&what, || async {
        locks
            .queue_length(LeaseKind::Leader, election)
            .await
            .unwrap()
            == n
    })
    .await;
}

/// Three candidates: the first leads, the others lead in campaign order once the one before
/// resigns, each term larger than the last; the leader read by a bystander is each in turn.
async fn candidates_lead_in_order(store: Store) {
    let Some(instances) = store.instances(4).await else {
        return;
    };
    let name = unique_key("election");
    let bystander = instances[3].election(&name);
    assert_eq!(bystander.leader().await.unwrap(), None);
    let candidates: Vec<_> = ["a", "b", "c"]
        .iter()
        .zip(&instances)
        .map(|(id, locks)| locks.election(&name).participant(*id))
        .collect();
    let first = candidates[0].campaign().await.unwrap();
    let leader = bystander.leader().await.unwrap().expect("a leads");
    assert_eq!(
        (leader.participant.as_str(), leader.fencing_token),
        ("a", first.fencing_token())
    );

    let b = tokio::spawn({
        let election = candidates[1].clone();
        async move { election.campaign().await }
    });
    queued(&instances[3], &name, 1).await;
    let c = tokio::spawn({
        let election = candidates[2].clone();
        async move { election.campaign().await }
    });
    queued(&instances[3], &name, 2).await;

    let mut terms = vec![first.fencing_token()];
    assert!(first.resign().await.unwrap());
    let second = timeout(BOUND, b).await.unwrap().unwrap().unwrap();
    terms.push(second.fencing_token());
    let leader = bystander.leader().await.unwrap().expect("b leads");
    assert_eq!(
        (leader.participant.as_str(), leader.fencing_token),
        ("b", second.fencing_token())
    );
    assert!(
        !c.is_finished(),
        "c campaigned after b and must wait for it"
    );

    assert!(second.resign().await.unwrap());
    let third = timeout(BOUND, c).await.unwrap().unwrap().unwrap();
    terms.push(third.fencing_token());
    assert_eq!(bystander.leader().await.unwrap().unwrap().participant, "c");
    assert!(terms.windows(2).all(|w| w[0] < w[1]), "terms {terms:?}");
    third.resign().await.unwrap();
    assert_eq!(bystander.leader().await.unwrap(), None);
}

/// The next leader `watch` answers, within 5 s: the watches here read on their own only every
/// minute, so only the store's push (or a lease's end the watch timed) answers in time.
async fn step(watch: &mut lock_core::LeaderWatch) -> Option<lock_core::Leader> {
    timeout(Duration::from_secs(5), watch.changed())
        .await
        .expect("the store said nothing of the change")
        .unwrap()
}

/// What `watch` answers when `change` is made while it waits: 200 ms into the wait, when the
/// watch has read the leader and waits on the store, which must tell it (it reads on its own
/// only every minute). Should the watch be slower to start, its read sees the change: the
/// answer is the same, only the push goes untested that time.
async fn answer_to<T>(
    watch: &mut lock_core::LeaderWatch,
    change: impl std::future::Future<Output = T>,
) -> (Option<lock_core::Leader>, T) {
    tokio::join!(step(watch), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        change.await
    })
}

/// An observer sees nobody, then each leader, then nobody, told by the store as each change
/// happens.
async fn an_observer_follows_the_leader(store: Store) {
    let Some(instances) = store.instances(3).await else {
        return;
    };
    let name = unique_key("observed");
    let mut watch = instances[0]
        .election(&name)
        .observe_every(Duration::from_secs(60))
        .observe();
    assert_eq!(step(&mut watch).await, None);
    let a = instances[1].election(&name).participant("a");
    let (seen, a) = answer_to(&mut watch, a.campaign()).await;
    let a = a.unwrap();
    let seen = seen.expect("a leads");
    assert_eq!(
        (seen.participant.as_str(), seen.fencing_token),
        ("a", a.fencing_token())
    );
    assert_eq!(watch.current(), Some(&seen));
    let a_term = a.fencing_token();
    let (seen, resigned) = answer_to(&mut watch, a.resign()).await;
    assert!(resigned.unwrap());
    assert_eq!(seen, None);
    let b = instances[2].election(&name).participant("b");
    let (seen, b) = answer_to(&mut watch, b.campaign()).await;
    let b = b.unwrap();
    let seen = seen.expect("b leads");
    assert_eq!(
        (seen.participant.as_str(), seen.fencing_token),
        ("b", b.fencing_token())
    );
    assert!(b.fencing_token() > a_term);
    b.resign().await.unwrap();
}

/// A candidacy given up (`campaign_within` ending, `try_campaign` refused) leaves no entry: once
/// the leader resigns, nobody leads. A leadership dropped without `resign` is handed on.
async fn a_withdrawn_candidacy_leaves_nothing(store: Store) {
    let Some(instances) = store.instances(2).await else {
        return;
    };
    let name = unique_key("withdrawn");
    let a = instances[0].election(&name).participant("a");
    let b = instances[1].election(&name).participant("b");
    let leading = a.campaign().await.unwrap();
    assert!(b.try_campaign().await.unwrap().is_none());
    let waited = b.campaign_within(Duration::from_millis(200)).await.unwrap();
    assert!(waited.is_none());
    queued(&instances[0], &name, 0).await;
    let term = leading.fencing_token();
    drop(leading);
    let next = timeout(Duration::from_secs(10), b.campaign())
        .await
        .unwrap()
        .unwrap();
    assert!(next.fencing_token() > term);
    next.resign().await.unwrap();
    assert_eq!(a.leader().await.unwrap(), None);
}

/// Bad participant ids and names are typed errors, sent nowhere.
async fn bad_input_is_a_typed_error(store: Store) {
    let Some(instances) = store.instances(1).await else {
        return;
    };
    let locks = &instances[0];
    for bad in [String::new(), "a\nb".to_owned(), "x".repeat(257)] {
        let error = locks
            .election("jobs")
            .participant(bad)
            .try_campaign()
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                LockError::InvalidInput {
                    what: "participant id",
                    ..
                }
            ),
            "{error:?}"
        );
    }
    let error = locks.election("").leader().await.unwrap_err();
    assert!(matches!(error, LockError::InvalidKey { .. }), "{error:?}");
    assert_eq!(locks.held_leases(), 0);
}

macro_rules! election_suite {
    ($($module:ident: $store:expr),* $(,)?) => {$(
        mod $module {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn candidates_lead_in_order() {
                timeout(BOUND, super::candidates_lead_in_order($store)).await.unwrap();
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_observer_follows_the_leader() {
                timeout(BOUND, super::an_observer_follows_the_leader($store)).await.unwrap();
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_withdrawn_candidacy_leaves_nothing() {
                timeout(BOUND, super::a_withdrawn_candidacy_leaves_nothing($store)).await.unwrap();
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn bad_input_is_a_typed_error() {
                timeout(BOUND, super::bad_input_is_a_typed_error($store)).await.unwrap();
            }
        }
    )*};
}

election_suite!(memory: Store::Memory);
#[cfg(feature = "redis")]
election_suite!(redis: Store::Redis);
#[cfg(feature = "redis")]
election_suite!(redis_cluster: Store::RedisCluster);
#[cfg(feature = "redis")]
election_suite!(redis_sentinel: Store::RedisSentinel);
#[cfg(feature = "zookeeper")]
election_suite!(zookeeper: Store::ZooKeeper);
#[cfg(feature = "etcd")]
election_suite!(etcd: Store::Etcd);

#[cfg(feature = "redis")]
mod processes {
    //! The leader's process killed or paused, on each server store.

    use lock_core::fenced::FencedWrite;
    use lock_core::redis::RedisFencedStore;
    use lock_core::RedisBackend;

    use super::*;
    use crate::child_support::ChildTest;

    const CHILD_ENV: &str = "LOCK_TEST_ELECTION_CHILD";
    /// `child_process`'s name in the test binary, as `--exact` wants it.
    const CHILD_TEST: &str = "election::processes::child_process";
    /// The leadership lease (etcd's and ZooKeeper's sessions are 2 s too: see `instances`).
    const LEASE: Duration = Duration::from_secs(2);

    /// The fenced resource every leader writes to: a Redis value that refuses older terms.
    async fn resource() -> RedisFencedStore {
        let url = lock_testing::server_url("LOCK_TEST_REDIS_URL")
            .unwrap()
            .expect("the fenced resource needs LOCK_TEST_REDIS_URL");
        RedisFencedStore::from_backend(&RedisBackend::connect(&url).await.unwrap())
            .await
            .unwrap()
    }

    /// Runs only as the leader's process: campaigns in `<store>:<election>`, says
    /// `LEADER <term>`, then writes its term to the resource every 10 ms, saying how each write
    /// went (`ACCEPTED` / `REFUSED <newest>`) and `LOST` once it learns it lost.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn child_process() {
        let Ok(request) = std::env::var(CHILD_ENV) else {
            return;
        };
        let (store, name) = request.split_once(':').unwrap();
        let locks = Store::parse(store).instances(1).await.unwrap().remove(0);
        let resource = resource().await;
        let leadership = locks
            .election(name)
            .participant("child")
            .lease(lock_core::LeaseMode::watchdog(LEASE))
            .campaign()
            .await
            .unwrap();
        let term = leadership.fencing_token();
        println!("LEADER {}", term.get());
        let mut lost = false;
        loop {
            // The write goes out whether or not leadership is known lost: the resource, not
            // the leader's own belief, is what must refuse it.
            match resource.write(name, term, b"child").await.unwrap() {
                FencedWrite::Accepted => println!("ACCEPTED"),
                FencedWrite::Refused { newest } => println!("REFUSED {}", newest.get()),
            }
            if !lost && leadership.is_lost() {
                lost = true;
                println!("LOST");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Starts `child_process` as the leader in `name` on `store`; its term once it leads.
    async fn start_leader(store: Store, name: &str) -> (ChildTest, FencingToken) {
        let mut leader =
            ChildTest::start(CHILD_TEST, CHILD_ENV, &format!("{}:{name}", store.name()));
        let line = leader.line_with("LEADER").await;
        let term = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        (leader, FencingToken::new(term))
    }

    /// The leader's process is killed: the waiting candidate leads within the lease (plus a
    /// second for the store to notice), with a larger term, and its write is accepted.
    async fn a_killed_leader_is_replaced_within_its_lease(store: Store) {
        let Some(mut instances) = store.instances(1).await else {
            return;
        };
        let name = unique_key("killed");
        let (mut leader, old_term) = start_leader(store, &name).await;
        let successor = instances.remove(0).election(&name).participant("successor");
        // An observer that reads on its own only every minute: it sees the dead leader's
        // lease run out and the successor by the store's push (or the lease's end it timed).
        let mut watch = successor
            .clone()
            .observe_every(Duration::from_secs(60))
            .observe();
        assert_eq!(step(&mut watch).await.unwrap().participant, "child");
        let campaign = tokio::spawn(async move { successor.campaign().await });
        leader.line_with("ACCEPTED").await;
        leader.signal("-KILL");
        let killed = Instant::now();
        let leadership = timeout(BOUND, campaign).await.unwrap().unwrap().unwrap();
        let took = killed.elapsed();
        assert!(
            took < LEASE + Duration::from_millis(1_500),
            "new leader after {took:?}"
        );
        assert!(
            leadership.fencing_token() > old_term,
            "{:?} after {old_term:?}",
            leadership.fencing_token()
        );
        let write = resource()
            .await
            .write(&name, leadership.fencing_token(), b"successor")
            .await;
        assert_eq!(write.unwrap(), FencedWrite::Accepted);
        let mut seen = step(&mut watch).await;
        if seen.is_none() {
            seen = step(&mut watch).await; // the lease ran out before the successor's grant
        }
        let seen = seen.expect("the observer saw the successor");
        assert_eq!(
            (seen.participant.as_str(), seen.fencing_token),
            ("successor", leadership.fencing_token())
        );
        eprintln!(
            "{}: new leader {took:?} after the kill, term {} > {}",
            store.name(),
            leadership.fencing_token().get(),
            old_term.get()
        );
        leadership.resign().await.unwrap();
    }

    /// The leader's process is paused past its lease: the candidate leads with a larger term
    /// and writes; resumed, the old leader's writes are all refused (it keeps writing with its
    /// old term until it learns it lost, and after).
    async fn a_paused_leader_cannot_write_over_its_successor(store: Store) {
        let Some(mut instances) = store.instances(1).await else {
            return;
        };
        let name = unique_key("paused");
        let (mut leader, old_term) = start_leader(store, &name).await;
        let successor = instances.remove(0).election(&name).participant("successor");
        let campaign = tokio::spawn(async move { successor.campaign().await });
        leader.line_with("ACCEPTED").await;
        leader.signal("-STOP");
        let leadership = timeout(BOUND, campaign).await.unwrap().unwrap().unwrap();
        assert!(leadership.fencing_token() > old_term);
        let resource = resource().await;
        let write = resource
            .write(&name, leadership.fencing_token(), b"successor")
            .await;
        assert_eq!(write.unwrap(), FencedWrite::Accepted);
        leader.signal("-CONT");
        // Every write the resumed leader sends now is refused, up to and past its `LOST`.
        let mut refused = 0;
        let mut stale_accepted = 0;
        let mut lost = false;
        timeout(BOUND, async {
            while !lost || refused < 5 {
                let line = leader.next_line().await.expect("child ended");
                if line.contains("ACCEPTED") {
                    // A write sent before the pause may be answered after it; once one was
                    // refused, the successor's term is in, and an acceptance is a stale write.
                    if refused > 0 {
                        stale_accepted += 1;
                    }
                } else if line.contains("REFUSED") {
                    refused += 1;
                } else if line.contains("LOST") {
                    lost = true;
                }
            }
        })
        .await
        .expect("the resumed leader neither wrote nor learned it lost");
        // Whatever the old leader sent, the resource holds the successor's value.
        let (fence, value) = resource.read(&name).await.unwrap().unwrap();
        assert_eq!(
            (fence, value.as_slice()),
            (leadership.fencing_token(), &b"successor"[..])
        );
        assert_eq!(
            stale_accepted, 0,
            "writes of the old term accepted after the new leader's"
        );
        eprintln!(
            "{}: {refused} writes of the paused leader refused, 0 accepted",
            store.name()
        );
        leadership.resign().await.unwrap();
    }

    macro_rules! process_suite {
        ($($module:ident: $store:expr),* $(,)?) => {$(
            mod $module {
                use super::*;

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn a_killed_leader_is_replaced_within_its_lease() {
                    timeout(BOUND, super::a_killed_leader_is_replaced_within_its_lease($store)).await.unwrap();
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn a_paused_leader_cannot_write_over_its_successor() {
                    timeout(BOUND, super::a_paused_leader_cannot_write_over_its_successor($store)).await.unwrap();
                }
            }
        )*};
    }

    process_suite!(redis: Store::Redis);
    #[cfg(feature = "zookeeper")]
    process_suite!(zookeeper: Store::ZooKeeper);
    #[cfg(feature = "etcd")]
    process_suite!(etcd: Store::Etcd);
}
