//! What a request answers when the primitive gave it no value: another request's failure
//! (replayed, or a `502` problem when it cannot be), its own computation's failure (the
//! application's own response or error), or the cache's own problems.

use std::future::Future;
use std::time::SystemTime;

use super::super::{
    Answer, CacheStatusHeader, Forward, ForwardAs, OriginResponse, Served, StoredResponse,
};
use super::fetch::{Leader, OriginFailed};
use super::{take, CacheCall, Slot};
use crate::cache::computed::{CallError, SharedFailure};
use crate::cache::{CacheError, CacheStatus};

impl CacheCall {
    /// The primitive gave no value.
    pub(super) async fn failed<O, Fut, R, E>(
        &self,
        error: CallError<OriginFailed>,
        side: &Slot<Leader<R, E>>,
        slot: &Slot<O>,
        fwd: Forward,
    ) -> Served<R, E>
    where
        O: FnOnce(ForwardAs) -> Fut + Send + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: OriginResponse,
        E: Send + 'static,
    {
        let key = self.key.as_str();
        let member = |detail: &str| {
            CacheStatusHeader::forward(fwd)
                .detail(detail)
                .header_value(self.http.rules().cache_name())
        };
        let error = match error {
            CallError::Shared(failure) => {
                return Served::Answer(self.replay_failure(&failure, fwd))
            }
            CallError::Own { error, .. } | CallError::Cache(error) => error,
        };
        match error {
            CacheError::Compute(_) | CacheError::TooLarge { .. } => match take(side) {
                Some(leader) => self.leader(leader, CacheStatus::Uncacheable, fwd),
                None => {
                    tracing::error!(key, %error, "response cache: a computation ended without a response");
                    Served::Answer(self.internal(&member("internal")))
                }
            },
            CacheError::Shared(message) => {
                tracing::debug!(key, %message, "the request this one waited on failed; calling the application");
                self.alone(slot, fwd, Some("shared-failure")).await
            }
            CacheError::WaitTimedOut(waited) => {
                tracing::info!(
                    key,
                    ?waited,
                    "response cache: the wait for another request's response ran out"
                );
                Served::Answer(Answer::problem(
                    504,
                    "cache-timeout",
                    "Gateway Timeout",
                    "the response being computed for this request did not arrive in time",
                    member("wait-timed-out"),
                ))
            }
            CacheError::Lock(error) if error.is_unavailable() => {
                tracing::warn!(key, error = %error.with_causes(), "response cache backend unavailable (fail closed)");
                Served::Answer(Answer::problem(
                    503,
                    "cache-unavailable",
                    "Service Unavailable",
                    "the response cache is unavailable; try again shortly",
                    member("unavailable"),
                ))
            }
            CacheError::Lock(error) => {
                tracing::error!(key, error = %error.with_causes(), "response cache failed");
                Served::Answer(self.internal(&member("internal")))
            }
            CacheError::Decode(error) => {
                tracing::error!(key, %error, "response cache failed");
                Served::Answer(self.internal(&member("internal")))
            }
        }
    }

    /// Another request's failure as this request's answer: the failing response it replays,
    /// or, for a failure that cannot be replayed (an error of the application, a body that
    /// failed or was too large), a `502` problem. `Cache-Status`: `hit; detail=negative`
    /// when it was remembered, else `fwd=miss; fwd-status=503; collapsed` (`detail=origin-error`
    /// for the problem).
    pub(super) fn replay_failure(&self, failure: &SharedFailure, fwd: Forward) -> Answer {
        let name = self.http.rules().cache_name();
        let now = SystemTime::now();
        let left = failure.remembered_for(now);
        let remembered = || {
            let seconds = i64::try_from(left.as_secs()).unwrap_or(i64::MAX);
            CacheStatusHeader::hit().ttl(seconds).detail("negative")
        };
        let in_store = now.duration_since(failure.failed_at).unwrap_or_default();
        match StoredResponse::decode(&failure.payload) {
            Ok(stored) => {
                let header = if failure.remembered {
                    remembered()
                } else {
                    CacheStatusHeader::forward(fwd)
                        .fwd_status(stored.status)
                        .collapsed()
                };
                self.answer(stored, in_store, header.header_value(name), None)
            }
            Err(_) => {
                let header = if failure.remembered {
                    remembered()
                } else {
                    CacheStatusHeader::forward(fwd)
                        .collapsed()
                        .detail("origin-error")
                };
                let mut answer = Answer::problem(
                    502,
                    "origin-failed",
                    "Bad Gateway",
                    "the application failed to answer a request for this resource; try again shortly",
                    header.header_value(name),
                );
                // Until the failure is forgotten, in whole seconds (at least 1).
                let retry = left.as_secs() + u64::from(left.subsec_nanos() > 0);
                answer.headers.push((
                    "retry-after".to_owned(),
                    retry.max(1).to_string().into_bytes(),
                ));
                answer
            }
        }
    }
}
