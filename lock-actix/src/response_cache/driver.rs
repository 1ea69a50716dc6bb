//! One request through the cache on actix-web.
//!
//! The request is consumed by calling the handler, and neither it nor the handler's future is
//! `Send`, while the cache's computation must be `Send` (it may run in a background task).
//! So the request's future runs two halves side by side:
//! - **serving** runs lock-core's [`CacheCall::serve`] with an "origin" that only *asks* for
//!   the handler to be called (a `Send` message) and reads the response over a channel;
//! - **driving** owns the request: it waits until the call is asked for or serving has
//!   decided, whichever comes first.
//!   - Asked first: this request's own computation. It calls the handler, passes on the head,
//!     hands out body chunks until the computation is done with them, and answers as serving
//!     then says, with the handler's response and its request.
//!   - Decided first: the answer goes out at once. If the call may still be asked for (the
//!     background refresh a stale hit started), the request goes to a task of the worker's
//!     own, which calls the handler for the refresh when asked and ends when the computation
//!     is done with the response or lets go of the call; the answer carries a clone of the
//!     request's `HttpRequest`. The task calls the handler only once the server has let go of
//!     the answer's head (actix-web's router needs the request alone), which it does as it
//!     sends it.
//!
//! Where no `!Send` task can be spawned (no actix `System` on the thread, and the request's
//! future not a task: driven by a plain tokio runtime's `block_on`, see `can_spawn_local`), a
//! request whose call a background refresh took waits for it and is answered with the
//! refreshed response, as [`Answer::yields_to_refresh`] describes.

use std::error::Error as StdError;
use std::future::poll_fn;
use std::pin::Pin;
use std::rc::Rc;

use actix_web::body::{BodySize, MessageBody};
use actix_web::dev::{Service, ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::{Error, HttpRequest, HttpResponse};
use bytes::Bytes;
use lock_core::http::cache::{Answer, BodyFailed, CacheCall, ForwardAs, HttpCache, Served};
use lock_core::http::HeaderLines;
use tokio::sync::oneshot::error::TryRecvError;
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

use super::origin::{ActixOrigin, Ask, HandlerFailed};
use super::transform::{answer_response, existing, internal_response, set_cache_status, set_vary};
use super::ResponseCacheBody;
use crate::head::Headers;

/// The computation asks for the handler to be called.
struct Call {
    forward_as: ForwardAs,
    reply: oneshot::Sender<Result<ActixOrigin, HandlerFailed>>,
}

/// What serving decided.
enum Finish {
    Answer(Answer),
    /// The handler's response, with this `Cache-Status` member and this `Vary` (`None`: its
    /// own).
    Origin(String, Option<String>),
    Failed,
}

/// Which came first to the driving half.
enum First {
    Decided(Result<Finish, oneshot::error::RecvError>),
    Asked(Result<Call, oneshot::error::RecvError>),
}

type Answered<B> = Result<ServiceResponse<ResponseCacheBody<B>>, Error>;

pub(crate) async fn serve<S, B>(
    service: Rc<S>,
    request: ServiceRequest,
    call: CacheCall,
    cache: HttpCache,
) -> Answered<B>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    let (ask_call, calls) = oneshot::channel::<Call>();
    let origin = move |forward_as: ForwardAs| async move {
        let (reply, response) = oneshot::channel();
        ask_call
            .send(Call { forward_as, reply })
            .map_err(|_| HandlerFailed)?;
        response.await.map_err(|_| HandlerFailed)?
    };
    let (finish, finished) = oneshot::channel();
    let serving = async move {
        let decided = match call.serve(origin).await {
            Served::Answer(answer) => Finish::Answer(answer),
            // Dropping the response ends the body pump: the computation is done with it.
            Served::Origin(from) => Finish::Origin(
                from.cache_status_member().to_owned(),
                from.vary_value().map(str::to_owned),
            ),
            Served::Error(HandlerFailed) => Finish::Failed,
        };
        finish.send(decided).ok();
    };
    let driving = drive(service, request, calls, finished, cache);
    let ((), answered) = tokio::join!(serving, driving);
    answered
}

async fn drive<S, B>(
    service: Rc<S>,
    request: ServiceRequest,
    mut calls: oneshot::Receiver<Call>,
    mut finished: oneshot::Receiver<Finish>,
    cache: HttpCache,
) -> Answered<B>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    // Serving's decision first: a call asked for by the time it is there is a background
    // refresh's (on the worker's one thread, a refresh runs only once serving has answered),
    // which must not hold this request up.
    let first = tokio::select! {
        biased;
        decided = &mut finished => First::Decided(decided),
        asked = &mut calls => First::Asked(asked),
    };
    match first {
        First::Decided(Ok(Finish::Answer(answer))) => {
            answer_first(service, request, calls, answer, cache).await
        }
        // The handler's response or failure, decided before the handler was called: a state
        // the flow never reaches.
        First::Decided(_) => Ok(request.into_response(internal_response())),
        // The handler was not called for this request (a hit, or another request's
        // response): answer with what the cache made.
        First::Asked(Err(_)) => {
            let response = match finished.await {
                Ok(Finish::Answer(answer)) => answer_response(answer),
                _ => internal_response(),
            };
            Ok(request.into_response(response))
        }
        // This request's computation (or a refresh's that asked from another thread before
        // serving had answered: see `respond`).
        First::Asked(Ok(call)) => {
            let called = call_handler(&*service, request, call).await?;
            Ok(called.respond(finished.await.ok(), &cache))
        }
    }
}

/// Serving answered before the handler was called. A background refresh may still ask for the
/// call: then the request goes to a task of the worker's own that answers that ask, and this
/// request is answered at once with a clone of its `HttpRequest`.
async fn answer_first<S, B>(
    service: Rc<S>,
    request: ServiceRequest,
    mut calls: oneshot::Receiver<Call>,
    answer: Answer,
    cache: HttpCache,
) -> Answered<B>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    let asked = match calls.try_recv() {
        Ok(call) => Some(call),
        Err(TryRecvError::Empty) => None,
        // Nobody will ask: the request is the answer's alone.
        Err(TryRecvError::Closed) => return Ok(request.into_response(answer_response(answer))),
    };
    if !can_spawn_local() {
        // Nothing to spawn the request's task on: wait for the ask here.
        let call = match asked {
            Some(call) => call,
            None => match calls.await {
                Ok(call) => call,
                Err(_) => return Ok(request.into_response(answer_response(answer))),
            },
        };
        let called = call_handler(&*service, request, call).await?;
        return Ok(called.respond(Some(Finish::Answer(answer)), &cache));
    }
    let mut response = answer_response(answer);
    let (sent, released) = oneshot::channel();
    response.extensions_mut().insert(Sent { _released: sent });
    let answered = ServiceResponse::new(request.request().clone(), response);
    let span = tracing::debug_span!("response_cache_refresh");
    actix_web::rt::spawn(refresh_call(service, request, asked, calls, released).instrument(span));
    Ok(answered)
}

/// Whether a `!Send` task can be spawned here (`actix_web::rt::spawn`, which panics outside a
/// `LocalSet` or `LocalRuntime`; tokio cannot be asked): on a thread of an actix `System`
/// (whose arbiters and `#[actix_web::test]` run in a `LocalSet`), or inside a task, as this
/// `!Send` request's future can only be a task of a `LocalSet` or `LocalRuntime` (an actix-web
/// server's connections are tasks on its workers, with an actix `System` or, started from a
/// plain tokio runtime, on a `LocalRuntime` each). Not when the future is driven by a
/// `block_on` of a plain runtime, as `actix_web::test` under `#[tokio::test]` does.
fn can_spawn_local() -> bool {
    actix_web::rt::System::is_registered() || tokio::task::try_id().is_some()
}

/// Dropped with the head of the answer that carries a clone of the request: by then the server
/// has let go of that clone too (it drops both as it sends the head).
struct Sent {
    _released: oneshot::Sender<()>,
}

/// The task that keeps a request answered before its call was asked for: calls the handler if
/// a refresh asks, once the answer's head is gone, and hands the refresh the response; ends
/// when the computation is done with it, lets go of the call, or never asks.
async fn refresh_call<S, B>(
    service: Rc<S>,
    request: ServiceRequest,
    asked: Option<Call>,
    calls: oneshot::Receiver<Call>,
    released: oneshot::Receiver<()>,
) where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    let mut call = match asked {
        Some(call) => call,
        None => match calls.await {
            Ok(call) => call,
            Err(_) => return, // this instance's refresh did not take the call
        },
    };
    tokio::select! {
        _ = released => {}
        () = call.reply.closed() => return,
    }
    if let Err(error) = call_handler(&*service, request, call).await {
        tracing::debug!(%error, "response cache: the handler failed in a background refresh");
    }
}

/// The handler's response once the computation is done reading it.
struct Called<B> {
    request: HttpRequest,
    head: HttpResponse<()>,
    body: Reading<B>,
    status: u16,
}

/// Calls the handler for the computation, passes on the head and hands out body chunks until
/// the computation is done with them; the handler's error goes to the computation as
/// [`HandlerFailed`] and is returned.
async fn call_handler<S, B>(
    service: &S,
    mut request: ServiceRequest,
    call: Call,
) -> Result<Called<B>, Error>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    let Call { forward_as, reply } = call;
    if forward_as == ForwardAs::Get {
        request.head_mut().method = Method::GET;
    }
    let response = match service.call(request).await {
        Ok(response) => response,
        Err(error) => {
            reply.send(Err(HandlerFailed)).ok();
            return Err(error);
        }
    };
    let status = response.status().as_u16();
    let (asks, asked) = mpsc::channel(1);
    let length = match response.response().body().size() {
        BodySize::Sized(length) => Some(length),
        _ => None,
    };
    let origin = ActixOrigin::new(status, response.headers(), length, asks);
    reply.send(Ok(origin)).ok();
    let (request, response) = response.into_parts();
    let (head, body) = response.into_parts();
    let mut body = Reading::new(body);
    body.hand_out(asked).await;
    Ok(Called {
        request,
        head,
        body,
        status,
    })
}

impl<B: MessageBody + 'static> Called<B> {
    /// The answer to the request whose handler this was, as serving `decided`.
    fn respond(
        self,
        decided: Option<Finish>,
        cache: &HttpCache,
    ) -> ServiceResponse<ResponseCacheBody<B>> {
        let Self {
            request,
            mut head,
            body,
            status,
        } = self;
        let (member, vary) = match decided {
            Some(Finish::Origin(member, vary)) => (member, vary),
            // A stale hit whose refresh took this request's call before it was answered (where
            // no task can be spawned, or a refresh on another thread that asked before serving
            // answered): the refreshed response it is.
            Some(Finish::Answer(answer)) if answer.yields_to_refresh() => (
                cache.refreshed_cache_status(status),
                cache
                    .rules()
                    .vary_value(&HeaderLines(Headers(head.headers()))),
            ),
            Some(Finish::Answer(answer)) => {
                return ServiceResponse::new(request, answer_response(answer));
            }
            Some(Finish::Failed) | None => {
                return ServiceResponse::new(request, internal_response());
            }
        };
        let value = existing(head.headers())
            .map(|existing| format!("{existing}, {member}"))
            .unwrap_or(member);
        set_cache_status(head.headers_mut(), &value);
        set_vary(head.headers_mut(), vary.as_deref());
        let body = body.into_body();
        ServiceResponse::new(request, head.set_body(body))
    }
}

/// The handler's body as the request's future reads it for the computation, keeping what it
/// read so the client still gets all of it.
struct Reading<B> {
    body: Pin<Box<B>>,
    read: Vec<Bytes>,
    ended: bool,
    error: Option<Box<dyn StdError>>,
}

impl<B: MessageBody> Reading<B> {
    fn new(body: B) -> Self {
        Self {
            body: Box::pin(body),
            read: Vec::new(),
            ended: false,
            error: None,
        }
    }

    /// Answers the computation's asks until it drops its side.
    async fn hand_out(&mut self, mut asked: mpsc::Receiver<Ask>) {
        while let Some(ask) = asked.recv().await {
            let chunk = self.next().await;
            ask.send(chunk).ok();
        }
    }

    async fn next(&mut self) -> Result<Option<Vec<u8>>, BodyFailed> {
        if self.error.is_some() {
            return Err(BodyFailed);
        }
        if self.ended {
            return Ok(None);
        }
        match poll_fn(|cx| self.body.as_mut().poll_next(cx)).await {
            None => {
                self.ended = true;
                Ok(None)
            }
            Some(Ok(chunk)) => {
                let copy = chunk.to_vec();
                self.read.push(chunk);
                Ok(Some(copy))
            }
            Some(Err(error)) => {
                self.error = Some(error.into());
                Err(BodyFailed)
            }
        }
    }

    fn into_body(self) -> ResponseCacheBody<B> {
        let rest = (!self.ended && self.error.is_none()).then_some(self.body);
        ResponseCacheBody::resumed(self.read, self.error, rest)
    }
}
