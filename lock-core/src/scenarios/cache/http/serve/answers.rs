//! The answers a call makes itself: replays of stored responses, and its `Cache-Status`.

use std::time::{Duration, SystemTime};

use super::super::{
    age_value, Answer, CacheStatusHeader, Forward, Served, StoredResponse, CACHE_STATUS,
};
use super::CacheCall;
use crate::cache::{CacheStatus, Cached};

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
        let mut headers = stored.headers;
        headers.push((
            "age".to_owned(),
            age_value(stored.initial_age, in_store).into_bytes(),
        ));
        let member = header.ttl(ttl).header_value(self.http.rules().cache_name());
        headers.push((CACHE_STATUS.to_owned(), member.into_bytes()));
        let head_only = self.head();
        if head_only && !headers.iter().any(|(n, _)| n == "content-length") {
            let length = stored.body.len().to_string().into_bytes();
            headers.push(("content-length".to_owned(), length));
        }
        let answer = Answer {
            status: stored.status,
            headers,
            body: stored.body,
            head_only,
            outcome: Some(cached.status),
        };
        Some((answer, stored.initial_age.saturating_add(in_store)))
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
                String::from_utf8_lossy(answer.header(CACHE_STATUS).unwrap_or_default())
                    .into_owned()
            }
            Served::Origin(from) => from.cache_status_member().to_owned(),
            Served::Error(_) => "application error".to_owned(),
        };
        tracing::Span::current().record("cache_status", status.as_str());
        tracing::debug!(key = self.key.as_str(), cache_status = %status, "response cache answered");
    }
}
