//! What the product service answers over HTTP, decided once for both frameworks.

use lock_core::http::{problem_body, PROBLEM_JSON};

use super::input::{BadInput, BAD_INPUT};

/// The problem type of a 503 when the origin failed (and no stale product could stand in).
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
            retry_after: None,
        }
    }

    /// The headers to send besides `content-type`.
    #[must_use]
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        self.retry_after
            .map(|secs| ("retry-after", secs.to_string()))
            .into_iter()
            .collect()
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

    /// A 503 when the origin failed: the response cache shares it with the requests waiting
    /// for it and remembers it for its negative TTL.
    #[must_use]
    pub fn origin_unavailable(detail: &str) -> Self {
        Self {
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
        retry_after: None,
    }
}
