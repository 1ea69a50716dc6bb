//! [`RequestView`]: a framework's request as the HTTP layer reads it, made of borrowed parts,
//! so an adapter writes only how its header map is read ([`HeaderMapView`]).

use super::cache::HeaderPairs;
use super::{MatchedRoute, RequestHead};

/// A framework's header map as the HTTP layer reads it: the lines of one header, and every
/// line. An adapter implements it once, over its header map type, for requests and responses
/// alike ([`RequestView`] reads a request's through it, [`HeaderLines`] a response's).
///
/// ```
/// use lock_core::http::HeaderMapView;
///
/// /// A header map as a list of lines.
/// struct Lines(Vec<(&'static str, &'static [u8])>);
/// impl HeaderMapView for Lines {
///     fn lines_of<'s>(&'s self, name: &str) -> impl Iterator<Item = &'s [u8]> {
///         let name = name.to_owned();
///         self.0.iter().filter(move |(n, _)| n.eq_ignore_ascii_case(&name)).map(|(_, v)| *v)
///     }
///     fn for_each_line(&self, each: &mut dyn FnMut(&str, &[u8])) {
///         self.0.iter().for_each(|(n, v)| each(n, v));
///     }
/// }
///
/// let map = Lines(vec![("vary", b"a"), ("Vary", b"b")]);
/// assert_eq!(map.lines_of("VARY").count(), 2);
/// ```
pub trait HeaderMapView {
    /// Every line of header `name` (matched case-insensitively), in order, as raw bytes.
    fn lines_of<'s>(&'s self, name: &str) -> impl Iterator<Item = &'s [u8]>;

    /// Calls `each` with every header line's name and raw value, in order.
    fn for_each_line(&self, each: &mut dyn FnMut(&str, &[u8]));
}

impl<T: HeaderMapView + ?Sized> HeaderMapView for &T {
    fn lines_of<'s>(&'s self, name: &str) -> impl Iterator<Item = &'s [u8]> {
        (**self).lines_of(name)
    }

    fn for_each_line(&self, each: &mut dyn FnMut(&str, &[u8])) {
        (**self).for_each_line(each);
    }
}

/// A header map's lines as the response cache and the idempotency layer read them
/// ([`HeaderPairs`]).
///
/// ```
/// use lock_core::http::cache::HeaderPairs;
/// use lock_core::http::{HeaderLines, HeaderMapView};
///
/// struct One;
/// impl HeaderMapView for One {
///     fn lines_of<'s>(&'s self, _: &str) -> impl Iterator<Item = &'s [u8]> {
///         std::iter::once(&b"max-age=60"[..])
///     }
///     fn for_each_line(&self, each: &mut dyn FnMut(&str, &[u8])) {
///         each("cache-control", b"max-age=60");
///     }
/// }
///
/// let mut seen = 0;
/// HeaderLines(One).for_each_header(&mut |_, _| seen += 1);
/// assert_eq!(seen, 1);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct HeaderLines<H>(pub H);

impl<H: HeaderMapView> HeaderPairs for HeaderLines<H> {
    fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
        self.0.for_each_line(each);
    }
}

/// A request's head from its borrowed parts: method, path, query, header map and, asked only
/// when a key needs it, the route the framework's router matched. It is a [`RequestHead`] and
/// (every header line) a [`HeaderPairs`], what the keyed lock, the response cache and the
/// idempotency layer read of a request; the adapters build one per request.
///
/// ```
/// use lock_core::http::keyed::KeySource;
/// use lock_core::http::{HeaderMapView, MatchedRoute, RequestHead, RequestView};
///
/// struct NoHeaders;
/// impl HeaderMapView for NoHeaders {
///     fn lines_of<'s>(&'s self, _: &str) -> impl Iterator<Item = &'s [u8]> {
///         std::iter::empty()
///     }
///     fn for_each_line(&self, _: &mut dyn FnMut(&str, &[u8])) {}
/// }
///
/// let head = RequestView {
///     method: "POST",
///     path: "/buy/a1",
///     query: None,
///     headers: NoHeaders,
///     route: || MatchedRoute::Route("/buy/{sku}".into()),
/// };
/// assert_eq!(head.header_count("x-sku"), 0);
/// assert_eq!(KeySource::route_param("sku").extract(&head).as_deref(), Some("a1"));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct RequestView<'a, H, R> {
    /// The method, upper case.
    pub method: &'a str,
    /// The path as sent, still percent-encoded, without the query.
    pub path: &'a str,
    /// The raw query after `?`, if any.
    pub query: Option<&'a str>,
    /// The header map.
    pub headers: H,
    /// The route the router matched ([`RequestHead::matched_route`]), computed when asked.
    pub route: R,
}

impl<'a, H, R> RequestHead for RequestView<'a, H, R>
where
    H: HeaderMapView,
    R: Fn() -> MatchedRoute<'a>,
{
    fn method(&self) -> &str {
        self.method
    }

    fn path(&self) -> &str {
        self.path
    }

    fn query(&self) -> Option<&str> {
        self.query
    }

    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers.lines_of(name).next()
    }

    fn header_count(&self, name: &str) -> usize {
        self.headers.lines_of(name).count()
    }

    fn matched_route(&self) -> MatchedRoute<'_> {
        (self.route)()
    }
}

impl<H: HeaderMapView, R> HeaderPairs for RequestView<'_, H, R> {
    fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
        self.headers.for_each_line(each);
    }
}
