//! One request through the cache on actix-web.
//!
//! The request is consumed by calling the handler, and neither it nor the handler's future is
//! `Send`, while the cache's computation must be `Send` (it may run in a background task).
//! So the request's future runs two halves side by side:
//! - **serving** runs lock-core's [`CacheCall::serve`] with an "origin" that only *asks* for
//!   the handler to be called (a `Send` message) and reads the response over a channel;
//! - **driving** owns the request: it waits until the call is asked for (and then calls the
//!   handler, passes on the head, and hands out body chunks until the computation is done
//!   with them) or let go of unused; then it answers as serving says, with the request, or,
//!   once the handler was called, with the handler's response and its request.

use std::error::Error as StdError;
use std::future::poll_fn;
use std::pin::Pin;
use std::rc::Rc;

use actix_web::body::{BodySize, MessageBody};
use actix_web::dev::{Service, ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::Error;
use bytes::Bytes;
use lock_core::http::cache::{Answer, BodyFailed, CacheCall, ForwardAs, HttpCache, Served};
use tokio::sync::{mpsc, oneshot};

use super::origin::{ActixOrigin, Ask, HandlerFailed};
use super::transform::{
    answer_response, existing, internal_response, set_cache_status, set_vary, Headers,
};
use super::ResponseCacheBody;

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
    mut request: ServiceRequest,
    calls: oneshot::Receiver<Call>,
    finished: oneshot::Receiver<Finish>,
    cache: HttpCache,
) -> Answered<B>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    let Ok(Call { forward_as, reply }) = calls.await else {
        // The handler was not called for this request (a hit, or another request's
        // response): answer with what the cache made.
        let response = match finished.await {
            Ok(Finish::Answer(answer)) => answer_response(answer),
            _ => internal_response(),
        };
        return Ok(request.into_response(response));
    };
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
    let (mut head, body) = response.into_parts();
    let mut body = Reading::new(body);
    body.hand_out(asked).await;
    let (member, vary) = match finished.await {
        Ok(Finish::Origin(member, vary)) => (member, vary),
        // A stale hit whose refresh took this request's call: the refreshed response it is.
        Ok(Finish::Answer(answer)) if answer.yields_to_refresh() => (
            cache.refreshed_cache_status(status),
            cache.rules().vary_value(&Headers(head.headers())),
        ),
        Ok(Finish::Answer(answer)) => {
            return Ok(ServiceResponse::new(request, answer_response(answer)));
        }
        Ok(Finish::Failed) | Err(_) => {
            return Ok(ServiceResponse::new(request, internal_response()));
        }
    };
    let value = existing(head.headers())
        .map(|existing| format!("{existing}, {member}"))
        .unwrap_or(member);
    set_cache_status(head.headers_mut(), &value);
    set_vary(head.headers_mut(), vary.as_deref());
    let body = body.into_body();
    Ok(ServiceResponse::new(request, head.set_body(body)))
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
