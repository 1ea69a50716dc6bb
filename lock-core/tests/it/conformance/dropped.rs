//! Acquisitions dropped at random points: whatever a dropped acquire had sent or created (a
//! grant in flight, a queue node, a row), the next owner must not wait for it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lock_core::LockClient;
use tokio::time::{timeout, Instant};

use super::{bounded_for, eventually, unique_key, Harness};

/// Rounds per backend; half on a free key, half on a held one.
const ROUNDS: u64 = 40;
/// The lease each dropped acquire asks for: an orphan would block the key this long.
const ORPHAN_TTL: Duration = Duration::from_secs(60);
/// How long the next owner may wait for a key a dropped acquire touched. Far below
/// [`ORPHAN_TTL`]; above the SQL backends' second clean-up pass (their response timeout).
const FREE_WITHIN: Duration = Duration::from_secs(5);
/// Orphans after which the check stops counting (each costs [`FREE_WITHIN`]).
const ENOUGH_ORPHANS: usize = 3;

/// A small, seeded generator: the seed is printed so a failing run can be replayed.
struct Dice(u64);

impl Dice {
    fn seeded() -> Self {
        static SALT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let seed = std::env::var("LOCK_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(nanos ^ SALT.fetch_add(0x9e37_79b9, Ordering::Relaxed));
        eprintln!("dropped-acquire seed: {seed} (LOCK_TEST_SEED={seed} replays it)");
        Self(seed | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// Starts an acquire of `key` on `client` and drops it at a random point: after a random
/// number of scheduler turns (`select!`), after a timeout of 0–3 ms, or by aborting its task.
/// Returns true when the acquire finished first (its guard is then released normally).
async fn drop_at_random(client: &LockClient, key: &str, dice: &mut Dice) -> bool {
    let turns = dice.below(64);
    let acquire = {
        let (client, key) = (client.clone(), key.to_owned());
        async move {
            let guard = client
                .lock(&key)
                .lease(lock_core::LeaseMode::watchdog(ORPHAN_TTL))
                .acquire_within(Duration::from_secs(10))
                .await;
            match guard {
                Ok(Some(guard)) => {
                    guard.release().await.unwrap();
                    true
                }
                _ => false,
            }
        }
    };
    let yields = yield_turns(turns);
    match dice.below(3) {
        0 => tokio::select! {
            finished = acquire => finished,
            () = yields => false,
        },
        1 => timeout(Duration::from_micros(dice.below(3_000)), acquire)
            .await
            .unwrap_or(false),
        _ => {
            let task = tokio::spawn(acquire);
            yields.await;
            task.abort();
            task.await.unwrap_or(false)
        }
    }
}

/// Acquires dropped at random points, on free and on held keys, leave nothing behind: the next
/// owner gets the key within [`FREE_WITHIN`] although every dropped acquire asked for a
/// [`ORPHAN_TTL`] lease, and no queue entry remains.
pub(crate) async fn dropped_acquires_leave_nothing<H: Harness>(h: &H) {
    bounded_for(Duration::from_secs(150), async {
        let (holder, dropper, next) = (h.client().await, h.client().await, h.client().await);
        let mut dice = Dice::seeded();
        let (mut orphans, mut finished, mut rounds) = (Vec::new(), 0, 0);
        for round in 0..ROUNDS {
            rounds += 1;
            let key = unique_key("dropped");
            let held = round % 2 == 1;
            let guard = if held {
                Some(holder.lock(&key).await.unwrap())
            } else {
                None
            };
            finished += u64::from(drop_at_random(&dropper, &key, &mut dice).await);
            let full = match &guard {
                Some(guard) => guard.key().full().to_owned(),
                None if holder.namespace().is_empty() => key.clone(),
                None => format!("{}:{key}", holder.namespace()),
            };
            if let Some(guard) = guard {
                guard.release().await.unwrap();
            }
            let start = Instant::now();
            match next.lock(&key).acquire_within(FREE_WITHIN).await.unwrap() {
                Some(guard) => {
                    guard.release().await.unwrap();
                }
                None => orphans.push((round, held)),
            }
            if orphans.len() >= ENOUGH_ORPHANS {
                break;
            }
            assert!(start.elapsed() < FREE_WITHIN + Duration::from_secs(1));
            eventually("no queue entry left", || async { h.queued(&full).await == 0 }).await;
        }
        eprintln!(
            "dropped acquires: {rounds} rounds, {finished} finished before the drop, {} left a lock nobody held: {orphans:?}",
            orphans.len()
        );
        assert!(
            orphans.is_empty(),
            "{} of {rounds} dropped acquires left the key blocked (round, key held): {orphans:?}",
            orphans.len()
        );
        assert_eq!(dropper.held_leases(), 0);
    })
    .await;
}

/// A `release()` dropped at a random point (a timeout around it, `select!`, an aborted task)
/// still releases: the next owner gets the key within [`FREE_WITHIN`], not after the
/// [`ORPHAN_TTL`] lease.
pub(crate) async fn dropped_releases_still_release<H: Harness>(h: &H) {
    bounded_for(Duration::from_secs(150), async {
        let (holder, next) = (h.client().await, h.client().await);
        let mut dice = Dice::seeded();
        let mut blocked = Vec::new();
        for round in 0..ROUNDS / 2 {
            let key = unique_key("dropped-release");
            let guard = holder
                .lock(&key)
                .lease(lock_core::LeaseMode::watchdog(ORPHAN_TTL))
                .await
                .unwrap();
            let turns = dice.below(64);
            let release = async move { guard.release().await.is_ok() };
            match dice.below(3) {
                0 => {
                    tokio::select! {
                        _ = release => {}
                        () = yield_turns(turns) => {}
                    }
                }
                1 => {
                    timeout(Duration::from_micros(dice.below(3_000)), release)
                        .await
                        .ok();
                }
                _ => {
                    let task = tokio::spawn(release);
                    yield_turns(turns).await;
                    task.abort();
                    task.await.ok();
                }
            }
            match next.lock(&key).acquire_within(FREE_WITHIN).await.unwrap() {
                Some(guard) => {
                    guard.release().await.unwrap();
                }
                None => blocked.push(round),
            }
            if blocked.len() >= ENOUGH_ORPHANS {
                break;
            }
        }
        assert!(
            blocked.is_empty(),
            "dropped releases left these rounds' keys held: {blocked:?}"
        );
        assert_eq!(holder.held_leases(), 0);
    })
    .await;
}

async fn yield_turns(turns: u64) {
    for _ in 0..turns {
        tokio::task::yield_now().await;
    }
}
