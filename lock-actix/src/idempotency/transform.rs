//! [`Idempotency`] (the `Transform`), its builder, and [`IdempotencyMiddleware`] (the service
//! it builds).

use std::rc::Rc;
use std::sync::Arc;

use actix_web::body::{self, BodyStream, EitherBody, MessageBody};
use actix_web::dev::{Payload, Service, ServiceRequest, ServiceResponse};
use actix_web::http::header::CONTENT_LENGTH;
use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{Error, HttpMessage, HttpResponse, ResponseError};
use lock_core::http::declares_over;
use lock_core::http::idempotency::{
    reject, Begun, HttpIdempotency, HttpIdempotencyBuilder, IdempotencyCall, Plan, Ran, Reply,
    RequestBody,
};
use tracing::Instrument;

use super::response::Handled;
use crate::head::head;
use crate::response::{from_plain, status};
use crate::transform::{middleware, Chain, LocalBoxFuture};

/// Middleware that runs each request with an idempotency key once per (scope, key) across
/// every instance, and answers its duplicates with its response (see the
/// [module docs](crate::idempotency)). Named as lock-tower's `IdempotencyLayer` is, after the
/// job: the records and claims it runs on are lock-core's
/// [`Idempotency`](lock_core::idempotency::Idempotency) client.
///
/// Settings are the methods of lock-core's [`HttpIdempotencyBuilder`], shared with
/// `lock_tower::IdempotencyLayer` (those of [`IdempotencyRules`](lock_core::http::idempotency::IdempotencyRules), and the
/// [`scope`](HttpIdempotencyBuilder::scope) of a request, read from its [`ServiceRequest`]),
/// checked by [`build`](HttpIdempotencyBuilder::build):
///
/// ```
/// use std::time::Duration;
/// use actix_web::{web, App};
/// use lock_actix::Idempotency;
/// use lock_core::idempotency::InFlight;
///
/// let payments = lock_core::idempotency::Idempotency::memory("payments").unwrap();
/// let idempotent = Idempotency::builder(payments.clone())
///     .methods(["POST"])
///     .in_flight(InFlight::Wait(Duration::from_secs(5)))
///     .scope(|req: &actix_web::dev::ServiceRequest| {
///         Some(req.headers().get("x-user")?.to_str().ok()?.to_owned())
///     })
///     .build()
///     .unwrap();
/// let app = App::new().service(web::resource("/payments").wrap(idempotent).post(|| async { "paid" }));
/// # let _ = app;
/// assert!(Idempotency::builder(payments).max_body_bytes(0).build().is_err());
/// ```
#[derive(Clone)]
#[must_use]
pub struct Idempotency {
    shared: Arc<HttpIdempotency<ServiceRequest>>,
}

impl Idempotency {
    /// The middleware's settings, over `idempotency` (its records and claims: memory for one
    /// process; `lock_core::idempotency::Idempotency::builder(RedisResultStore::from_backend(&backend).await?, backend)`
    /// across instances). Default rules: [`IdempotencyRules::new`](lock_core::http::idempotency::IdempotencyRules::new); no scope until one is
    /// chosen ([`scope`](HttpIdempotencyBuilder::scope), or
    /// [`shared_scope`](HttpIdempotencyBuilder::shared_scope) for a single-tenant service):
    /// `build` refuses settings without that choice.
    pub fn builder(
        idempotency: lock_core::idempotency::Idempotency,
    ) -> HttpIdempotencyBuilder<ServiceRequest, Self> {
        HttpIdempotencyBuilder::new(idempotency)
    }

    /// What the middleware applies: its idempotency client (for its
    /// [`stats`](lock_core::idempotency::Idempotency::stats), say) and its rules.
    #[must_use]
    pub fn http_idempotency(&self) -> &HttpIdempotency<ServiceRequest> {
        &self.shared
    }
}

impl From<HttpIdempotency<ServiceRequest>> for Idempotency {
    fn from(built: HttpIdempotency<ServiceRequest>) -> Self {
        Self {
            shared: Arc::new(built),
        }
    }
}

impl std::fmt::Debug for Idempotency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Idempotency").field(&self.shared).finish()
    }
}

middleware! {
    /// The service [`Idempotency`] wraps around the rest of the chain.
    pub struct IdempotencyMiddleware<S>
    for Idempotency, answering EitherBody<B> where B: MessageBody + 'static
}

impl Idempotency {
    /// One request through the middleware ([`IdempotencyMiddleware`]'s `call`).
    fn handle<S: Chain<B>, B: MessageBody + 'static>(
        &self,
        service: &Rc<S>,
        request: ServiceRequest,
    ) -> LocalBoxFuture<Result<ServiceResponse<EitherBody<B>>, Error>> {
        let plan = self.shared.rules().plan(&head(&request));
        let key = match plan {
            Plan::Pass => {
                let response = service.call(request);
                return Box::pin(
                    async move { response.await.map(ServiceResponse::map_into_left_body) },
                );
            }
            Plan::Reject(rejection) => {
                let span = span(&request, None);
                let _entered = span.enter();
                let reply = reject(self.shared.idempotency(), &rejection);
                let response = request.into_response(answer(reply).map_into_right_body());
                return Box::pin(std::future::ready(Ok(response)));
            }
            Plan::Handle(key) => key,
        };
        let span = span(&request, Some(&key));
        Box::pin(handle(service.clone(), self.shared.clone(), request, key).instrument(span))
    }
}

/// The span of a handled request; `outcome` is recorded once known.
fn span(request: &ServiceRequest, key: Option<&str>) -> tracing::Span {
    tracing::debug_span!(
        "idempotency",
        method = %request.method(),
        path = request.path(),
        key,
        fence = tracing::field::Empty,
        outcome = tracing::field::Empty,
    )
}

/// Reads the payload and hands the rest to lock-core's [`IdempotencyCall`]: begin, run the
/// handler (with the payload put back), answer.
async fn handle<S, B>(
    service: Rc<S>,
    shared: Arc<HttpIdempotency<ServiceRequest>>,
    mut request: ServiceRequest,
    key: String,
) -> Result<ServiceResponse<EitherBody<B>>, Error>
where
    S: Chain<B>,
    B: MessageBody,
{
    let (idempotency, rules) = (shared.idempotency(), shared.rules());
    // A request with no principal is refused before its payload is read.
    let scope = match shared.scope(&request) {
        Ok(scope) => scope,
        Err(reply) => return Ok(request.into_response(answer(reply).map_into_right_body())),
    };
    let limit = rules.max_body_bytes_limit();
    let declared = request.headers().get(CONTENT_LENGTH).map(|v| v.as_bytes());
    let body = if declares_over(declared, limit) {
        RequestBody::TooLarge
    } else {
        let payload = BodyStream::new(request.take_payload());
        match body::to_bytes_limited(payload, limit).await {
            Ok(Ok(body)) => RequestBody::Whole(body.into()),
            Err(_exceeded) => RequestBody::TooLarge,
            Ok(Err(_)) => RequestBody::Failed,
        }
    };
    let call = IdempotencyCall::new(idempotency, rules, key);
    let begun = call.begin(&head(&request), &scope, body).await;
    let (running, body) = match begun {
        Begun::Run(running, body) => (running, body),
        Begun::Answer(reply) => {
            return Ok(request.into_response(answer(reply).map_into_right_body()));
        }
    };
    request.set_payload(Payload::from(Bytes::from(body)));
    request.extensions_mut().insert(running.info().clone());
    match running
        .run(async { service.call(request).await.map(Handled::new) })
        .await
    {
        Ran::Send { response, read } => Ok(response.into_response(read).map_into_right_body()),
        Ran::Replace { response, reply } => Ok(ServiceResponse::new(
            response.into_request(),
            answer(reply).map_into_right_body(),
        )),
        // The request went to the cancelled handler (actix routing forbids keeping a clone
        // of it), so the 503 travels as an error that renders the same problem.
        Ran::Lost(reply) => Err(Replied(reply).into()),
        Ran::Failed(error) => Err(error),
    }
}

/// A reply of lock-core's as a response (lock-core recorded its outcome in the span).
fn answer(reply: Reply) -> HttpResponse {
    from_plain(reply.response).map_into_boxed_body()
}

/// A reply raised as an error: the lost-claim 503, after the request was handed on.
#[derive(Debug)]
struct Replied(Reply);

impl std::fmt::Display for Replied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "idempotency: {} ({})",
            self.0.outcome.as_str(),
            self.0.response.status
        )
    }
}

impl ResponseError for Replied {
    fn status_code(&self) -> StatusCode {
        status(self.0.response.status)
    }

    fn error_response(&self) -> HttpResponse {
        answer(self.0.clone())
    }
}
