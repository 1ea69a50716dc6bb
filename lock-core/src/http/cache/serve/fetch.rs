//! The computation's call of the application: what becomes of its response (stored and
//! shared, handed to its own request only, or a failure shared with the waiting requests),
//! and what the primitive is told.

use std::future::Future;
use std::time::Duration;

use super::super::origin::{read_body, ReadBody};
use super::super::{
    ForwardAs, HttpCache, NotStored, OriginResponse, RequestDecision, ResponseDecision,
};
use super::{lock, take, CacheCall, Slot};
use crate::cache::computed::{Compute, Computed, Failure};
use crate::results::StoredResponse;

/// What the computation gives the primitive.
pub(super) type Fetched = Result<Computed, Failure<OriginFailed>>;

/// What this request's computation leaves for the request itself.
pub(super) enum Leader<R, E> {
    /// Read whole and stored (or handed to the primitive to store); `body` is all of it.
    Stored { response: R, body: Vec<u8> },
    /// Not stored, for `detail`; `prefix` is what was read of its body, all of it when
    /// `complete`.
    Passed {
        response: R,
        prefix: Vec<u8>,
        complete: bool,
        detail: &'static str,
    },
    /// `only-if-cached` on a miss: the application was not called.
    NotForwarded,
    /// The application failed.
    Failed(E),
}

/// Why the computation failed, as the primitive sees it (the response or error itself goes
/// through the leader slot; what the waiting requests replay goes with the failure).
#[derive(Debug, thiserror::Error)]
pub(super) enum OriginFailed {
    #[error("the application failed")]
    Error,
    #[error("the application answered {0}")]
    Status(u16),
    #[error("the application's response body failed")]
    Body,
    #[error("the application was already called for this request")]
    Gone,
}

/// The statuses that are failures rather than answers (RFC 5861's, for `stale-if-error`):
/// shared with the waiting requests and remembered for the negative TTL, unless stored.
const FAILURES: [u16; 4] = [500, 502, 503, 504];

impl CacheCall {
    /// The computation handed to the primitive.
    pub(super) fn computation<O, Fut, R, E>(
        &self,
        slot: Slot<O>,
        side: Slot<Leader<R, E>>,
    ) -> Compute<OriginFailed>
    where
        O: FnOnce(ForwardAs) -> Fut + Send + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: OriginResponse,
        E: Send + 'static,
    {
        let http = self.http.clone();
        let decision = self.decision.clone();
        let forward_as = if self.head() {
            ForwardAs::Get
        } else {
            ForwardAs::AsSent
        };
        let only_if_cached = matches!(&decision, RequestDecision::Lookup(l) if l.only_if_cached);
        Box::new(move || {
            Box::pin(async move {
                if only_if_cached {
                    *lock(&side) = Some(Leader::NotForwarded);
                    // Says nothing about the key: no pass-through mark.
                    return Ok(Computed::Unshared {
                        value: Vec::new(),
                        mark: false,
                    });
                }
                let Some(origin) = take(&slot) else {
                    return Err(Failure::Alone(OriginFailed::Gone));
                };
                let (leader, computed): (_, Fetched) =
                    fetch(&http, &decision, origin, forward_as).await;
                *lock(&side) = Some(leader);
                computed
            })
        })
    }
}

/// Calls the application and decides what becomes of its response: the leader slot's
/// content, and what the primitive stores and shares.
pub(super) async fn fetch<O, Fut, R, E>(
    http: &HttpCache,
    decision: &RequestDecision,
    origin: O,
    forward_as: ForwardAs,
) -> (Leader<R, E>, Fetched)
where
    O: FnOnce(ForwardAs) -> Fut,
    Fut: Future<Output = Result<R, E>>,
    R: OriginResponse,
{
    let not_shared = || {
        Ok(Computed::Unshared {
            value: Vec::new(),
            mark: true,
        })
    };
    let mut response = match origin(forward_as).await {
        Ok(response) => response,
        // An error is not a response: the waiting requests cannot replay it.
        Err(error) => {
            return (
                Leader::Failed(error),
                Err(Failure::User(OriginFailed::Error)),
            )
        }
    };
    let status = response.status();
    let rules = http.rules();
    let store = match rules.decide_response(status, &response, decision) {
        ResponseDecision::Store(store) => store,
        ResponseDecision::DontStore(_) if FAILURES.contains(&status) => {
            return failing(http, response).await;
        }
        ResponseDecision::DontStore(reason) => {
            let detail = not_stored_detail(&reason);
            let leader = Leader::Passed {
                response,
                prefix: Vec::new(),
                complete: false,
                detail,
            };
            return (leader, not_shared());
        }
    };
    let passed = |response, prefix, complete, detail| Leader::Passed {
        response,
        prefix,
        complete,
        detail,
    };
    match read_body(&mut response, rules.max_body()).await {
        ReadBody::Complete(body) => {
            let stored = StoredResponse {
                status,
                headers: store.headers,
                body,
                initial_age: store.initial_age,
                fresh: store.freshness.fresh,
            };
            let bytes = stored.encode();
            if bytes.len() > http.max_value_bytes() {
                // The body fits the rules but not with its headers in the cache's value limit.
                let leader = passed(response, stored.body, true, "too-large");
                return (leader, not_shared());
            }
            let body = stored.body;
            (
                Leader::Stored { response, body },
                Ok(Computed::Value(bytes, store.freshness)),
            )
        }
        ReadBody::TooLarge(prefix) => {
            let leader = passed(response, prefix, false, "too-large");
            (leader, not_shared())
        }
        ReadBody::Failed(prefix) => {
            let leader = passed(response, prefix, false, "body-failed");
            (leader, Err(Failure::User(OriginFailed::Body)))
        }
    }
}

/// A failing response: read (up to the rules' largest body) so the waiting requests can
/// replay it, status, replayable headers and body; one whose body is larger or fails is a
/// failure they cannot replay.
async fn failing<R: OriginResponse, E>(
    http: &HttpCache,
    mut response: R,
) -> (Leader<R, E>, Fetched) {
    let status = response.status();
    let rules = http.rules();
    let passed = |response, prefix, complete, detail| Leader::Passed {
        response,
        prefix,
        complete,
        detail,
    };
    match read_body(&mut response, rules.max_body()).await {
        ReadBody::Complete(body) => {
            let replayed = StoredResponse {
                status,
                headers: rules.replayed(&response),
                body,
                initial_age: Duration::ZERO,
                fresh: rules.negative_ttl(),
            };
            let shared = replayed.encode();
            let failure = if shared.len() > http.max_value_bytes() {
                Failure::User(OriginFailed::Status(status))
            } else {
                Failure::Replayable {
                    error: OriginFailed::Status(status),
                    shared,
                }
            };
            (
                passed(response, replayed.body, true, "status"),
                Err(failure),
            )
        }
        ReadBody::TooLarge(prefix) => (
            passed(response, prefix, false, "status"),
            Err(Failure::User(OriginFailed::Status(status))),
        ),
        ReadBody::Failed(prefix) => (
            passed(response, prefix, false, "body-failed"),
            Err(Failure::User(OriginFailed::Body)),
        ),
    }
}

/// A short name for `Cache-Status` `detail`.
fn not_stored_detail(reason: &NotStored) -> &'static str {
    match reason {
        NotStored::Bypassed => "bypass",
        NotStored::Status(_) => "status",
        NotStored::NoStore => "no-store",
        NotStored::Private => "private",
        NotStored::NoCache => "no-cache",
        NotStored::Authorization => "authorization",
        NotStored::VaryStar => "vary-star",
        NotStored::VaryNotKeyed(_) => "vary",
        NotStored::BadContentLength => "content-length",
        NotStored::TooLarge { .. } => "too-large",
        NotStored::SetCookie => "set-cookie",
        NotStored::NoFreshness => "no-freshness",
        NotStored::Personal => "personal",
        NotStored::InvalidFreshness => "invalid-freshness",
        NotStored::Expires => "expires",
        NotStored::AlreadyStale => "already-stale",
    }
}
