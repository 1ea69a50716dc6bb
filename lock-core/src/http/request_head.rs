//! What the HTTP layers read of a request, over any framework's request type.

use super::MatchedRoute;

/// The parts of a request key extraction and request selection look at. The adapters
/// implement it over their framework's request type.
///
/// ```
/// use lock_core::http::keyed::KeySource;
/// use lock_core::http::RequestHead;
///
/// struct Head;
/// impl RequestHead for Head {
///     fn method(&self) -> &str { "POST" }
///     fn path(&self) -> &str { "/orders/42" }
///     fn query(&self) -> Option<&str> { Some("tenant=acme") }
///     fn header(&self, name: &str) -> Option<&[u8]> {
///         name.eq_ignore_ascii_case("idempotency-key").then_some(b"k-1".as_slice())
///     }
/// }
///
/// assert_eq!(KeySource::query("tenant").extract(&Head).as_deref(), Some("acme"));
/// assert_eq!(KeySource::header("Idempotency-Key").extract(&Head).as_deref(), Some("k-1"));
/// ```
pub trait RequestHead {
    /// The method, upper case (`"POST"`).
    fn method(&self) -> &str;
    /// The path as sent, still percent-encoded, without the query.
    fn path(&self) -> &str;
    /// The raw query string after `?`, if any.
    fn query(&self) -> Option<&str>;
    /// The first value of header `name` (matched case-insensitively), as raw bytes.
    fn header(&self, name: &str) -> Option<&[u8]>;

    /// How many lines of header `name` the request carries. A header a key or an
    /// idempotency key is read from must come once: a request that repeats it is refused (400)
    /// rather than answered by whichever line came first. The default sees only
    /// [`header`](Self::header) (0 or 1); adapters that can see every line override it.
    ///
    /// ```
    /// use lock_core::http::RequestHead;
    ///
    /// struct Head(Vec<(&'static str, &'static [u8])>);
    /// impl RequestHead for Head {
    ///     fn method(&self) -> &str { "POST" }
    ///     fn path(&self) -> &str { "/" }
    ///     fn query(&self) -> Option<&str> { None }
    ///     fn header(&self, name: &str) -> Option<&[u8]> {
    ///         self.0.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| *v)
    ///     }
    ///     fn header_count(&self, name: &str) -> usize {
    ///         self.0.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)).count()
    ///     }
    /// }
    ///
    /// let twice = Head(vec![("idempotency-key", b"a"), ("Idempotency-Key", b"b")]);
    /// assert_eq!(twice.header_count("idempotency-key"), 2);
    /// ```
    fn header_count(&self, name: &str) -> usize {
        usize::from(self.header(name).is_some())
    }

    /// The route the framework's router matched, for [`KeySource::route_param`](super::keyed::KeySource::route_param). The default,
    /// [`MatchedRoute::Unknown`], is for adapters that cannot see routing: route parameters
    /// then fail closed (400) instead of silently locking nothing.
    ///
    /// ```
    /// use lock_core::http::{MatchedRoute, RequestHead};
    ///
    /// struct Head;
    /// impl RequestHead for Head {
    ///     fn method(&self) -> &str { "GET" }
    ///     fn path(&self) -> &str { "/" }
    ///     fn query(&self) -> Option<&str> { None }
    ///     fn header(&self, _: &str) -> Option<&[u8]> { None }
    /// }
    ///
    /// assert_eq!(Head.matched_route(), MatchedRoute::Unknown);
    /// ```
    fn matched_route(&self) -> MatchedRoute<'_> {
        MatchedRoute::Unknown
    }
}
