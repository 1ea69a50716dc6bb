//! [`ResponseCacheService`]: the response cache around one inner service.

use std::task::{Context, Poll};

use http::header::{HeaderName, CONTENT_LENGTH, VARY};
use http::{HeaderMap, HeaderValue, Method, Request, Response};
use http_body::Body;
use lock_core::http::cache::{
    existing_cache_status, Answer, ForwardAs, FromOrigin, HttpCache, Plan, Served, CACHE_STATUS,
};
use lock_core::http::HeaderLines;
use tower_service::Service;
use tracing::Instrument;

use super::ResponseCacheBody;
use crate::head::{head, Headers};
use crate::origin::Origin;
use crate::response::from_plain;
use crate::ResponseFuture;

/// Serves cacheable requests through the response cache and calls the inner service on a
/// miss; built by [`ResponseCacheLayer`](super::ResponseCacheLayer).
///
/// ```
/// use std::convert::Infallible;
/// use http::{Request, Response};
/// use lock_core::cache::Cache;
/// use lock_tower::ResponseCacheLayer;
/// use tower::{service_fn, Layer, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let inner = service_fn(|_req: Request<String>| async {
///     let response = Response::builder().header("cache-control", "max-age=60");
///     Ok::<_, Infallible>(response.body(String::from("hello")).unwrap())
/// });
/// let layer = ResponseCacheLayer::builder(Cache::memory("doc").unwrap()).build().unwrap();
/// let service = layer.layer(inner); // still `Error = Infallible`
/// let response = service.oneshot(Request::new(String::new())).await.unwrap();
/// assert_eq!(response.headers()["cache-status"], "lock-core; fwd=miss; fwd-status=200; stored");
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ResponseCacheService<S> {
    inner: S,
    cache: HttpCache,
}

impl<S> ResponseCacheService<S> {
    pub(crate) fn new(inner: S, cache: HttpCache) -> Self {
        Self { inner, cache }
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for ResponseCacheService<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ReqBody: Send + 'static,
    ResBody: Body + Send + 'static,
    ResBody::Data: Send,
    ResBody::Error: Send,
{
    type Response = Response<ResponseCacheBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let span = tracing::debug_span!(
            "response_cache",
            method = %request.method(),
            path = request.uri().path(),
            cache_status = tracing::field::Empty,
        );
        // The service that was polled ready is the one to call; a clone takes its place.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let plan = self.cache.plan(&head(&request));
        match plan {
            Plan::Bypass(bypass) => {
                let response = inner.call(request);
                ResponseFuture::new(
                    async move {
                        let answer = response.await;
                        bypass.record(crate::status::status_of(&answer));
                        let (mut parts, body) = answer?.into_parts();
                        let headers = HeaderLines(Headers(&parts.headers));
                        let (cache_status, vary) = bypass.answer_headers(&headers);
                        set_cache_status(&mut parts.headers, &cache_status);
                        set_vary(&mut parts.headers, vary.as_deref());
                        Ok(Response::from_parts(
                            parts,
                            ResponseCacheBody::untouched(body),
                        ))
                    }
                    .instrument(span),
                )
            }
            Plan::Cache(call) => {
                let origin = move |forward_as: ForwardAs| async move {
                    let mut request = request;
                    if forward_as == ForwardAs::Get {
                        *request.method_mut() = Method::GET;
                    }
                    inner.call(request).await.map(Origin::new)
                };
                ResponseFuture::new(
                    async move {
                        match call.serve(origin).await {
                            Served::Answer(answer) => Ok(answer_response(answer)),
                            Served::Origin(from) => Ok(origin_response(from)),
                            Served::Error(error) => Err(error),
                        }
                    }
                    .instrument(span),
                )
            }
        }
    }
}

/// Replaces the response's `Vary` lines with lock-core's merged one, if it made one.
fn set_vary(headers: &mut HeaderMap, value: Option<&str>) {
    // Made of the response's own members (kept when not printable ASCII) and header names.
    if let Some(value) = value.and_then(|value| HeaderValue::from_str(value).ok()) {
        headers.insert(VARY, value);
    }
}

/// The response's own `Cache-Status` lines, joined.
fn existing(headers: &HeaderMap) -> Option<String> {
    existing_cache_status(&HeaderLines(Headers(headers)))
}

fn set_cache_status(headers: &mut HeaderMap, value: &str) {
    // Built from printable ASCII only (lock-core's `CacheStatusHeader`).
    if let Ok(value) = HeaderValue::from_str(value) {
        headers.insert(HeaderName::from_static(CACHE_STATUS), value);
    }
}

fn answer_response<B: Body>(answer: Answer) -> Response<ResponseCacheBody<B>> {
    let head_only = answer.head_only;
    from_plain(answer.response).map(|body| {
        // A `HEAD`: the headers (`content-length` the `GET`'s) without the body.
        ResponseCacheBody::full(if head_only { Vec::new() } else { body })
    })
}

fn origin_response<B>(from: FromOrigin<Origin<B>>) -> Response<ResponseCacheBody<B>>
where
    B: Body,
{
    let value = from.cache_status_value(existing(&from.response.parts.headers).as_deref());
    let vary = from.vary_value().map(str::to_owned);
    tracing::Span::current().record("cache_status", from.cache_status_member());
    let FromOrigin {
        response,
        prefix,
        complete,
        head_only,
        ..
    } = from;
    let Origin {
        mut parts,
        body,
        ended,
        error,
        trailers,
        ..
    } = response;
    set_cache_status(&mut parts.headers, &value);
    set_vary(&mut parts.headers, vary.as_deref());
    let body = if head_only {
        if complete && !parts.headers.contains_key(CONTENT_LENGTH) {
            parts
                .headers
                .insert(CONTENT_LENGTH, HeaderValue::from(prefix.len()));
        }
        ResponseCacheBody::full(Vec::new())
    } else {
        let rest = (!ended && error.is_none()).then_some(body);
        ResponseCacheBody::resumed(prefix, error, rest, trailers)
    };
    Response::from_parts(parts, body)
}
