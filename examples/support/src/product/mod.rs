//! The product pages behind both stampede example apps (axum and actix-web): a slow, counted
//! product database ([`Origin`]), what a request may carry ([`ProductRequest`]), what each
//! answer is over HTTP ([`ProductAnswer`]), and the response cache the apps put in front of
//! the product route ([`ProductService::http_cache`]: lock-core's [`HttpCache`], through
//! `lock_tower::ResponseCacheLayer` or `lock_actix::ResponseCache`). The apps only route
//! requests here.
//!
//! - `GET /products/{id}`: the product as JSON, read from the origin; the response cache in
//!   front stores it with the service's freshness ([`ProductPolicy`]: the cache's default
//!   freshness, as the answer states none) and says how each request was answered in an
//!   RFC 9211 `Cache-Status` (`lock-core; hit`, `…; fwd=miss; fwd-status=200; stored`,
//!   `…; fwd=miss; collapsed`, ...). When the origin fails: `503` problem+json with
//!   `Retry-After: 1`, which the cache shares with the requests waiting for it and remembers
//!   for its negative TTL (or answers from a stored product within stale-if-error).
//! - `GET /stats`: the origin's calls (in total, per product, per expiry generation).
//!
//! Anything else a request carries (an id that is not 1–64 ASCII letters, digits or `-`, a
//! query string) is a 400 `application/problem+json` that never reaches the origin.
//!
//! ```
//! use example_support::product::{ProductConfig, ProductRequest, ProductRoute, ProductService};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let service = ProductService::start(&ProductConfig::memory()).await.unwrap();
//! let get = |path| ProductRequest::parse(ProductRoute::Product, path, None);
//! let answer = service.serve(&get("/products/lamp-1").unwrap()).await;
//! assert_eq!((answer.status, service.origin().calls_for("lamp-1")), (200, 1));
//! assert!(get("/products/lamp_1").is_err());
//! # }
//! ```

mod answer;
mod config;
mod input;
mod origin;

use std::sync::Arc;

use lock_core::cache::Cache;
use lock_core::http::admin::AdminConsole;
use lock_core::http::cache::HttpCache;
use lock_core::LockError;
use serde_json::json;

pub use self::answer::{ProductAnswer, ORIGIN_UNAVAILABLE};
pub use self::config::{CacheBackend, ProductConfig, ProductPolicy};
pub use self::input::{BadInput, ProductId, ProductRequest, ProductRoute, BAD_INPUT, MAX_ID_LEN};
pub use self::origin::{Origin, OriginError, Product};

/// One instance of the product service: the origin behind it and the response cache the
/// apps put in front of it. Cheap to clone; clones are the same instance.
#[derive(Clone)]
pub struct ProductService {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    http: HttpCache,
    origin: Origin,
    policy: ProductPolicy,
    /// The admin console on the cache's leases, with `--admin-token`.
    admin: Option<AdminConsole>,
}

impl ProductService {
    /// A standalone instance: its own origin, and the cache `config` names.
    pub async fn start(config: &ProductConfig) -> Result<Self, LockError> {
        let backend = CacheBackend::for_kind(config.backend, &config.redis_url)?;
        let origin = Origin::new(config.policy.origin_delay, config.policy.fresh);
        let cache = backend
            .cache(&config.namespace, config.policy.freshness())
            .await?;
        let mut service = Self::new("products", cache.clone(), origin, config.policy)?;
        if let Some(auth) = config.admin.clone() {
            let locks = backend.lock_client(&config.namespace).await?;
            if let Some(inner) = Arc::get_mut(&mut service.inner) {
                inner.admin = Some(crate::admin::builder(locks, auth).cache(&cache).build());
            }
        }
        Ok(service)
    }

    /// An instance named `name` (for `/stats`) whose product pages are cached in `cache` with
    /// `policy`'s freshness, reading from `origin` (instances sharing a cache backend usually
    /// share the origin, as they would a database).
    pub fn new(
        name: impl Into<String>,
        cache: Cache,
        origin: Origin,
        policy: ProductPolicy,
    ) -> Result<Self, LockError> {
        let http = HttpCache::builder(cache)
            .default_freshness(policy.freshness())
            .build()?;
        Ok(Self {
            inner: Arc::new(Inner {
                name: name.into(),
                http,
                origin,
                policy,
                admin: None,
            }),
        })
    }

    /// The admin console on the cache's leases (its computations in flight), when started
    /// with `--admin-token`: the apps mount it at [`crate::admin::PATH`].
    #[must_use]
    pub fn admin(&self) -> Option<&AdminConsole> {
        self.inner.admin.as_ref()
    }

    /// The response cache to put in front of the product route.
    #[must_use]
    pub fn http_cache(&self) -> &HttpCache {
        &self.inner.http
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
            Err(bad) => ProductAnswer::bad_input(BAD_INPUT, bad.input, &bad.detail),
        }
    }

    /// `GET /products/{id}`: the product, from the origin (the response cache in front decides
    /// when that happens).
    pub async fn product(&self, id: &ProductId) -> ProductAnswer {
        match self.inner.origin.get_product(id.as_str()).await {
            Ok(product) => {
                ProductAnswer::json(200, &serde_json::to_value(&product).unwrap_or_default())
            }
            Err(error) => ProductAnswer::origin_unavailable(&error.to_string()),
        }
    }

    /// `GET /stats`: the origin's calls.
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
        ProductAnswer::json(
            200,
            &json!({
                "instance": self.inner.name,
                "cache": self.inner.http.cache().store_name(),
                "origin": {
                    "calls": origin.calls(),
                    "delay_ms": origin.delay().as_millis() as u64,
                    "products": per_generation,
                },
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn service() -> ProductService {
        let policy = ProductPolicy {
            origin_delay: Duration::from_millis(5),
            ..ProductPolicy::default()
        };
        let cache = CacheBackend::memory()
            .cache("products-test", policy.freshness())
            .await
            .unwrap();
        let origin = Origin::new(policy.origin_delay, policy.fresh);
        ProductService::new("test", cache, origin, policy).unwrap()
    }

    fn id(raw: &str) -> ProductId {
        ProductId::parse(raw).unwrap()
    }

    #[tokio::test]
    async fn a_failing_origin_is_a_503_with_retry_after() {
        let service = service().await;
        service.origin().set_failing(true);
        let answer = service.product(&id("p1")).await;
        assert_eq!(
            (answer.status, answer.headers),
            (503, vec![("retry-after", "1".to_owned())])
        );
        let body = String::from_utf8(answer.body).unwrap();
        assert!(body.contains(ORIGIN_UNAVAILABLE), "{body}");
    }

    #[tokio::test]
    async fn stats_count_the_origin() {
        let service = service().await;
        service.product(&id("p1")).await;
        service.product(&id("p1")).await;
        let stats: serde_json::Value = serde_json::from_slice(&service.stats().body).unwrap();
        assert_eq!(stats["origin"]["calls"], 2);
        assert_eq!(stats["origin"]["products"]["p1"]["per_expiry"], json!([2]));
        assert_eq!(stats["cache"], "memory");
    }
}
