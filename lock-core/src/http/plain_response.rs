//! [`PlainResponse`]: what the HTTP layer hands an adapter to send, whichever layer made it.

use crate::results::StoredResponse;

use super::{problem_body, PROBLEM_JSON};

/// A response as lock-core makes it: a status, header lines and a body, free of any HTTP
/// crate. The keyed lock's [`Rejection`](super::Rejection), the idempotency layer's
/// [`Reply`](super::idempotency::Reply) and the response cache's
/// [`Answer`](super::cache::Answer) each carry one, beside what is particular to them; an
/// adapter turns it into its framework's response with one function, for all three layers
/// (status, then every header line in order, then the body).
///
/// A stored response ([`StoredResponse`], the storage format) converts into one and back.
///
/// ```
/// use lock_core::http::{PlainResponse, PROBLEM_JSON};
///
/// let busy = PlainResponse::problem(409, "urn:shop:busy", "Busy", "try again", &[("sku", "a")])
///     .with_header("retry-after", "1");
/// assert_eq!(busy.status, 409);
/// assert_eq!(busy.header("Content-Type"), Some(PROBLEM_JSON.as_bytes()));
/// assert_eq!(busy.header("retry-after"), Some(&b"1"[..]));
/// assert!(String::from_utf8(busy.body).unwrap().contains(r#""sku":"a""#));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlainResponse {
    /// The status.
    pub status: u16,
    /// The header lines, in the order to send them (names lower case; a name may repeat).
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body.
    pub body: Vec<u8>,
}

impl PlainResponse {
    /// A response with these parts.
    ///
    /// ```
    /// let ok = lock_core::http::PlainResponse::new(200, Vec::new(), b"ok".to_vec());
    /// assert_eq!((ok.status, ok.body.as_slice()), (200, &b"ok"[..]));
    /// ```
    #[must_use]
    pub fn new(status: u16, headers: Vec<(String, Vec<u8>)>, body: Vec<u8>) -> Self {
        Self {
            status,
            headers,
            body,
        }
    }

    /// An `application/problem+json` response (RFC 9457): `content-type` and the
    /// [`problem_body`] of `type_uri`, `title`, `status`, `detail` and the `extra` members.
    ///
    /// ```
    /// use lock_core::http::PlainResponse;
    ///
    /// let gone = PlainResponse::problem(410, "urn:shop:gone", "Gone", "sold out", &[]);
    /// assert_eq!(gone.headers.len(), 1);
    /// assert!(gone.body.starts_with(br#"{"type":"urn:shop:gone""#));
    /// ```
    #[must_use]
    pub fn problem(
        status: u16,
        type_uri: &str,
        title: &str,
        detail: &str,
        extra: &[(&str, &str)],
    ) -> Self {
        Self::new(
            status,
            vec![("content-type".to_owned(), PROBLEM_JSON.as_bytes().to_vec())],
            problem_body(type_uri, title, status, detail, extra),
        )
    }

    /// The same response with one more header line (`name` lower-cased) after the others.
    ///
    /// ```
    /// use lock_core::http::PlainResponse;
    ///
    /// let later = PlainResponse::new(503, Vec::new(), Vec::new()).with_header("Retry-After", "5");
    /// assert_eq!(later.headers, vec![("retry-after".to_owned(), b"5".to_vec())]);
    /// ```
    #[must_use]
    pub fn with_header(mut self, name: &str, value: impl Into<Vec<u8>>) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// The value of header `name` (its first line; the name case-insensitive).
    ///
    /// ```
    /// use lock_core::http::PlainResponse;
    ///
    /// let response = PlainResponse::new(200, vec![("age".into(), b"3".to_vec())], Vec::new());
    /// assert_eq!(response.header("Age"), Some(&b"3"[..]));
    /// assert_eq!(response.header("etag"), None);
    /// ```
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
}

/// A stored response to replay: its status, headers and body (its age and freshness are the
/// cache's, which adds `Age` and `Cache-Status` itself).
///
/// ```
/// use lock_core::http::PlainResponse;
/// use lock_core::results::StoredResponse;
///
/// let stored = StoredResponse::new(201, Vec::new(), b"paid".to_vec());
/// assert_eq!(PlainResponse::from(stored), PlainResponse::new(201, Vec::new(), b"paid".to_vec()));
/// ```
impl From<StoredResponse> for PlainResponse {
    fn from(stored: StoredResponse) -> Self {
        Self::new(stored.status, stored.headers, stored.body)
    }
}

/// A response to keep as it is ([`StoredResponse::new`]: no age when stored, no freshness),
/// as idempotency records keep their answers.
///
/// ```
/// use lock_core::http::PlainResponse;
/// use lock_core::results::StoredResponse;
///
/// let kept = StoredResponse::from(PlainResponse::new(201, Vec::new(), b"paid".to_vec()));
/// assert_eq!(kept, StoredResponse::new(201, Vec::new(), b"paid".to_vec()));
/// ```
impl From<PlainResponse> for StoredResponse {
    fn from(response: PlainResponse) -> Self {
        Self::new(response.status, response.headers, response.body)
    }
}
