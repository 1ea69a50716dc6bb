//! [`IdempotencyService`]: idempotency around one inner service.

use std::sync::Arc;
use std::task::{Context, Poll};

use http::request::Parts;
use http::{Request, Response};
use http_body::Body;
use lock_core::http::idempotency::{
    reject, Begun, HttpIdempotency, IdempotencyCall, Plan, Ran, Reply, RequestBody,
};
use tower_service::Service;
use tracing::Instrument;

use super::IdempotencyBody;
use crate::head::{head, parts_head};
use crate::origin::Origin;
use crate::read::{read, Read};
use crate::response::from_plain;
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
///     let body = format!("paid under fence {}", claim.fencing_token);
///     Ok::<_, Infallible>(Response::builder().status(201).body(body).unwrap())
/// });
/// let payments = Idempotency::memory("doc").unwrap();
/// let layer = IdempotencyLayer::builder(payments).shared_scope().build().unwrap();
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
    shared: Arc<HttpIdempotency<Parts>>,
}

impl<S> IdempotencyService<S> {
    pub(super) fn new(inner: S, shared: Arc<HttpIdempotency<Parts>>) -> Self {
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
            .field("idempotency", self.shared.idempotency())
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
        let plan = self.shared.rules().plan(&head(&request));
        let key = match plan {
            Plan::Pass => {
                let response = inner.call(request.map(IdempotencyBody::untouched));
                return ResponseFuture::new(async move {
                    Ok(response.await?.map(IdempotencyBody::untouched))
                });
            }
            Plan::Reject(rejection) => {
                let span = span(&request, None);
                let _entered = span.enter();
                let reply = reject(self.shared.idempotency(), &rejection);
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

/// Reads the body and hands the rest to lock-core's [`IdempotencyCall`]: begin, run the inner
/// service, answer.
async fn handle<S, ReqBody, ResBody>(
    shared: Arc<HttpIdempotency<Parts>>,
    mut inner: S,
    request: Request<ReqBody>,
    key: String,
) -> Result<Response<IdempotencyBody<ResBody>>, S::Error>
where
    S: Service<Request<IdempotencyBody<ReqBody>>, Response = Response<ResBody>>,
    ReqBody: Body,
    ResBody: Body + Send + 'static,
    ResBody::Data: Send,
    ResBody::Error: Send,
{
    let (idempotency, rules) = (shared.idempotency(), shared.rules());
    let (parts, body) = request.into_parts();
    // A request with no principal is refused before its body is read.
    let scope = match shared.scope(&parts) {
        Ok(scope) => scope,
        Err(reply) => return Ok(answer(reply)),
    };
    let limit = rules.max_body_bytes_limit();
    let body = match read(body, &parts.headers, limit).await {
        Read::Whole(body) => RequestBody::Whole(body.into()),
        Read::TooLarge => RequestBody::TooLarge,
        Read::Failed => RequestBody::Failed,
    };
    let call = IdempotencyCall::new(idempotency, rules, key);
    let begun = call.begin(&parts_head(&parts), &scope, body).await;
    let (running, body) = match begun {
        Begun::Run(running, body) => (running, body),
        Begun::Answer(reply) => return Ok(answer(reply)),
    };
    let mut request = Request::from_parts(parts, IdempotencyBody::full(body));
    request.extensions_mut().insert(running.info().clone());
    match running
        .run(async { inner.call(request).await.map(Origin::new) })
        .await
    {
        Ran::Send { response, read } => {
            let Origin {
                parts,
                body,
                ended,
                error,
                trailers,
                ..
            } = response;
            let rest = (!ended && error.is_none()).then_some(body);
            let body = IdempotencyBody::resumed(read, error, rest, trailers);
            Ok(Response::from_parts(parts, body))
        }
        Ran::Replace { reply, .. } | Ran::Lost(reply) => Ok(answer(reply)),
        Ran::Failed(error) => Err(error),
    }
}

/// A reply of lock-core's as a response (lock-core recorded its outcome in the span).
fn answer<B: Body>(reply: Reply) -> Response<IdempotencyBody<B>> {
    from_plain(reply.response).map(IdempotencyBody::full)
}
