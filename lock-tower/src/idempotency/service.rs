//! [`IdempotencyService`]: idempotency around one inner service.

use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::HeaderName;
use http::request::Parts;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body::Body;
use lock_core::http::idempotency::{
    begin, finish, give_back, lost, reject, request_too_large, response_not_sent,
    unreadable_request, Finished, Outcome, Plan, Reply, Started,
};
use lock_core::http::keyed::race_lost;
use lock_core::http::RequestHead;
use tower_service::Service;
use tracing::Instrument;

use super::layer::Shared;
use super::IdempotencyBody;
use crate::extract::Head;
use crate::read::{declared_length, read, Read};
use crate::ResponseFuture;

/// Runs requests with an idempotency key once per (scope, key) and replays their responses;
/// built by [`IdempotencyLayer`](super::IdempotencyLayer).
///
/// The inner service receives the request's body as an [`IdempotencyBody`] (read whole for
/// a handled request, untouched otherwise) and a
/// [`ClaimInfo`](lock_core::idempotency::ClaimInfo) in the extensions of a handled request;
/// the service's error type is the inner service's, so an `Infallible` service stays
/// `Infallible`: everything the layer answers itself is a response.
///
/// ```
/// use std::convert::Infallible;
/// use http::{Request, Response};
/// use http_body_util::BodyExt;
/// use lock_core::idempotency::{ClaimInfo, Idempotency};
/// use lock_tower::{IdempotencyBody, IdempotencyLayer};
/// use tower::{service_fn, Layer, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let inner = service_fn(|request: Request<IdempotencyBody<String>>| async move {
///     let claim = request.extensions().get::<ClaimInfo>().unwrap().clone();
///     let body = format!("paid under fence {}", claim.fence);
///     Ok::<_, Infallible>(Response::builder().status(201).body(body).unwrap())
/// });
/// let layer = IdempotencyLayer::builder(Idempotency::memory("doc").unwrap()).build().unwrap();
/// let service = layer.layer(inner); // still `Error = Infallible`
/// let pay = || Request::post("/pay").header("idempotency-key", "k-1").body(String::from("100")).unwrap();
/// let first = service.clone().oneshot(pay()).await.unwrap();
/// assert_eq!(first.status(), 201);
/// let again = service.clone().oneshot(pay()).await.unwrap();
/// assert_eq!(again.headers()["idempotent-replayed"], "true");
/// let body = again.into_body().collect().await.unwrap().to_bytes();
/// assert_eq!(body, "paid under fence 1");
/// let missing = service.oneshot(Request::post("/pay").body(String::new()).unwrap()).await.unwrap();
/// assert_eq!(missing.status(), 400);
/// # }
/// ```
#[derive(Clone)]
pub struct IdempotencyService<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S> IdempotencyService<S> {
    pub(super) fn new(inner: S, shared: Arc<Shared>) -> Self {
        Self { inner, shared }
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: std::fmt::Debug> std::fmt::Debug for IdempotencyService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotencyService")
            .field("inner", &self.inner)
            .field("idempotency", &self.shared.idempotency)
            .finish_non_exhaustive()
    }
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for IdempotencyService<S>
where
    S: Service<Request<IdempotencyBody<ReqBody>>, Response = Response<ResBody>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ReqBody: Body + Send + 'static,
    ReqBody::Data: Send,
    ReqBody::Error: Send,
    ResBody: Body + Send + 'static,
    ResBody::Data: Send,
    ResBody::Error: Send,
{
    type Response = Response<IdempotencyBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        // The service that was polled ready is the one to call; a clone takes its place.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let key = match self.shared.rules.plan(&Head(&request)) {
            Plan::Pass => {
                let response = inner.call(request.map(IdempotencyBody::untouched));
                return ResponseFuture::new(async move {
                    Ok(response.await?.map(IdempotencyBody::untouched))
                });
            }
            Plan::Reject(rejection) => {
                let span = span(&request, None);
                let _entered = span.enter();
                let reply = reject(&self.shared.idempotency, &rejection);
                return ResponseFuture::new(std::future::ready(Ok(answer(reply))));
            }
            Plan::Handle(key) => key,
        };
        let span = span(&request, Some(&key));
        ResponseFuture::new(handle(self.shared.clone(), inner, request, key).instrument(span))
    }
}

/// The span of a handled request; `outcome` is recorded once known.
fn span<B>(request: &Request<B>, key: Option<&str>) -> tracing::Span {
    tracing::debug_span!(
        "idempotency",
        method = %request.method(),
        path = request.uri().path(),
        key,
        fence = tracing::field::Empty,
        outcome = tracing::field::Empty,
    )
}

fn record(outcome: Outcome) {
    tracing::Span::current().record("outcome", outcome.as_str());
}

/// Read the body, begin, run the inner service racing the claim's loss, finish.
async fn handle<S, ReqBody, ResBody>(
    shared: Arc<Shared>,
    mut inner: S,
    request: Request<ReqBody>,
    key: String,
) -> Result<Response<IdempotencyBody<ResBody>>, S::Error>
where
    S: Service<Request<IdempotencyBody<ReqBody>>, Response = Response<ResBody>>,
    ReqBody: Body,
    ResBody: Body,
{
    let Shared {
        idempotency,
        rules,
        scope,
    } = &*shared;
    let limit = rules.max_body_bytes_limit();
    let (parts, body) = request.into_parts();
    let body = match read(body, declared_length(&parts.headers), limit).await {
        Read::Whole(body, _) => body,
        Read::TooLarge => return Ok(answer(request_too_large(idempotency, rules))),
        Read::Failed(..) => return Ok(answer(unreadable_request())),
    };
    let fingerprint = rules.fingerprint(&PartsHead(&parts), &body);
    let scope = scope
        .as_ref()
        .and_then(|scope| scope(&parts))
        .unwrap_or_default();
    let claim = match begin(idempotency, rules, &scope, &key, fingerprint).await {
        Started::Run(claim) => claim,
        Started::Answer(reply) => return Ok(answer(reply)),
    };
    tracing::Span::current().record("fence", claim.info().fence.get());
    let mut request = Request::from_parts(parts, IdempotencyBody::full(body));
    request.extensions_mut().insert(claim.info().clone());
    let response = match race_lost(inner.call(request), claim.lost()).await {
        Ok(Ok(response)) => response,
        Ok(Err(error)) => {
            // Not an answer to keep: the next request with the key runs.
            record(give_back(claim).await);
            return Err(error);
        }
        Err(reason) => return Ok(answer(lost(claim, rules, reason))),
    };
    let (parts, body) = response.into_parts();
    let status = parts.status.as_u16();
    let headers: Vec<(String, Vec<u8>)> = parts
        .headers
        .iter()
        .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec()))
        .collect();
    match read(body, declared_length(&parts.headers), limit).await {
        Read::Whole(body, trailers) => {
            match finish(claim, rules, status, &headers, Some(body.to_vec())).await {
                Finished::Send(outcome) => {
                    record(outcome);
                    let body = IdempotencyBody::read(body, None, trailers);
                    Ok(Response::from_parts(parts, body))
                }
                Finished::Replace(reply) => Ok(answer(reply)),
            }
        }
        Read::TooLarge => match finish(claim, rules, status, &headers, None).await {
            Finished::Replace(reply) => Ok(answer(reply)),
            // lock-core replaces every response it was not given whole; the body's start is
            // gone, so nothing else could be sent.
            Finished::Send(outcome) => Ok(answer(response_not_sent(outcome))),
        },
        Read::Failed(body, error) => {
            // The handler's response broke off: not an answer to keep (as a handler that
            // failed); it goes on, as broken as it was, and the next request with the key runs.
            record(give_back(claim).await);
            let body = IdempotencyBody::read(body, Some(error), None);
            Ok(Response::from_parts(parts, body))
        }
    }
}

/// A request head without its body, seen through lock-core's [`RequestHead`].
struct PartsHead<'a>(&'a Parts);

impl RequestHead for PartsHead<'_> {
    fn method(&self) -> &str {
        self.0.method.as_str()
    }

    fn path(&self) -> &str {
        self.0.uri.path()
    }

    fn query(&self) -> Option<&str> {
        self.0.uri.query()
    }

    fn header(&self, name: &str) -> Option<&[u8]> {
        self.0.headers.get(name).map(HeaderValue::as_bytes)
    }

    fn header_count(&self, name: &str) -> usize {
        self.0.headers.get_all(name).iter().count()
    }
}

/// A reply of lock-core's as a response; its outcome recorded in the span.
fn answer<B: Body>(reply: Reply) -> Response<IdempotencyBody<B>> {
    record(reply.outcome);
    let mut response = Response::new(IdempotencyBody::full(reply.body));
    *response.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    for (name, value) in reply.headers {
        // Kept from a valid response, or made by lock-core: always valid.
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(&value),
        ) {
            headers.append(name, value);
        }
    }
    response
}
