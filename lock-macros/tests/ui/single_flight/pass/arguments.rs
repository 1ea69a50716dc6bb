//! Every argument; free fns, methods on `self`, `self: Arc<Self>` and (unused by the body)
//! `&self`, generic fns, `&T` arguments, patterns and inner attributes; `main` runs them on
//! memory caches.

use std::fmt;
use std::sync::Arc;

use lock_core::cache::{Cache, CacheFailure};
use lock_core::single_flight;

#[derive(Debug)]
enum AppError {
    Cache(CacheFailure),
    Parse(std::num::ParseIntError),
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cache(failure) => failure.fmt(f),
            Self::Parse(error) => error.fmt(f),
        }
    }
}

impl From<CacheFailure> for AppError {
    fn from(failure: CacheFailure) -> Self {
        Self::Cache(failure)
    }
}

impl From<std::num::ParseIntError> for AppError {
    fn from(error: std::num::ParseIntError) -> Self {
        Self::Parse(error)
    }
}

#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Product {
    id: u64,
    tags: Vec<String>,
}

struct Order {
    id: u64,
    line: (u32, String),
}

// Every argument; field paths and tuple indices; `?` converts into the declared error type.
#[single_flight(
    key = "order:{order.id}:{order.line.1}:{{literal}}",
    name = "orders",
    ttl = "1m 30s",
    stale = "5m",
    stale_if_error = "1h",
    negative_ttl = "250ms",
    wait = "3s",
    cache = cache,
    crate = "::lock_core"
)]
async fn order_total(cache: &Cache, order: Order, quantity: &str) -> Result<u64, AppError> {
    #![allow(clippy::needless_question_mark)]
    let _ = order.line.0;
    Ok(order.id * quantity.parse::<u64>()?)
}

// A key expression; the global cache; `Box<dyn Error>` holds cache failures as they are.
#[single_flight(key = format!("ids-{}", ids.len()))]
async fn count(ids: Vec<u32>) -> Result<usize, Box<dyn std::error::Error + Send + Sync>> {
    Ok(ids.len())
}

// Destructuring patterns and `&(..)` patterns move what they bind.
#[single_flight(key = "pair:{a}:{b}", cache = cache)]
async fn pair(
    cache: Arc<Cache>,
    (a, b): (u32, String),
    &(x, _): &(u8, u8),
) -> Result<String, CacheFailure> {
    Ok(format!("{a}:{b}:{x}"))
}

// Generic fns.
#[single_flight(key = "generic:{id}", cache = cache)]
async fn generic<T>(cache: Cache, id: u64, value: T) -> Result<T, CacheFailure>
where
    T: serde::Serialize + serde::de::DeserializeOwned + Clone + Send + Sync + 'static,
{
    let _ = id;
    Ok(value)
}

#[derive(Clone)]
struct Catalog {
    cache: Cache,
    shop: String,
}

impl Catalog {
    #[single_flight(key = "product:{self.shop}:{id}", cache = self.cache)]
    async fn product(self, id: u64) -> Result<Product, CacheFailure> {
        Ok(Product { id, tags: vec![self.shop.clone()] })
    }

    // `&self` read only by the key and `cache = ...`: the body does not capture it.
    #[single_flight(key = "borrowed:{self.shop}:{id}", cache = self.cache)]
    async fn borrowed(&self, id: u64) -> Result<u64, CacheFailure> {
        Ok(id + 1)
    }

    #[single_flight(key = "shared:{self.shop}:{id}", cache = &self.cache, stale = "10s")]
    async fn shared(self: Arc<Self>, id: u64, tag: &str) -> Result<Product, CacheFailure> {
        Ok(Product { id, tags: vec![self.shop.clone(), tag.to_owned()] })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let cache = Cache::memory("ui").unwrap();
    Cache::memory("global").unwrap().install_global().unwrap();
    let order = Order { id: 4, line: (1, "blue".into()) };
    assert_eq!(order_total(&cache, order, "3").await.unwrap(), 12);
    assert_eq!(count(vec![1, 2]).await.unwrap(), 2);
    let shared = Arc::new(cache.clone());
    assert_eq!(pair(shared, (1, "b".into()), &(2, 3)).await.unwrap(), "1:b:2");
    assert_eq!(generic(cache.clone(), 1, vec![1u8]).await.unwrap(), vec![1u8]);
    let catalog = Catalog { cache, shop: "s".into() };
    assert_eq!(catalog.clone().product(1).await.unwrap().tags, ["s"]);
    assert_eq!(catalog.borrowed(1).await.unwrap(), 2);
    let catalog = Arc::new(catalog);
    assert_eq!(catalog.shared(2, "t").await.unwrap().tags, ["s", "t"]);
}
