//! The product pages behind both stampede example apps (axum and actix-web): a slow, counted
//! product database ([`Origin`]) in front of which lock-core's stampede-proof cache
//! ([`lock_core::cache`]) sits, what a request may carry ([`ProductRequest`]), and what each
//! outcome answers over HTTP ([`ProductAnswer`]). The apps only route requests here.
//!
//! - `GET /products/{id}`: the product as JSON from
//!   `cache.entry("product:{id}").json().fresh_for(..).stale_while_revalidate(..)
//!   .stale_if_error(..).try_get_with(..)`, with `x-cache-status: hit | computed | collapsed |
//!   stale | stale-if-error | fail-open | wait-timed-out`; 503 problem+json when the origin
//!   fails and no stale value can stand in.
//! - `GET /stats`: the origin's calls (in total, per product, per expiry generation) and
//!   what this instance served, by cache status.
//!
//! Anything else a request carries (an id that is not 1–64 ASCII letters, digits or `-`, a
//! query string) is a 400 `application/problem+json` before the cache is asked.
//!
//! ```
//! use lock_harness::product::{ProductConfig, ProductRequest, ProductRoute, ProductService};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let service = ProductService::start(&ProductConfig::memory()).await.unwrap();
//! let get = |path| ProductRequest::parse(ProductRoute::Product, path, None);
//! let first = service.serve(&get("/products/lamp-1").unwrap()).await;
//! let again = service.serve(&get("/products/lamp-1").unwrap()).await;
//! assert_eq!((first.cache_status, again.cache_status), (Some("computed"), Some("hit")));
//! assert_eq!(service.origin().calls_for("lamp-1"), 1);
//! assert!(get("/products/lamp_1").is_err());
//! # }
//! ```

mod answer;
mod config;
mod input;
mod origin;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use lock_core::cache::Cache;
use lock_core::LockError;
use serde_json::json;

pub use self::answer::{status_name, ProductAnswer, CACHE_STATUS_HEADER, ORIGIN_UNAVAILABLE};
pub use self::config::{CacheBackend, ProductConfig, ProductPolicy};
pub use self::input::{BadInput, ProductId, ProductRequest, ProductRoute, BAD_INPUT, MAX_ID_LEN};
pub use self::origin::{Origin, OriginError, Product};

/// One instance of the product service: its cache, the origin behind it and what it served.
/// Cheap to clone; clones are the same instance.
#[derive(Clone)]
pub struct ProductService {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    cache: Cache,
    origin: Origin,
    policy: ProductPolicy,
    /// Answers by cache status (or `error`).
    served: Mutex<BTreeMap<&'static str, u64>>,
}

impl ProductService {
    /// A standalone instance: its own origin, and the cache `config` names.
    pub async fn start(config: &ProductConfig) -> Result<Self, LockError> {
        let backend = CacheBackend::for_kind(config.backend, &config.redis_url)?;
        let origin = Origin::new(config.policy.origin_delay, config.policy.fresh);
        let cache = backend
            .cache(&config.namespace, config.policy.freshness())
            .await?;
        Ok(Self::new("products", cache, origin, config.policy))
    }

    /// An instance named `name` (for `/stats`) on `cache`, reading from `origin` (instances
    /// sharing a cache backend usually share the origin, as they would a database).
    #[must_use]
    pub fn new(
        name: impl Into<String>,
        cache: Cache,
        origin: Origin,
        policy: ProductPolicy,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                name: name.into(),
                cache,
                origin,
                policy,
                served: Mutex::default(),
            }),
        }
    }

    /// The origin behind this instance.
    #[must_use]
    pub fn origin(&self) -> &Origin {
        &self.inner.origin
    }

    /// The cache and origin settings.
    #[must_use]
    pub fn policy(&self) -> ProductPolicy {
        self.inner.policy
    }

    /// Answers a checked request.
    pub async fn serve(&self, request: &ProductRequest) -> ProductAnswer {
        match request {
            ProductRequest::Product(id) => self.product(id).await,
            ProductRequest::Stats => self.stats(),
        }
    }

    /// Checks a raw request routed to `route` and answers it (400 for bad input).
    pub async fn handle(
        &self,
        route: ProductRoute,
        path: &str,
        query: Option<&str>,
    ) -> ProductAnswer {
        match ProductRequest::parse(route, path, query) {
            Ok(request) => self.serve(&request).await,
            Err(bad) => ProductAnswer::bad_input(&bad),
        }
    }

    /// `GET /products/{id}`: the product, through the cache.
    pub async fn product(&self, id: &ProductId) -> ProductAnswer {
        let policy = self.inner.policy;
        let origin = self.inner.origin.clone();
        let owned_id = id.as_str().to_owned();
        let outcome = self
            .inner
            .cache
            .entry(id.cache_key())
            .json()
            .fresh_for(policy.fresh)
            .stale_while_revalidate(policy.stale_while_revalidate)
            .stale_if_error(policy.stale_if_error)
            // Runs only for the one request (across every instance) that computes, maybe
            // as a background refresh: it owns what it uses.
            .try_get_with(move || async move { origin.get_product(&owned_id).await })
            .await;
        let answer = ProductAnswer::from_cache(&outcome);
        self.count(answer.cache_status.unwrap_or("error"));
        answer
    }

    /// `GET /stats`: the origin's calls and this instance's answers.
    #[must_use]
    pub fn stats(&self) -> ProductAnswer {
        let origin = &self.inner.origin;
        let per_generation: serde_json::Map<String, serde_json::Value> = origin
            .all_generations()
            .into_iter()
            .map(|(id, generations)| {
                let calls: u64 = generations.iter().sum();
                (id, json!({"calls": calls, "per_expiry": generations}))
            })
            .collect();
        let served = self
            .inner
            .served
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        ProductAnswer::json(&json!({
            "instance": self.inner.name,
            "cache": self.inner.cache.store_name(),
            "origin": {
                "calls": origin.calls(),
                "delay_ms": origin.delay().as_millis() as u64,
                "products": per_generation,
            },
            "served": served,
        }))
    }

    fn count(&self, status: &'static str) {
        *self
            .inner
            .served
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(status)
            .or_default() += 1;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Fresh for 100 ms, then stale for `swr` while one refresh runs; a 5 ms origin.
    fn quick(swr: Duration) -> ProductPolicy {
        ProductPolicy {
            fresh: Duration::from_millis(100),
            stale_while_revalidate: swr,
            stale_if_error: Duration::from_secs(60),
            origin_delay: Duration::from_millis(5),
        }
    }

    async fn service(policy: ProductPolicy) -> ProductService {
        let cache = CacheBackend::memory()
            .cache("products-test", policy.freshness())
            .await
            .unwrap();
        let origin = Origin::new(policy.origin_delay, policy.fresh);
        ProductService::new("test", cache, origin, policy)
    }

    fn id(raw: &str) -> ProductId {
        ProductId::parse(raw).unwrap()
    }

    fn version(answer: &ProductAnswer) -> u64 {
        let product: Product = serde_json::from_slice(&answer.body).unwrap();
        product.version
    }

    #[tokio::test]
    async fn a_stale_product_is_served_at_once_and_refreshed_once() {
        let service = service(quick(Duration::from_secs(10))).await;
        let first = service.product(&id("p1")).await;
        assert_eq!((first.cache_status, version(&first)), (Some("computed"), 1));
        tokio::time::sleep(Duration::from_millis(150)).await;
        let stale = service.product(&id("p1")).await;
        assert_eq!((stale.cache_status, version(&stale)), (Some("stale"), 1));
        // Stale until the one refresh lands, then the new version.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let answer = service.product(&id("p1")).await;
            match (answer.cache_status, version(&answer)) {
                (Some("hit"), 2) => break,
                (Some("stale"), 1) if tokio::time::Instant::now() < deadline => {}
                other => panic!("{other:?}"),
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(service.origin().per_generation("p1"), [1, 1]);
    }

    #[tokio::test]
    async fn a_failing_origin_serves_stale_if_it_can_and_503_if_not() {
        let service = service(quick(Duration::ZERO)).await;
        service.product(&id("p1")).await;
        service.origin().set_failing(true);
        // Past fresh (no stale-while-revalidate), within stale-if-error: the refresh fails,
        // the old value stands in.
        tokio::time::sleep(Duration::from_millis(150)).await;
        let stale = service.product(&id("p1")).await;
        assert_eq!(
            (stale.status, stale.cache_status),
            (200, Some("stale-if-error"))
        );
        let never_cached = service.product(&id("p2")).await;
        assert_eq!(
            (never_cached.status, never_cached.retry_after),
            (503, Some(1))
        );
        let body = String::from_utf8(never_cached.body).unwrap();
        assert!(body.contains(ORIGIN_UNAVAILABLE), "{body}");
    }

    #[tokio::test]
    async fn stats_count_the_origin_and_the_answers() {
        let service = service(quick(Duration::ZERO)).await;
        service.product(&id("p1")).await;
        service.product(&id("p1")).await;
        let stats: serde_json::Value = serde_json::from_slice(&service.stats().body).unwrap();
        assert_eq!(stats["origin"]["calls"], 1);
        assert_eq!(stats["origin"]["products"]["p1"]["per_expiry"], json!([1]));
        assert_eq!(stats["served"], json!({"computed": 1, "hit": 1}));
    }
}
