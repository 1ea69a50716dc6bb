//! What the product service answers over HTTP, decided once for both frameworks.

use lock_core::cache::{CacheError, CacheStatus, Cached};
use lock_core::http::{problem_body, KeyedLockOptions, Rejection, PROBLEM_JSON};

use super::input::{BadInput, BAD_INPUT};
use super::origin::{OriginError, Product};

/// The response header that says how the cache produced the answer (`hit`, `computed`,
/// `collapsed`, `stale`, ...; see [`status_name`]).
pub const CACHE_STATUS_HEADER: &str = "x-cache-status";

/// The problem type of a 503 when the origin failed and no stale value could stand in.
pub const ORIGIN_UNAVAILABLE: &str = "urn:stampede:origin-unavailable";

/// An HTTP answer: status, content type, body, and the headers the apps add.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProductAnswer {
    /// The status.
    pub status: u16,
    /// `application/json` or `application/problem+json`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
    /// The [`CACHE_STATUS_HEADER`] value, when the cache was asked.
    pub cache_status: Option<&'static str>,
    /// `Retry-After` seconds.
    pub retry_after: Option<u64>,
}

impl ProductAnswer {
    /// A 200 with `body` as JSON.
    #[must_use]
    pub fn json(body: &serde_json::Value) -> Self {
        Self {
            status: 200,
            content_type: "application/json",
            body: body.to_string().into_bytes(),
            cache_status: None,
            retry_after: None,
        }
    }

    /// The headers to send besides `content-type`.
    #[must_use]
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        if let Some(status) = self.cache_status {
            headers.push((CACHE_STATUS_HEADER, status.to_owned()));
        }
        if let Some(secs) = self.retry_after {
            headers.push(("retry-after", secs.to_string()));
        }
        headers
    }

    /// A 400 for `bad`.
    #[must_use]
    pub fn bad_input(bad: &BadInput) -> Self {
        problem(
            400,
            BAD_INPUT,
            "Bad input",
            &bad.detail,
            &[("input", bad.input)],
        )
    }

    /// The answer to one cache call for a product.
    #[must_use]
    pub fn from_cache(outcome: &Result<Cached<Product>, CacheError<OriginError>>) -> Self {
        match outcome {
            Ok(cached) => Self {
                cache_status: Some(status_name(cached.status)),
                ..Self::json(&serde_json::to_value(&cached.value).unwrap_or_default())
            },
            Err(CacheError::Compute(error)) => origin_unavailable(&error.to_string()),
            Err(CacheError::Shared(message)) => origin_unavailable(message),
            Err(CacheError::WaitTimedOut(waited)) => origin_unavailable(&format!(
                "waited {} ms for another request to read the product",
                waited.as_millis()
            )),
            // The lock's own mapping: an unreachable backend is a 503 (with fail-open, the
            // default, the cache does not get here), bad input a 400.
            Err(CacheError::Lock(error)) => {
                let rejection = Rejection::from_error(error, &KeyedLockOptions::new());
                Self {
                    status: rejection.status,
                    content_type: PROBLEM_JSON,
                    body: rejection.body,
                    cache_status: None,
                    retry_after: rejection.retry_after,
                }
            }
            Err(error) => problem(
                500,
                "urn:stampede:cache-error",
                "Cache error",
                &error.to_string(),
                &[],
            ),
        }
    }
}

/// The [`CACHE_STATUS_HEADER`] value of a cache status.
#[must_use]
pub fn status_name(status: CacheStatus) -> &'static str {
    match status {
        CacheStatus::Hit => "hit",
        CacheStatus::Computed => "computed",
        CacheStatus::Collapsed => "collapsed",
        CacheStatus::Stale => "stale",
        CacheStatus::StaleIfError => "stale-if-error",
        CacheStatus::FailOpen => "fail-open",
        CacheStatus::WaitTimedOut => "wait-timed-out",
        _ => "other",
    }
}

fn origin_unavailable(detail: &str) -> ProductAnswer {
    ProductAnswer {
        retry_after: Some(1),
        ..problem(
            503,
            ORIGIN_UNAVAILABLE,
            "Product database unavailable",
            detail,
            &[],
        )
    }
}

fn problem(
    status: u16,
    type_uri: &str,
    title: &str,
    detail: &str,
    extra: &[(&str, &str)],
) -> ProductAnswer {
    ProductAnswer {
        status,
        content_type: PROBLEM_JSON,
        body: problem_body(type_uri, title, status, detail, extra),
        cache_status: None,
        retry_after: None,
    }
}
