//! The slow "database" behind the product pages: every call takes a fixed time and is
//! counted, per product and per expiry generation, so a demo can show how often the cache let
//! requests through to it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

/// A product as the origin returns it (and the cache stores it, as JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Product {
    /// The id it was asked for.
    pub id: String,
    /// A display name.
    pub name: String,
    /// The price, in cents.
    pub price_cents: u64,
    /// Which origin call for this id produced it (1 for the first): a newer value has a
    /// larger version.
    pub version: u64,
    /// When the origin produced it, in ms since the Unix epoch.
    pub fetched_at_ms: u64,
}

/// Why the origin gave no product.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the product database is unavailable")]
pub struct OriginError;

/// The slow, counted product database. Clones share the counts.
///
/// Calls are grouped into **expiry generations** per product: a call that starts less than
/// one generation window (the cache's fresh window) after the first call of the current
/// generation belongs to it. A cache that collapses correctly calls the origin once per
/// generation, as a value it stored cannot expire before a fresh window has passed; every
/// further call in a generation is a request that got through to the database (a stampede).
/// Failed calls count too.
///
/// ```
/// use std::time::Duration;
/// use example_support::product::Origin;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let origin = Origin::new(Duration::from_millis(1), Duration::from_secs(60));
/// let product = origin.get_product("lamp-1").await.unwrap();
/// assert_eq!((product.version, origin.calls_for("lamp-1")), (1, 1));
/// origin.get_product("lamp-1").await.unwrap();
/// assert_eq!(origin.per_generation("lamp-1"), [2], "two calls within one fresh window");
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Origin {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    delay: Duration,
    generation_window: Duration,
    failing: AtomicBool,
    total: AtomicU64,
    keys: Mutex<BTreeMap<String, Vec<Generation>>>,
}

#[derive(Clone, Copy, Debug)]
struct Generation {
    first_call: Instant,
    calls: u64,
}

impl Origin {
    /// An origin whose calls take `delay`, counted in generations of `generation_window`.
    #[must_use]
    pub fn new(delay: Duration, generation_window: Duration) -> Self {
        Self {
            shared: Arc::new(Shared {
                delay,
                generation_window,
                failing: AtomicBool::new(false),
                total: AtomicU64::new(0),
                keys: Mutex::default(),
            }),
        }
    }

    /// How long each call takes.
    #[must_use]
    pub fn delay(&self) -> Duration {
        self.shared.delay
    }

    /// Reads product `id`: counts the call, takes the origin's delay, then answers (or fails,
    /// when told to with [`set_failing`](Self::set_failing)).
    pub async fn get_product(&self, id: &str) -> Result<Product, OriginError> {
        let version = self.count(id);
        tokio::time::sleep(self.shared.delay).await;
        if self.shared.failing.load(Ordering::SeqCst) {
            return Err(OriginError);
        }
        let fetched_at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Ok(Product {
            id: id.to_owned(),
            name: format!("Product {id}"),
            price_cents: 100 + id.bytes().map(u64::from).sum::<u64>() % 9_900,
            version,
            fetched_at_ms,
        })
    }

    /// Makes every call from now on fail (after its delay), or succeed again.
    pub fn set_failing(&self, failing: bool) {
        self.shared.failing.store(failing, Ordering::SeqCst);
    }

    /// Calls so far, every product together.
    #[must_use]
    pub fn calls(&self) -> u64 {
        self.shared.total.load(Ordering::SeqCst)
    }

    /// Calls so far for product `id`.
    #[must_use]
    pub fn calls_for(&self, id: &str) -> u64 {
        self.per_generation(id).iter().sum()
    }

    /// Calls for product `id` in each of its expiry generations, oldest first.
    #[must_use]
    pub fn per_generation(&self, id: &str) -> Vec<u64> {
        self.keys()
            .get(id)
            .map(|generations| generations.iter().map(|g| g.calls).collect())
            .unwrap_or_default()
    }

    /// Calls per generation for every product called so far.
    #[must_use]
    pub fn all_generations(&self) -> BTreeMap<String, Vec<u64>> {
        self.keys()
            .iter()
            .map(|(id, generations)| (id.clone(), generations.iter().map(|g| g.calls).collect()))
            .collect()
    }

    /// Counts a call for `id`; returns its number among the calls for `id` (from 1).
    fn count(&self, id: &str) -> u64 {
        self.shared.total.fetch_add(1, Ordering::SeqCst);
        let now = Instant::now();
        let window = self.shared.generation_window;
        let mut keys = self.keys();
        let generations = keys.entry(id.to_owned()).or_default();
        match generations.last_mut() {
            Some(current) if now.duration_since(current.first_call) < window => {
                current.calls += 1;
            }
            _ => generations.push(Generation {
                first_call: now,
                calls: 1,
            }),
        }
        generations.iter().map(|g| g.calls).sum()
    }

    fn keys(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Vec<Generation>>> {
        self.shared
            .keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn calls_fall_into_generations_of_one_window() {
        let origin = Origin::new(Duration::from_millis(50), Duration::from_millis(500));
        origin.get_product("a").await.unwrap();
        origin.get_product("a").await.unwrap(); // 50 ms after the first: same generation
        tokio::time::sleep(Duration::from_millis(500)).await;
        let third = origin.get_product("a").await.unwrap();
        assert_eq!(third.version, 3);
        assert_eq!(origin.per_generation("a"), [2, 1]);
        assert_eq!((origin.calls(), origin.calls_for("b")), (3, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failing_origin_fails_after_its_delay_and_still_counts() {
        let origin = Origin::new(Duration::from_millis(50), Duration::from_secs(1));
        origin.set_failing(true);
        let started = Instant::now();
        assert_eq!(origin.get_product("a").await, Err(OriginError));
        assert_eq!(started.elapsed(), Duration::from_millis(50));
        origin.set_failing(false);
        assert_eq!(origin.get_product("a").await.unwrap().version, 2);
    }
}
