//! One idempotent request, from its plan to its answer, written once for every adapter: the
//! adapter reads the request body, [`begin`](IdempotencyCall::begin)s, calls its handler with
//! the body through [`run`](Running::run), and turns what comes back into its framework's
//! response. Every decision in between (the 413 and 400 for a body too large or unreadable,
//! the replay, 409, 422 and 503, racing the claim's loss, reading the handler's response up to
//! the limit, keeping it or giving the key back) is made here.
//!
//! Outcomes and fencing tokens are recorded on the current tracing span's `outcome` and
//! `fence` fields, when it has them (the adapters' `idempotency` span does).

use std::future::Future;

use super::handler_response::HandlerResponse;
use super::serve::{
    begin, finish, give_back, lost, request_too_large, response_not_sent, unreadable_request,
    Finished, Reply, Started,
};
use super::IdempotencyRules;
use crate::http::cache::origin::{read_body, ReadBody};
use crate::http::keyed::race_lost;
use crate::http::{declares_over, RequestHead};
use crate::idempotency::{Claim, ClaimInfo, Idempotency};

/// What an adapter read of a request's body, up to
/// [`max_body_bytes_limit`](IdempotencyRules::max_body_bytes_limit).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestBody {
    /// The whole body.
    Whole(Vec<u8>),
    /// More than the limit (declared by `Content-Length`, or found while reading).
    TooLarge,
    /// The body broke off (the connection failed, say).
    Failed,
}

/// A request the idempotency layer handles, under the key its
/// [`Plan::Handle`](super::Plan::Handle) gave.
///
/// ```
/// use lock_core::http::cache::{BodyFailed, HeaderPairs};
/// use lock_core::http::idempotency::{
///     Begun, HandlerResponse, IdempotencyCall, IdempotencyRules, Plan, RequestBody, Ran,
/// };
/// use lock_core::http::RequestHead;
/// use lock_core::idempotency::Idempotency;
///
/// struct Head;
/// impl RequestHead for Head {
///     fn method(&self) -> &str { "POST" }
///     fn path(&self) -> &str { "/payments" }
///     fn query(&self) -> Option<&str> { None }
///     fn header(&self, name: &str) -> Option<&[u8]> { (name == "idempotency-key").then_some(b"k1") }
/// }
///
/// /// The handler's response, as the adapter wraps it.
/// struct Paid(bool);
/// impl HeaderPairs for Paid {
///     fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
///         each("content-type", b"text/plain");
///     }
/// }
/// impl HandlerResponse for Paid {
///     fn status(&self) -> u16 { 201 }
///     async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, BodyFailed> {
///         Ok(std::mem::replace(&mut self.0, false).then(|| b"paid".to_vec()))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let payments = Idempotency::memory("payments")?;
/// let rules = IdempotencyRules::new().validate()?;
/// for replayed in [false, true] {
///     let Plan::Handle(key) = rules.plan(&Head) else { unreachable!() };
///     let call = IdempotencyCall::new(&payments, &rules, key);
///     match call.begin(&Head, "alice", RequestBody::Whole(b"{\"cents\":100}".to_vec())).await {
///         Begun::Run(running, body) => {
///             assert!(!replayed);
///             // The adapter rebuilds its request with `body` and `running.info()`.
///             assert_eq!(body, b"{\"cents\":100}");
///             let handler = async { Ok::<_, std::convert::Infallible>(Paid(true)) };
///             let Ran::Send { read, .. } = running.run(handler).await else { unreachable!() };
///             assert_eq!(read, b"paid");
///         }
///         Begun::Answer(reply) => {
///             assert!(replayed);
///             assert_eq!((reply.response.status, reply.response.body.as_slice()), (201, &b"paid"[..]));
///         }
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "an idempotency call does nothing until `begin` is awaited"]
pub struct IdempotencyCall<'a> {
    idempotency: &'a Idempotency,
    rules: &'a IdempotencyRules,
    key: String,
}

/// How a request starts: run the handler (with the request body read, to hand it back), or
/// answer with a reply (a replay, or a refusal); nothing runs.
#[derive(Debug)]
#[must_use = "a request that begun must be run or answered"]
pub enum Begun<'a> {
    /// Run the handler with this body, through [`Running::run`].
    Run(Running<'a>, Vec<u8>),
    /// Answer with this.
    Answer(Reply),
}

/// A request claimed under its key: its handler is to run, once.
#[derive(Debug)]
#[must_use = "a claimed request must be run; dropping it gives the key back"]
pub struct Running<'a> {
    claim: Claim,
    rules: &'a IdempotencyRules,
}

/// What to send once the handler ran.
#[derive(Debug)]
#[must_use]
pub enum Ran<R, E> {
    /// Send the handler's response with `read` as its body: all of it when the response was
    /// read whole (and kept, or not to be kept), or what came before the body broke off
    /// (then `response` holds that failure, to pass on after `read`, and the key was given
    /// back). Nothing else of the body is left: a body over the limit is always replaced.
    Send {
        /// The handler's response.
        response: R,
        /// Its body bytes read so far.
        read: Vec<u8>,
    },
    /// Send `reply` instead of the handler's response (a newer claim's answer, or the problem
    /// kept for a response too large to keep); `response` is handed back for what the
    /// adapter needs of it (its request, on actix-web).
    Replace {
        /// The handler's response, not to be sent.
        response: R,
        /// What to send.
        reply: Reply,
    },
    /// The handler failed; the key was given back, so the next request with it runs.
    Failed(E),
    /// The claim's lease was lost while the handler ran: the handler was dropped, and this
    /// 503 is the answer (the key is given back in the background).
    Lost(Reply),
}

impl<'a> IdempotencyCall<'a> {
    /// A request with `key` (from [`IdempotencyRules::plan`]) on `idempotency`'s records.
    pub fn new(idempotency: &'a Idempotency, rules: &'a IdempotencyRules, key: String) -> Self {
        Self {
            idempotency,
            rules,
            key,
        }
    }

    /// Begins the request whose head is `head`, in `scope` (the principal's, or `""`), with
    /// the `body` the adapter read: a body too large (413) or unreadable (400) is refused;
    /// otherwise the request is fingerprinted and its key claimed, replayed or refused
    /// ([`begin`]).
    pub async fn begin(
        self,
        head: &(impl RequestHead + ?Sized),
        scope: &str,
        body: RequestBody,
    ) -> Begun<'a> {
        let body = match body {
            RequestBody::Whole(body) => body,
            RequestBody::TooLarge => {
                return Begun::Answer(request_too_large(self.idempotency, self.rules))
            }
            RequestBody::Failed => return Begun::Answer(unreadable_request()),
        };
        let fingerprint = self.rules.fingerprint(head, &body);
        match begin(self.idempotency, self.rules, scope, &self.key, fingerprint).await {
            Started::Run(claim) => {
                tracing::Span::current().record("fence", claim.info().fencing_token.get());
                let running = Running {
                    claim,
                    rules: self.rules,
                };
                Begun::Run(running, body)
            }
            Started::Answer(reply) => Begun::Answer(reply),
        }
    }
}

impl Running<'_> {
    /// The claim's scope, key and fencing token, for the handler (the adapters put it in the
    /// request's extensions).
    #[must_use]
    pub fn info(&self) -> &ClaimInfo {
        self.claim.info()
    }

    /// Runs `handler` racing the claim's loss, reads its response up to the limit, and keeps
    /// it for replay when the rules say so ([`finish`]), or gives the key back.
    pub async fn run<R, E>(self, handler: impl Future<Output = Result<R, E>>) -> Ran<R, E>
    where
        R: HandlerResponse,
    {
        let Self { claim, rules } = self;
        let mut response = match race_lost(handler, claim.lost()).await {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => {
                // Not an answer to keep: the next request with the key runs.
                give_back(claim, None).await;
                return Ran::Failed(error);
            }
            Err(reason) => return Ran::Lost(lost(claim, rules, reason)),
        };
        let status = response.status();
        let mut headers = Vec::new();
        response.for_each_header(&mut |name, value| {
            headers.push((name.to_owned(), value.to_vec()));
        });
        let limit = rules.max_body_bytes_limit();
        let declared = headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
            .map(|(_, value)| value.as_slice());
        // A `Content-Length` over the limit is refused before a byte is read.
        let read = if declares_over(declared, limit) {
            ReadBody::TooLarge(Vec::new())
        } else {
            read_body(&mut response, limit as u64).await
        };
        match read {
            ReadBody::Complete(body) => {
                match finish(claim, rules, status, &headers, Some(body.clone())).await {
                    Finished::Send(_) => Ran::Send {
                        response,
                        read: body,
                    },
                    Finished::Replace(reply) => Ran::Replace { response, reply },
                }
            }
            ReadBody::TooLarge(_) => {
                let reply = match finish(claim, rules, status, &headers, None).await {
                    Finished::Replace(reply) => reply,
                    // lock-core replaces every response it was not given whole; the body's
                    // start is gone, so nothing else could be sent.
                    Finished::Send(outcome) => response_not_sent(outcome),
                };
                Ran::Replace { response, reply }
            }
            ReadBody::Failed(read) => {
                // The handler's response broke off: not an answer to keep (as a handler that
                // failed); it goes on, as broken as it was, and the next request with the
                // key runs.
                give_back(claim, Some(status)).await;
                Ran::Send { response, read }
            }
        }
    }
}
