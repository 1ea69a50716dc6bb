//! An HTTP answer as the product and payments services decide it, once for both frameworks:
//! status, content type, body and the headers the apps add. Each service adds its own
//! answers (`payments::answer`, `product::answer`).

use lock_core::http::{problem_body, PROBLEM_JSON};

/// An HTTP answer: status, content type, body, and the headers the apps add.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpAnswer {
    /// The status.
    pub status: u16,
    /// `application/json` or `application/problem+json`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
    /// Headers besides `content-type`.
    pub headers: Vec<(&'static str, String)>,
}

impl HttpAnswer {
    /// A `status` with `body` as JSON.
    #[must_use]
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Self {
            status,
            content_type: "application/json",
            body: body.to_string().into_bytes(),
            headers: Vec::new(),
        }
    }

    /// An `application/problem+json` answer (RFC 9457).
    #[must_use]
    pub fn problem(status: u16, type_uri: &str, title: &str, detail: &str) -> Self {
        Self::problem_body(status, problem_body(type_uri, title, status, detail, &[]))
    }

    /// A 400 of the problem type `type_uri` for a bad `input` (`detail` says why), which the
    /// problem names in its member `input`.
    #[must_use]
    pub fn bad_input(type_uri: &str, input: &str, detail: &str) -> Self {
        let body = problem_body(type_uri, "Bad input", 400, detail, &[("input", input)]);
        Self::problem_body(400, body)
    }

    /// A `status` with `body` as `application/problem+json`.
    fn problem_body(status: u16, body: Vec<u8>) -> Self {
        Self {
            status,
            content_type: PROBLEM_JSON,
            body,
            headers: Vec::new(),
        }
    }

    /// This answer with the header `name: value` too.
    #[must_use]
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
}
