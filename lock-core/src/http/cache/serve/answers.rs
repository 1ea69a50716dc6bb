//! The answers a call makes itself: replays of stored responses and of failures handed on,
//! and its `Cache-Status`.

use std::time::{Duration, SystemTime};

use super::super::{
    age_value, Answer, CacheStatusHeader, Forward, OriginResponse, Served, CACHE_STATUS,
};
use super::CacheCall;
use crate::cache::computed::SharedFailure;
use crate::cache::{CacheStatus, Cached};
use crate::http::PlainResponse;
use crate::results::StoredResponse;

impl CacheCall {
    /// A stored response as this request's answer, and its age; `None` when the stored bytes
    /// are unreadable.
    pub(super) fn replay(
        &self,
        cached: &Cached<Vec<u8>>,
        header: CacheStatusHeader,
    ) -> Option<(Answer, Duration)> {
        let stored = match StoredResponse::decode(&cached.value) {
            Ok(stored) => stored,
            Err(error) => {
                tracing::warn!(key = self.key.as_str(), %error, "ignoring an unreadable stored response");
                return None;
            }
        };
        let in_store = SystemTime::now()
            .duration_since(cached.stored_at)
            .unwrap_or_default();
        // Whole seconds of freshness left, rounded down: a response stale by a fraction of
        // a second has -1.
        let left = stored.fresh.as_millis() as i128 - in_store.as_millis() as i128;
        let ttl = i64::try_from(left.div_euclid(1000)).unwrap_or(i64::MIN);
        let age = stored.initial_age.saturating_add(in_store);
        let member = header.ttl(ttl).header_value(self.http.rules().cache_name());
        let answer = self.answer(stored, in_store, member, Some(cached.status));
        Some((answer, age))
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
                let answer = Answer::problem(
                    502,
                    "origin-failed",
                    "Bad Gateway",
                    "the application failed to answer a request for this resource; try again shortly",
                    header.header_value(name),
                );
                // Until the failure is forgotten, in whole seconds (at least 1).
                let retry = left.as_secs() + u64::from(left.subsec_nanos() > 0);
                answer.retry_after(retry.max(1))
            }
        }
    }
    /// `stored`, `in_store` for so long, as this request's answer with this cache's `member`.
    fn answer(
        &self,
        stored: StoredResponse,
        in_store: Duration,
        member: String,
        outcome: Option<CacheStatus>,
    ) -> Answer {
        let age = age_value(stored.initial_age, in_store);
        let mut response = PlainResponse::from(stored)
            .with_header("age", age)
            .with_header(CACHE_STATUS, member);
        let head_only = self.head();
        if head_only && response.header("content-length").is_none() {
            let length = response.body.len().to_string();
            response = response.with_header("content-length", length);
        }
        Answer {
            response,
            head_only,
            outcome,
        }
    }

    /// The header for `outcome`, forwarded for `fwd` where the outcome says "miss".
    pub(super) fn header(&self, outcome: CacheStatus, fwd: Forward) -> CacheStatusHeader {
        let mut header = CacheStatusHeader::from_outcome(outcome);
        if header.fwd == Some(Forward::Miss) {
            header.fwd = Some(fwd);
        }
        header
    }

    pub(super) fn internal(&self, member: &str) -> Answer {
        Answer::problem(
            500,
            "cache-internal",
            "Internal Server Error",
            "the response cache failed to answer this request",
            member.to_owned(),
        )
    }

    pub(super) fn trace<R, E>(&self, served: &Served<R, E>) {
        let status = match served {
            Served::Answer(answer) => {
                String::from_utf8_lossy(answer.response.header(CACHE_STATUS).unwrap_or_default())
                    .into_owned()
            }
            Served::Origin(from) => from.cache_status_member().to_owned(),
            Served::Error(_) => "application error".to_owned(),
        };
        tracing::Span::current().record("cache_status", status.as_str());
        tracing::debug!(key = self.key.as_str(), cache_status = %status, "response cache answered");
    }

    /// Counts this answer in [`HTTP_RESPONSES_TOTAL`](crate::metrics::HTTP_RESPONSES_TOTAL),
    /// its outcome read from the `Cache-Status` member it is sent with (so the two agree).
    pub(super) fn record<R: OriginResponse, E>(&self, served: &Served<R, E>) {
        if !cfg!(feature = "metrics") {
            return; // nothing to read the member for
        }
        let (status, member) = match served {
            // The member is the last `cache-status` line (a replayed response may carry one
            // from a cache nearer the origin before it).
            Served::Answer(answer) => (
                answer.response.status,
                answer
                    .response
                    .headers
                    .iter()
                    .rev()
                    .find(|(name, _)| name == CACHE_STATUS)
                    .map(|(_, value)| String::from_utf8_lossy(value))
                    .unwrap_or_default(),
            ),
            Served::Origin(from) => (from.response.status(), from.cache_status_member().into()),
            Served::Error(_) => {
                crate::http::metrics::http_response(
                    crate::http::metrics::LAYER_RESPONSE_CACHE,
                    None,
                    "origin_error",
                );
                return;
            }
        };
        let name = self.http.rules().cache_name();
        crate::http::metrics::http_response(
            crate::http::metrics::LAYER_RESPONSE_CACHE,
            Some(status),
            cache_status_outcome(&member, name),
        );
    }
}

/// The metric outcome of this cache's `Cache-Status` member (as
/// [`CacheStatusHeader::header_value`] writes it for cache `name`).
fn cache_status_outcome(member: &str, name: &str) -> &'static str {
    // The name as written (quoted when it is not a token), then `; `-separated parameters.
    let written = CacheStatusHeader::hit().header_value(name);
    let prefix = written.strip_suffix("; hit").unwrap_or(&written);
    let params = member.strip_prefix(prefix).unwrap_or(member);
    let (mut hit, mut fwd, mut stored, mut collapsed, mut detail) = (false, "", false, false, "");
    for param in params.split(';').map(str::trim) {
        match param.split_once('=') {
            Some(("fwd", value)) => fwd = value,
            Some(("detail", value)) => detail = value.trim_matches('"'),
            Some(_) => {}
            None if param == "hit" => hit = true,
            None if param == "stored" => stored = true,
            None if param == "collapsed" => collapsed = true,
            None => {}
        }
    }
    match (hit, fwd, detail) {
        (true, _, "stale-while-revalidate") => "stale",
        (true, _, "negative") => "negative",
        (true, ..) => "hit",
        (_, _, "stale-if-error") => "stale_if_error",
        _ if collapsed => "collapsed",
        (_, "bypass" | "method", _) => "bypass",
        (_, _, "fail-open") => "fail_open",
        (_, _, "wait-timed-out") => "wait_timed_out",
        (_, _, "only-if-cached") => "not_cached",
        (_, _, "hit-for-pass") => "pass_through",
        (_, _, "unavailable") => "unavailable",
        (_, _, "internal") => "error",
        (_, "request", _) => "refresh",
        _ if stored => "miss",
        _ => "uncacheable",
    }
}

#[cfg(test)]
mod metric_tests {
    use super::cache_status_outcome;

    #[test]
    fn outcomes_read_like_the_cache_status() {
        let cases = [
            ("lock-core; hit; ttl=30", "hit"),
            (
                "lock-core; hit; ttl=-2; detail=stale-while-revalidate",
                "stale",
            ),
            (
                "lock-core; fwd=stale; fwd-status=500; detail=stale-if-error",
                "stale_if_error",
            ),
            ("lock-core; fwd=miss; fwd-status=200; stored", "miss"),
            ("lock-core; fwd=miss; ttl=9; collapsed", "collapsed"),
            (
                "lock-core; fwd=miss; fwd-status=503; collapsed",
                "collapsed",
            ),
            ("lock-core; hit; ttl=0; detail=negative", "negative"),
            (
                "lock-core; fwd=miss; fwd-status=200; detail=hit-for-pass",
                "pass_through",
            ),
            (
                "lock-core; fwd=miss; fwd-status=200; detail=fail-open",
                "fail_open",
            ),
            (
                "lock-core; fwd=miss; detail=wait-timed-out",
                "wait_timed_out",
            ),
            ("lock-core; fwd=miss; detail=only-if-cached", "not_cached"),
            ("lock-core; fwd=request; fwd-status=200; stored", "refresh"),
            (
                "lock-core; fwd=miss; fwd-status=200; detail=uncacheable",
                "uncacheable",
            ),
        ];
        for (member, outcome) in cases {
            assert_eq!(
                cache_status_outcome(member, "lock-core"),
                outcome,
                "{member}"
            );
        }
        // A name that is not a token, with `hit` inside it, is skipped as written.
        let odd = r#""a; hit"; fwd=miss; fwd-status=200; stored"#;
        assert_eq!(cache_status_outcome(odd, "a; hit"), "miss");
    }
}
