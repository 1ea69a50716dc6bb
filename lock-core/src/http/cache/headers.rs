//! How the cache reads header lines: every line of a repeated header, in order, because
//! `Cache-Control`, `Vary` and `Pragma` are lists that a message may split over several lines
//! (`RequestHead::header` gives only the first).

use crate::http::RequestHead;
pub(crate) use crate::results::response::is_token;

/// A message's header lines as name/value byte pairs, in the order received; a header sent on
/// several lines appears once per line. Names are matched case-insensitively by the cache.
///
/// Implemented for slices, arrays and vectors of `(name, value)` pairs; the adapters implement
/// it over their framework's header map (`for (n, v) in map { each(n.as_str(), v.as_bytes()) }`).
///
/// ```
/// use lock_core::http::cache::HeaderPairs;
///
/// let headers = [("Cache-Control", "max-age=60"), ("cache-control", "public")];
/// let mut seen = Vec::new();
/// headers.for_each_header(&mut |name, value| seen.push((name.to_owned(), value.to_vec())));
/// assert_eq!(seen.len(), 2);
/// ```
pub trait HeaderPairs {
    /// Calls `each` with every header line's name and raw value.
    fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8]));
}

impl<N: AsRef<str>, V: AsRef<[u8]>> HeaderPairs for [(N, V)] {
    fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
        for (name, value) in self {
            each(name.as_ref(), value.as_ref());
        }
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>, const K: usize> HeaderPairs for [(N, V); K] {
    fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
        self.as_slice().for_each_header(each);
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>> HeaderPairs for Vec<(N, V)> {
    fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
        self.as_slice().for_each_header(each);
    }
}

impl<T: HeaderPairs + ?Sized> HeaderPairs for &T {
    fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
        (**self).for_each_header(each);
    }
}

/// A request as the cache reads it: method, path and query through
/// [`RequestHead`](crate::http::RequestHead) (the trait the keyed-lock adapters already
/// implement), and every header line through [`HeaderPairs`]. Implemented for every type that
/// has both.
///
/// ```
/// use lock_core::http::cache::{FullRequestHead, RequestParts};
///
/// fn describe(request: &dyn FullRequestHead) -> String {
///     format!("{} {}", request.method(), request.path())
/// }
/// assert_eq!(describe(&RequestParts::get("/items/1")), "GET /items/1");
/// ```
pub trait FullRequestHead: RequestHead + HeaderPairs {}

impl<T: RequestHead + HeaderPairs + ?Sized> FullRequestHead for T {}

/// A request as plain owned data, for tests, examples and adapters that prefer to copy.
///
/// ```
/// use lock_core::http::cache::RequestParts;
/// use lock_core::http::RequestHead;
///
/// let request = RequestParts::get("/search")
///     .with_query("q=rust")
///     .with_header("Accept-Language", "en")
///     .with_header("accept-language", "fr");
/// assert_eq!(request.query(), Some("q=rust"));
/// assert_eq!(request.header("ACCEPT-LANGUAGE"), Some(b"en".as_slice()), "the first line");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct RequestParts {
    /// The method as sent (`"GET"`).
    pub method: String,
    /// The path as sent, still percent-encoded.
    pub path: String,
    /// The raw query after `?`, if there was a `?`.
    pub query: Option<String>,
    /// Every header line, in order.
    pub headers: Vec<(String, Vec<u8>)>,
}

impl RequestParts {
    /// A request with this method and path, no query and no headers.
    pub fn new(method: impl Into<String>, path: impl Into<String>) -> Self {
        Self {
            method: method.into(),
            path: path.into(),
            query: None,
            headers: Vec::new(),
        }
    }

    /// A `GET` of `path`.
    pub fn get(path: impl Into<String>) -> Self {
        Self::new("GET", path)
    }

    /// Sets the raw query string (without the `?`).
    pub fn with_query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// Adds a header line.
    pub fn with_header(mut self, name: impl Into<String>, value: impl AsRef<[u8]>) -> Self {
        self.headers.push((name.into(), value.as_ref().to_vec()));
        self
    }
}

impl RequestHead for RequestParts {
    fn method(&self) -> &str {
        &self.method
    }
    fn path(&self) -> &str {
        &self.path
    }
    fn query(&self) -> Option<&str> {
        self.query.as_deref()
    }
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
    fn header_count(&self, name: &str) -> usize {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .count()
    }
}

impl HeaderPairs for RequestParts {
    fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
        self.headers.for_each_header(each);
    }
}

/// Every line of header `name`, in order.
pub(super) fn lines(headers: &(impl HeaderPairs + ?Sized), name: &str) -> Vec<Vec<u8>> {
    let mut found = Vec::new();
    headers.for_each_header(&mut |n, v| {
        if n.eq_ignore_ascii_case(name) {
            found.push(v.to_vec());
        }
    });
    found
}

/// Whether header `name` is present at all.
pub(super) fn has(headers: &(impl HeaderPairs + ?Sized), name: &str) -> bool {
    let mut found = false;
    headers.for_each_header(&mut |n, _| found |= n.eq_ignore_ascii_case(name));
    found
}

/// The members of a comma-separated list header over all its lines, trimmed, empty members
/// dropped (RFC 9110 §5.6.1). Quotes are not honoured: for lists of tokens only.
pub(super) fn list_members(lines: &[Vec<u8>]) -> Vec<&[u8]> {
    lines
        .iter()
        .flat_map(|line| line.split(|&b| b == b','))
        .map(|member| member.trim_ascii())
        .filter(|member| !member.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_collected_case_insensitively_in_order() {
        let headers = vec![
            ("Vary", b"a, ,b".to_vec()),
            ("x", b"1".to_vec()),
            ("VARY", b"c".to_vec()),
        ];
        let vary = lines(&headers, "vary");
        assert_eq!(vary, vec![b"a, ,b".to_vec(), b"c".to_vec()]);
        assert_eq!(
            list_members(&vary),
            vec![b"a".as_slice(), b"b".as_slice(), b"c".as_slice()]
        );
        assert!(has(&headers, "X"));
        assert!(!has(&headers, "y"));
    }

    #[test]
    fn tokens() {
        for good in ["a", "max-age", "X_1.~!#$%&'*+^`|"] {
            assert!(is_token(good.as_bytes()), "{good}");
        }
        for bad in ["", "a b", "a=b", "\"q\"", "a,b", "caf\u{e9}", "a\0"] {
            assert!(!is_token(bad.as_bytes()), "{bad}");
        }
    }
}
