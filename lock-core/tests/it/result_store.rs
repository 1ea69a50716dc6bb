//! One suite for every result store (`lock_core::results`): memory always, Redis and
//! PostgreSQL on the servers in `LOCK_TEST_REDIS_URL` / `LOCK_TEST_POSTGRES_URL` (`cargo xtask
//! test` starts them). Without a server its suite fails when `LOCK_TEST_REQUIRE_SERVERS=1` or
//! `CI` is set, and otherwise says loudly that it skipped.
//!
//! Each case opens its stores through a [`Harness`]: two stores opened from one harness share
//! the entries but not their connections, as two processes would. The checks only the
//! PostgreSQL store has are in `result_store/postgres_harness.rs`.

use std::time::Duration;

use lock_core::memory::MemoryResultStore;
use lock_core::results::{PutEntry, Replace, ResultStore};
use lock_core::LockKey;
use lock_testing::unique;
use tokio::time::{timeout, Instant};

/// How long a push may take to arrive.
const PUSH_WAIT: Duration = Duration::from_secs(5);
/// Long enough to outlive any case.
const KEEP: Duration = Duration::from_secs(60);

trait Harness {
    type Store: ResultStore + Clone;

    /// Another store on the same entries (on memory, a clone).
    async fn open(&self) -> Self::Store;
}

fn key(name: &str) -> LockKey {
    LockKey::new("results", &unique(name)).unwrap()
}

/// An entry in the header format every store reads: `lc1 <kind> <20-digit fence> <body>`.
fn entry(kind: char, fence: u64, body: &str) -> Vec<u8> {
    format!("lc1 {kind} {fence:020} {body}").into_bytes()
}

fn digits(fence: u64) -> String {
    format!("{fence:020}")
}

/// Puts `entry(kind, fence, body)` with `keep` and `rule`; returns whether it was stored.
async fn put<S: ResultStore>(
    store: &S,
    key: &LockKey,
    (kind, fence, body): (char, u64, &str),
    keep: Duration,
    rule: Replace,
) -> bool {
    let bytes = entry(kind, fence, body);
    let fence_digits = digits(fence);
    let put = PutEntry {
        fence_digits: &fence_digits,
        entry: &bytes,
        keep,
        rule,
    };
    store.put(key, put).await.unwrap()
}

async fn get<S: ResultStore>(store: &S, key: &LockKey) -> Option<Vec<u8>> {
    store.get(key).await.unwrap()
}

async fn missing_key_is_absent(h: &impl Harness) {
    let store = h.open().await;
    assert_eq!(get(&store, &key("missing")).await, None);
}

async fn put_then_get_round_trips(h: &impl Harness) {
    let (store, key) = (h.open().await, key("round-trip"));
    assert!(put(&store, &key, ('V', 1, "one"), KEEP, Replace::Older).await);
    assert_eq!(get(&store, &key).await, Some(entry('V', 1, "one")));
    let other = h.open().await;
    assert_eq!(get(&other, &key).await, Some(entry('V', 1, "one")));
}

async fn older_replaces_only_entries_of_older_fences(h: &impl Harness) {
    let (store, key) = (h.open().await, key("older"));
    assert!(put(&store, &key, ('V', 5, "five"), KEEP, Replace::Older).await);
    assert!(!put(&store, &key, ('V', 5, "same"), KEEP, Replace::Older).await);
    assert!(!put(&store, &key, ('V', 3, "three"), KEEP, Replace::Older).await);
    assert_eq!(get(&store, &key).await, Some(entry('V', 5, "five")));
    assert!(put(&store, &key, ('V', 7, "seven"), KEEP, Replace::Older).await);
    assert_eq!(get(&store, &key).await, Some(entry('V', 7, "seven")));
}

async fn older_or_same_accepts_the_same_fence(h: &impl Harness) {
    let (store, key) = (h.open().await, key("same"));
    assert!(
        put(
            &store,
            &key,
            ('I', 5, "in flight"),
            KEEP,
            Replace::OlderOrSame
        )
        .await
    );
    assert!(put(&store, &key, ('I', 5, "again"), KEEP, Replace::OlderOrSame).await);
    assert_eq!(get(&store, &key).await, Some(entry('I', 5, "again")));
    assert!(!put(&store, &key, ('I', 4, "older"), KEEP, Replace::OlderOrSame).await);
    assert!(put(&store, &key, ('I', 6, "newer"), KEEP, Replace::OlderOrSame).await);
    assert_eq!(get(&store, &key).await, Some(entry('I', 6, "newer")));
}

async fn final_entries_are_never_replaced_until_removed(h: &impl Harness) {
    let (store, key) = (h.open().await, key("final"));
    assert!(put(&store, &key, ('C', 5, "done"), KEEP, Replace::OlderOrSame).await);
    for fence in [1, 5, 9] {
        for rule in [Replace::Older, Replace::OlderOrSame] {
            for keep in [KEEP, Duration::ZERO] {
                let put = put(&store, &key, ('V', fence, "late"), keep, rule).await;
                assert!(!put, "fence {fence}, {rule:?}, keep {keep:?}");
                let again = self::put(&store, &key, ('C', fence, "late"), keep, rule).await;
                assert!(
                    !again,
                    "a final entry over a final one: fence {fence}, {rule:?}"
                );
            }
        }
    }
    assert_eq!(get(&store, &key).await, Some(entry('C', 5, "done")));
    store.remove(&key).await.unwrap();
    assert!(put(&store, &key, ('V', 1, "after"), KEEP, Replace::Older).await);
    assert_eq!(get(&store, &key).await, Some(entry('V', 1, "after")));
}

/// Polls until `key` reads as absent; expiry sends no signal to wait for.
async fn until_gone<S: ResultStore>(store: &S, key: &LockKey) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while get(store, key).await.is_some() {
        assert!(Instant::now() < deadline, "still there 5 s after its keep");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn entries_expire_after_their_keep(h: &impl Harness) {
    let (store, key) = (h.open().await, key("expiry"));
    let short = Duration::from_millis(200);
    assert!(put(&store, &key, ('V', 5, "short"), short, Replace::Older).await);
    assert_eq!(get(&store, &key).await, Some(entry('V', 5, "short")));
    until_gone(&store, &key).await;
    // Expired counts as absent: an older fence, even a final entry, gives way.
    assert!(put(&store, &key, ('C', 3, "final"), short, Replace::Older).await);
    until_gone(&store, &key).await;
    assert!(put(&store, &key, ('V', 1, "after"), KEEP, Replace::Older).await);
    assert_eq!(get(&store, &key).await, Some(entry('V', 1, "after")));
}

async fn next_push(watch: &mut lock_core::results::ValueWatch) -> Vec<u8> {
    let pushed = timeout(PUSH_WAIT, watch.next_bytes())
        .await
        .expect("no push within 5 s")
        .expect("the push channel closed");
    pushed.as_ref().clone()
}

async fn keep_zero_pushes_without_storing(h: &impl Harness) {
    let (store, waiter, key) = (h.open().await, h.open().await, key("pass"));
    let (mut watch, there) = waiter.watch(&key, PUSH_WAIT).await.unwrap();
    assert_eq!(there, None);
    assert!(
        put(
            &store,
            &key,
            ('P', 3, "pass"),
            Duration::ZERO,
            Replace::Older
        )
        .await
    );
    assert_eq!(next_push(&mut watch).await, entry('P', 3, "pass"));
    assert_eq!(get(&store, &key).await, None);
    assert_eq!(get(&waiter, &key).await, None);
    // A pass obeys the rule too: not over a newer entry.
    assert!(put(&store, &key, ('V', 9, "nine"), KEEP, Replace::Older).await);
    assert!(
        !put(
            &store,
            &key,
            ('P', 5, "late"),
            Duration::ZERO,
            Replace::Older
        )
        .await
    );
    assert_eq!(get(&store, &key).await, Some(entry('V', 9, "nine")));
}

async fn watch_returns_the_entry_then_receives_another_instances_put(h: &impl Harness) {
    let (store, waiter, key) = (h.open().await, h.open().await, key("watch"));
    assert!(put(&store, &key, ('V', 1, "first"), KEEP, Replace::Older).await);
    let (mut watch, there) = waiter.watch(&key, PUSH_WAIT).await.unwrap();
    assert_eq!(there, Some(entry('V', 1, "first")));
    assert!(put(&store, &key, ('V', 2, "second"), KEEP, Replace::Older).await);
    assert_eq!(next_push(&mut watch).await, entry('V', 2, "second"));
}

async fn big_entries_reach_the_watcher(h: &impl Harness) {
    let (store, waiter, key) = (h.open().await, h.open().await, key("big"));
    let (mut watch, _) = waiter.watch(&key, PUSH_WAIT).await.unwrap();
    let body = "x".repeat(100 * 1024);
    assert!(put(&store, &key, ('V', 1, &body), KEEP, Replace::Older).await);
    assert_eq!(next_push(&mut watch).await, entry('V', 1, &body));
    assert_eq!(get(&waiter, &key).await, Some(entry('V', 1, &body)));
}

async fn concurrent_puts_leave_the_newest(h: &impl Harness) {
    let stores = [h.open().await, h.open().await];
    let key = key("concurrent");
    let mut puts = tokio::task::JoinSet::new();
    // Fences out of order, over two instances at once.
    for fence in (1..=20).map(|n| (n * 7) % 20 + 1) {
        let (store, key) = (stores[fence as usize % 2].clone(), key.clone());
        puts.spawn(
            async move { put(&store, &key, ('V', fence, "racing"), KEEP, Replace::Older).await },
        );
    }
    let stored = puts
        .join_all()
        .await
        .into_iter()
        .filter(|&stored| stored)
        .count();
    assert!((1..=20).contains(&stored));
    assert_eq!(get(&stores[0], &key).await, Some(entry('V', 20, "racing")));
}

async fn remove_deletes(h: &impl Harness) {
    let (store, key) = (h.open().await, key("remove"));
    store.remove(&key).await.unwrap();
    assert!(put(&store, &key, ('V', 5, "five"), KEEP, Replace::Older).await);
    h.open().await.remove(&key).await.unwrap();
    assert_eq!(get(&store, &key).await, None);
    // Gone means absent: any fence may store again.
    assert!(put(&store, &key, ('V', 1, "one"), KEEP, Replace::Older).await);
}

/// The suite, as `#[tokio::test]`s in module `$module`, each on the harness `$harness` (an
/// `Option`: `None` when the server is missing and may be).
macro_rules! result_store_suite {
    ($module:ident, $harness:expr) => {
        result_store_suite!(
            $module,
            $harness,
            missing_key_is_absent,
            put_then_get_round_trips,
            older_replaces_only_entries_of_older_fences,
            older_or_same_accepts_the_same_fence,
            final_entries_are_never_replaced_until_removed,
            entries_expire_after_their_keep,
            keep_zero_pushes_without_storing,
            watch_returns_the_entry_then_receives_another_instances_put,
            big_entries_reach_the_watcher,
            concurrent_puts_leave_the_newest,
            remove_deletes,
        );
    };
    ($module:ident, $harness:expr, $($case:ident),+ $(,)?) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let Some(harness) = $harness.await else { return };
                    super::$case(&harness).await;
                }
            )+
        }
    };
}

struct Memory(MemoryResultStore);

impl Harness for Memory {
    type Store = MemoryResultStore;

    async fn open(&self) -> MemoryResultStore {
        self.0.clone()
    }
}

async fn memory() -> Option<Memory> {
    Some(Memory(MemoryResultStore::new()))
}

result_store_suite!(memory_store, memory());

#[cfg(feature = "redis")]
mod redis_harness {
    use lock_core::redis::RedisResultStore;

    use crate::redis_support::SharedRedis;

    pub(crate) struct Redis(SharedRedis);

    impl super::Harness for Redis {
        type Store = RedisResultStore;

        /// A store on a connection of its own.
        async fn open(&self) -> RedisResultStore {
            let backend = self.0.backend().await;
            RedisResultStore::from_backend(&backend).await.unwrap()
        }
    }

    pub(crate) async fn redis() -> Option<Redis> {
        SharedRedis::stack().map(Redis)
    }

    /// A server of the test's own, as an ACL user limited to its key prefix (`~svc:*`,
    /// `&svc:*`; see `acl_support.rs`): every entry's key and push channel is under it.
    pub(crate) async fn acl_user() -> Option<Redis> {
        Some(Redis(SharedRedis::acl_user().await))
    }
}

#[cfg(feature = "redis")]
result_store_suite!(redis_store, redis_harness::redis());
#[cfg(feature = "redis")]
result_store_suite!(redis_acl_user, redis_harness::acl_user());

#[cfg(feature = "postgres")]
mod postgres_harness;

#[cfg(feature = "postgres")]
result_store_suite!(postgres_store, postgres_harness::postgres());
