//! [`ResponseCache`] (the `Transform`) and [`ResponseCacheMiddleware`] (the service it builds).

use std::rc::Rc;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue, VARY};
use actix_web::{Error, HttpResponse};
use lock_core::cache::Cache;
use lock_core::http::cache::{
    existing_cache_status, Answer, HttpCache, HttpCacheBuilder, Plan, CACHE_STATUS,
};
use lock_core::http::{HeaderLines, PlainResponse};
use tracing::Instrument;

use super::{driver, ResponseCacheBody};
use crate::head::{head, Headers};
use crate::response::from_plain;
use crate::transform::{middleware, Chain, LocalBoxFuture};

/// Middleware that serves `GET`/`HEAD` requests from a shared response cache, one handler
/// call per miss across every instance (see the [module docs](crate::response_cache)).
///
/// Settings are builder methods, the same as `lock_tower::ResponseCacheLayer`'s, checked by
/// [`build`](HttpCacheBuilder::build):
///
/// ```
/// use std::time::Duration;
/// use actix_web::{web, App};
/// use lock_actix::ResponseCache;
/// use lock_core::cache::{Cache, Freshness};
///
/// let cache = Cache::memory("web").unwrap();
/// let cached = ResponseCache::builder(cache.clone())
///     .default_freshness(Freshness::fresh_for(Duration::from_secs(10)))
///     .max_body(256 * 1024)
///     .build()
///     .unwrap();
/// let app = App::new().service(web::resource("/report").wrap(cached).to(|| async { "report" }));
/// # let _ = app;
/// assert!(ResponseCache::builder(cache).statuses([206]).build().is_err());
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct ResponseCache {
    cache: HttpCache,
}

impl ResponseCache {
    /// The response cache.
    #[must_use]
    pub fn http_cache(&self) -> &HttpCache {
        &self.cache
    }

    /// Middleware over a response cache built already.
    pub fn new(cache: HttpCache) -> Self {
        Self { cache }
    }

    /// The middleware's settings, over `cache` (memory for one process; Redis across
    /// instances).
    pub fn builder(cache: Cache) -> HttpCacheBuilder<Self> {
        HttpCacheBuilder::new(cache)
    }
}

impl From<HttpCache> for ResponseCache {
    fn from(cache: HttpCache) -> Self {
        Self::new(cache)
    }
}

middleware! {
    /// The service [`ResponseCache`] wraps around the rest of the chain.
    pub struct ResponseCacheMiddleware<S>
    for ResponseCache, answering ResponseCacheBody<B> where B: MessageBody + 'static
}

impl ResponseCache {
    /// One request through the middleware ([`ResponseCacheMiddleware`]'s `call`).
    fn handle<S: Chain<B>, B: MessageBody + 'static>(
        &self,
        service: &Rc<S>,
        request: ServiceRequest,
    ) -> LocalBoxFuture<Result<ServiceResponse<ResponseCacheBody<B>>, Error>> {
        let span = tracing::debug_span!(
            "response_cache",
            method = %request.method(),
            path = request.path(),
            cache_status = tracing::field::Empty,
        );
        let plan = self.cache.plan(&head(&request));
        match plan {
            Plan::Bypass(bypass) => {
                let response = service.call(request);
                Box::pin(
                    async move {
                        let answer = response.await;
                        bypass.record(crate::status::status_of(&answer));
                        let mut response = answer?;
                        let headers = HeaderLines(Headers(response.headers()));
                        let (cache_status, vary) = bypass.answer_headers(&headers);
                        set_cache_status(response.headers_mut(), &cache_status);
                        set_vary(response.headers_mut(), vary.as_deref());
                        Ok(response.map_body(|_, body| ResponseCacheBody::untouched(body)))
                    }
                    .instrument(span),
                )
            }
            Plan::Cache(call) => Box::pin(
                driver::serve(service.clone(), request, call, self.cache.clone()).instrument(span),
            ),
        }
    }
}

/// Replaces the response's `Vary` lines with lock-core's merged one, if it made one.
pub(crate) fn set_vary(headers: &mut HeaderMap, value: Option<&str>) {
    // Made of the response's own members (kept when not printable ASCII) and header names.
    if let Some(value) = value.and_then(|value| HeaderValue::from_str(value).ok()) {
        headers.insert(VARY, value);
    }
}

/// The response's own `Cache-Status` lines, joined.
pub(crate) fn existing(headers: &HeaderMap) -> Option<String> {
    existing_cache_status(&HeaderLines(Headers(headers)))
}

pub(crate) fn set_cache_status(headers: &mut HeaderMap, value: &str) {
    // Built from printable ASCII only (lock-core's `CacheStatusHeader`).
    if let Ok(value) = HeaderValue::from_str(value) {
        headers.insert(HeaderName::from_static(CACHE_STATUS), value);
    }
}

/// A response the cache made. A `HEAD` answer keeps the `GET`'s body: actix-web sends its
/// length and drops it.
pub(crate) fn answer_response<B>(answer: Answer) -> HttpResponse<ResponseCacheBody<B>> {
    from_plain(answer.response).map_body(|_, body| ResponseCacheBody::full(body))
}

/// The answer to a state the flow never reaches; generic, as every 5xx body the cache makes.
pub(crate) fn internal_response<B>() -> HttpResponse<ResponseCacheBody<B>> {
    tracing::error!("response cache: the request ended in an unexpected state");
    let problem = PlainResponse::problem(
        500,
        "urn:distributed-lock:cache-internal",
        "Internal Server Error",
        "the response cache failed to answer this request",
        &[],
    );
    from_plain(problem).map_body(|_, body| ResponseCacheBody::full(body))
}
