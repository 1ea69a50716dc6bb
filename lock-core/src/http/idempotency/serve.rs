//! The steps every adapter takes around its inner service: begin (replay, refuse or run),
//! then finish with the handler's response (keep it, or give the key back), or answer for a
//! lost claim.

use super::IdempotencyRules;
use crate::http::{PlainResponse, Rejection, RejectionKind};
use crate::idempotency::stats::Counters;
use crate::idempotency::{Begin, Claim, Completed, Completion, Fingerprint, Idempotency};
use crate::results::StoredResponse;
use crate::{LockError, LostReason};

/// The header marking a replayed response.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// A response the layer gives instead of running the handler, or in place of its response:
/// the [`PlainResponse`] to send, and what happened.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reply {
    /// What to send.
    pub response: PlainResponse,
    /// What happened, for tracing and metrics.
    pub outcome: Outcome,
}

/// What an idempotent request came to, as the layers record it in their tracing span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The handler ran and its response was kept.
    Executed,
    /// The handler ran; its response is not kept (a 5xx, say) and the key was given back.
    NotStored,
    /// The handler ran but its response could not be stored (the claim is left to expire).
    StoreFailed,
    /// A completed request's response, replayed.
    Replayed,
    /// 409: the first request with the key is still running.
    InFlight,
    /// 422: the key was used with another request.
    KeyReused,
    /// 400, 401 or 413: a missing or invalid key, no principal to scope the key by, or a body
    /// over the limit; nothing ran.
    Rejected,
    /// 503: the store or the lock backend failed; nothing ran.
    Unavailable,
    /// 503: the claim's lease was lost; the handler was cancelled.
    Lost,
    /// A newer claim took the key over while the handler ran; its answer was given instead.
    Superseded,
}

impl Outcome {
    /// A short name for logs and metric labels.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Executed => "executed",
            Self::NotStored => "not_stored",
            Self::StoreFailed => "store_failed",
            Self::Replayed => "replayed",
            Self::InFlight => "in_flight",
            Self::KeyReused => "key_reused",
            Self::Rejected => "rejected",
            Self::Unavailable => "unavailable",
            Self::Lost => "lost",
            Self::Superseded => "superseded",
        }
    }
}

/// Counts one answer of the idempotency middleware, and records its outcome on the current
/// span (the adapters' `idempotency` span has an `outcome` field).
fn record(status: Option<u16>, outcome: Outcome) {
    tracing::Span::current().record("outcome", outcome.as_str());
    crate::http::metrics::http_response(
        crate::http::metrics::LAYER_IDEMPOTENCY,
        status,
        outcome.as_str(),
    );
}

impl Reply {
    /// Counts this reply as an answer of the idempotency middleware.
    fn record(&self) {
        record(Some(self.response.status), self.outcome);
    }

    fn recorded(self) -> Self {
        self.record();
        self
    }

    /// A rejection (problem+json) as a reply.
    #[must_use]
    pub fn from_rejection(rejection: &Rejection, outcome: Outcome) -> Self {
        Self {
            response: rejection.response.clone(),
            outcome,
        }
    }

    /// A completed request's response, with `Idempotent-Replayed: true`.
    #[must_use]
    pub fn replay(completed: Completed) -> Self {
        Self {
            response: PlainResponse::from(completed.response)
                .with_header(IDEMPOTENT_REPLAYED, "true"),
            outcome: Outcome::Replayed,
        }
    }
}

/// How a request starts: run the handler under this claim, or answer with a reply.
#[derive(Debug)]
pub enum Started {
    /// Run the handler; then [`finish`] (or, when the claim is lost first, [`lost`]).
    Run(Claim),
    /// Answer with this; nothing runs.
    Answer(Reply),
}

/// Begins a request with `key` in `scope`: a replay, a 409 (or, with
/// [`InFlight::Wait`](crate::idempotency::InFlight::Wait), a replay after waiting), a 422,
/// a 400 for a key the store cannot take, a 503 when the store or lock backend fails (fail
/// closed: nothing runs), or a claim to run under.
pub async fn begin(
    idempotency: &Idempotency,
    rules: &IdempotencyRules,
    scope: &str,
    key: &str,
    fingerprint: Fingerprint,
) -> Started {
    let rejection = |kind, status, retry, title: &str, detail: &str| {
        Rejection::new(kind, status, retry, title, detail, None)
    };
    let retry = Some(rules.retry_after_secs());
    let started = match idempotency
        .begin(scope, key, fingerprint, rules.in_flight)
        .await
    {
        Ok(Begin::Run(claim)) => Started::Run(claim),
        Ok(Begin::Replay(completed)) => Started::Answer(Reply::replay(completed)),
        Ok(Begin::InFlight) => Started::Answer(Reply::from_rejection(
            &rejection(
                RejectionKind::InFlight,
                409,
                retry,
                "Request in progress",
                "a request with this idempotency key is still being processed; retry later",
            ),
            Outcome::InFlight,
        )),
        Ok(Begin::Mismatch) => Started::Answer(Reply::from_rejection(
            &rejection(
                RejectionKind::KeyReused,
                422,
                None,
                "Idempotency key reused",
                "this idempotency key was used with another request (method, path, headers or body)",
            ),
            Outcome::KeyReused,
        )),
        Err(error @ LockError::InvalidKey { .. }) => Started::Answer(Reply::from_rejection(
            &rejection(
                RejectionKind::BadKey,
                400,
                None,
                "Invalid idempotency key",
                &error.to_string(),
            ),
            Outcome::Rejected,
        )),
        Err(error) => {
            // An unreachable backend is reported once by its breaker, which then refuses at
            // once; each request in the outage is DEBUG, and told when the probe is due.
            if error.is_unavailable() {
                tracing::debug!(error = %error.with_causes(), "idempotency store or lock backend unavailable; nothing ran");
            } else {
                tracing::error!(error = %error.with_causes(), "idempotency store or lock backend failed; nothing ran");
            }
            let retry_after = error
                .circuit_open()
                .map_or(rules.retry_after_secs(), |open| open.retry_after_secs());
            Started::Answer(unavailable(retry_after, Outcome::Unavailable))
        }
    };
    if let Started::Answer(reply) = &started {
        reply.record();
    }
    started
}

/// The reply to a request the [`Plan`](super::Plan) refused (a missing or invalid key, 400),
/// counted in the [stats](Idempotency::stats) as rejected.
#[must_use]
pub fn reject(idempotency: &Idempotency, rejection: &Rejection) -> Reply {
    Counters::add(&idempotency.inner.counters.rejected);
    Reply::from_rejection(rejection, Outcome::Rejected).recorded()
}

/// The reply to a request whose body is over [`IdempotencyRules::max_body_bytes`]: 413,
/// nothing runs.
#[must_use]
pub fn request_too_large(idempotency: &Idempotency, rules: &IdempotencyRules) -> Reply {
    Counters::add(&idempotency.inner.counters.rejected);
    Reply::from_rejection(
        &Rejection::new(
            RejectionKind::TooLarge,
            413,
            None,
            "Request too large",
            &format!(
                "an idempotent request's body may hold at most {} bytes",
                rules.max_body_bytes
            ),
            None,
        ),
        Outcome::Rejected,
    )
    .recorded()
}

/// What to send once the handler answered.
#[derive(Debug)]
pub enum Finished {
    /// Send the handler's response as it is.
    Send(Outcome),
    /// Send this instead (the answer of a newer claim, or the problem kept for a response too
    /// large to keep).
    Replace(Reply),
}

/// Finishes a claimed request with the handler's response: kept for replay when
/// [`IdempotencyRules::should_store`] says so (only under the claim's current fencing token),
/// otherwise the key is given back for the next request. `body` is `None` when it was over
/// the limit: a response to keep is then replaced by a 500 problem, kept as the answer to
/// every duplicate (the handler ran; running it again is what this layer prevents).
pub async fn finish(
    claim: Claim,
    rules: &IdempotencyRules,
    status: u16,
    headers: &[(String, Vec<u8>)],
    body: Option<Vec<u8>>,
) -> Finished {
    let finished = finish_unrecorded(claim, rules, status, headers, body).await;
    match &finished {
        Finished::Send(outcome) => record(Some(status), *outcome),
        Finished::Replace(reply) => reply.record(),
    }
    finished
}

async fn finish_unrecorded(
    claim: Claim,
    rules: &IdempotencyRules,
    status: u16,
    headers: &[(String, Vec<u8>)],
    body: Option<Vec<u8>>,
) -> Finished {
    if !rules.should_store(status) {
        let outcome = release(claim).await;
        return match body {
            Some(_) => Finished::Send(outcome),
            None => Finished::Replace(too_large_response(rules, status, outcome)),
        };
    }
    let (response, replaced) = match body {
        Some(body) => (
            StoredResponse::new(status, crate::idempotency::replayable(headers), body),
            None,
        ),
        None => {
            let reply = too_large_response(rules, status, Outcome::Executed);
            (StoredResponse::from(reply.response.clone()), Some(reply))
        }
    };
    match claim.complete(response).await {
        Ok(Completion::Stored(_)) => match replaced {
            Some(reply) => Finished::Replace(reply),
            None => Finished::Send(Outcome::Executed),
        },
        Ok(Completion::Superseded(Some(completed))) => {
            let mut reply = Reply::replay(completed);
            reply.outcome = Outcome::Superseded;
            Finished::Replace(reply)
        }
        Ok(Completion::Superseded(None)) => {
            let mut reply = in_flight(rules);
            reply.outcome = Outcome::Superseded;
            Finished::Replace(reply)
        }
        // Reported (tracing, stats); the handler's response goes to the client, whose retry
        // after the claim expires runs again: never recorded as done without its response.
        Err(_) => match replaced {
            Some(mut reply) => {
                reply.outcome = Outcome::StoreFailed;
                Finished::Replace(reply)
            }
            None => Finished::Send(Outcome::StoreFailed),
        },
    }
}

/// Gives the key back when the handler left no answer to keep (it failed, or its response
/// broke off while it was read): the next request with the key runs. A failed give-back is
/// logged; the claim's lease frees the key then. The outcome to record:
/// [`Outcome::NotStored`], counted in
/// [`HTTP_RESPONSES_TOTAL`](crate::metrics::HTTP_RESPONSES_TOTAL) with `status`: the
/// status of the response that broke off, or `None` for a handler that failed
/// ([`NO_STATUS`](crate::metrics::NO_STATUS)).
pub async fn give_back(claim: Claim, status: Option<u16>) -> Outcome {
    let outcome = release(claim).await;
    record(status, outcome);
    outcome
}

async fn release(claim: Claim) -> Outcome {
    match claim.release().await {
        Ok(()) => {}
        // The backend's breaker reports an outage once.
        Err(error) if error.is_unavailable() => {
            tracing::debug!(error = %error.with_causes(), "giving back an idempotency key failed; its lease frees it");
        }
        Err(error) => {
            tracing::warn!(error = %error.with_causes(), "giving back an idempotency key failed; its lease frees it");
        }
    }
    Outcome::NotStored
}

/// The reply to a handled request whose body could not be read (the connection failed, say):
/// 400, nothing runs. Not counted in the [stats](Idempotency::stats): the request never
/// reached the idempotency decisions.
#[must_use]
pub fn unreadable_request() -> Reply {
    Reply::from_rejection(&Rejection::unreadable_body(), Outcome::Rejected).recorded()
}

/// The reply sent in place of a response that [`finish`] said to send but the adapter no
/// longer holds whole (its body was over the limit, and its start is gone): a 500 problem,
/// with the `outcome` [`finish`] gave. lock-core replaces every response it was not given
/// whole, so this is the adapters' guard, not a path they take. Not counted again in
/// [`HTTP_RESPONSES_TOTAL`](crate::metrics::HTTP_RESPONSES_TOTAL): [`finish`] counted it.
#[must_use]
pub fn response_not_sent(outcome: Outcome) -> Reply {
    Reply::from_rejection(
        &Rejection::new(
            RejectionKind::Internal,
            500,
            None,
            "Internal Server Error",
            "the response could not be sent",
            None,
        ),
        outcome,
    )
}

/// The reply when the claim's lease was lost while the handler ran (the adapter dropped the
/// handler): 503; the key is given back in the background.
#[must_use]
pub fn lost(claim: Claim, rules: &IdempotencyRules, reason: LostReason) -> Reply {
    tracing::warn!(fence = %claim.info().fencing_token, %reason, "idempotency claim lost while the handler ran; cancelled it");
    Counters::add(&claim.idempotency().inner.counters.lost);
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            if let Err(error) = claim.release().await {
                tracing::debug!(error = %error.with_causes(), "giving back a lost idempotency claim failed");
            }
        });
    }
    unavailable(rules.retry_after_secs(), Outcome::Lost).recorded()
}

fn in_flight(rules: &IdempotencyRules) -> Reply {
    Reply::from_rejection(
        &Rejection::new(
            RejectionKind::InFlight,
            409,
            Some(rules.retry_after_secs()),
            "Request in progress",
            "a request with this idempotency key is still being processed; retry later",
            None,
        ),
        Outcome::InFlight,
    )
}

/// A generic 503 with `Retry-After: retry_after` (seconds): the detail went to tracing, not to
/// the client.
fn unavailable(retry_after: u64, outcome: Outcome) -> Reply {
    Reply::from_rejection(
        &Rejection::new(
            RejectionKind::Unavailable,
            503,
            Some(retry_after),
            "Service unavailable",
            "the request could not be made idempotent right now; nothing was done, retry later",
            None,
        ),
        outcome,
    )
}

fn too_large_response(rules: &IdempotencyRules, status: u16, outcome: Outcome) -> Reply {
    let detail = format!(
        "the response (status {status}) was larger than the {} bytes an idempotent response may hold",
        rules.max_body_bytes
    );
    Reply {
        response: PlainResponse::problem(
            500,
            "urn:distributed-lock:idempotency:response-too-large",
            "Response too large",
            &detail,
            &[],
        ),
        outcome,
    }
}
