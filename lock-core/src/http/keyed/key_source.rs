//! Where a request's lock key comes from: a path segment, a route parameter, a header or a
//! query parameter.

use crate::http::route::{has_param, param_value, segments};
use crate::http::{
    decode_path_segment, decode_query_component, MatchedRoute, Rejection, RequestHead,
};

/// Which path segment holds the key.
///
/// ```
/// use lock_core::http::keyed::{KeySource, PathSegment};
///
/// assert_eq!(KeySource::path_index(1), KeySource::PathSegment(PathSegment::Index(1)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathSegment {
    /// The segment at this position, counting from 0 after the leading `/`
    /// (`/buy/sku-1`: 0 is `buy`, 1 is `sku-1`).
    Index(usize),
    /// The segment matching the parameter `{name}` (or `:name`) of a route template such as
    /// `/buy/{sku}`; the path must match the template's literal segments. A last segment
    /// `{*name}` (axum), `{name}*` or `{name:.*}` (actix) takes the rest of the path, its
    /// segments decoded one by one and joined with `/`.
    Named {
        /// The route template.
        template: String,
        /// The parameter's name, without braces.
        name: String,
    },
    /// The parameter `name` of the route the framework's router matched
    /// ([`RequestHead::matched_route`]), with the same template syntax and decoding as
    /// [`Named`](Self::Named).
    Route {
        /// The parameter's name, without braces.
        name: String,
    },
}

/// A rule for taking the lock key from a request. For anything else, the adapters take a
/// closure.
///
/// Values are percent-decoded strictly ([`decode_path_segment`], and
/// [`decode_query_component`] where `+` is a space); a value that is missing, empty, has a bad
/// `%` escape or is not UTF-8 after decoding extracts as `None`, which the middleware answers
/// with a 400 problem.
///
/// ```
/// use lock_core::http::keyed::KeySource;
///
/// let source = KeySource::path_param("/buy/{sku}", "sku");
/// assert_eq!(source.describe(), "path parameter `sku` of `/buy/{sku}`");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeySource {
    /// A segment of the path.
    PathSegment(PathSegment),
    /// A request header (by name, case-insensitive).
    Header(String),
    /// A query-string parameter (the first one with this name).
    Query(String),
}

impl KeySource {
    /// The path segment at `index` (0 is the first after the leading `/`).
    #[must_use]
    pub fn path_index(index: usize) -> Self {
        Self::PathSegment(PathSegment::Index(index))
    }

    /// The path parameter `name` of the route `template` (`"/buy/{sku}"`, `"sku"`).
    #[must_use]
    pub fn path_param(template: impl Into<String>, name: impl Into<String>) -> Self {
        Self::PathSegment(PathSegment::Named {
            template: template.into(),
            name: name.into(),
        })
    }

    /// The parameter `name` of the route the framework matched (`"sku"` for a request that
    /// axum routed to `/api/buy/{sku}`, or actix to the resource `/buy/{sku}`): no template
    /// to repeat, and nested prefixes come from the router. Requests that matched no route, or
    /// a route without this parameter, pass through. lock-tower sees routes only with its
    /// `axum` feature: without it, building its layer with this source fails naming the
    /// feature; a layer placed outside the router ([`MatchedRoute::Unknown`]) answers 400
    /// saying so.
    ///
    /// ```
    /// use lock_core::http::keyed::KeySource;
    ///
    /// assert_eq!(KeySource::route_param("sku").describe(), "route parameter `sku`");
    /// ```
    #[must_use]
    pub fn route_param(name: impl Into<String>) -> Self {
        Self::PathSegment(PathSegment::Route { name: name.into() })
    }

    /// The parameter name of a [`route_param`](Self::route_param) source (`None` for the
    /// others): what an adapter that cannot see routing refuses at build time.
    ///
    /// ```
    /// use lock_core::http::keyed::KeySource;
    ///
    /// assert_eq!(KeySource::route_param("sku").route_param_name(), Some("sku"));
    /// assert_eq!(KeySource::header("x-sku").route_param_name(), None);
    /// ```
    #[must_use]
    pub fn route_param_name(&self) -> Option<&str> {
        match self {
            Self::PathSegment(PathSegment::Route { name }) => Some(name),
            _ => None,
        }
    }

    /// The header `name`.
    #[must_use]
    pub fn header(name: impl Into<String>) -> Self {
        Self::Header(name.into())
    }

    /// The query parameter `name`.
    #[must_use]
    pub fn query(name: impl Into<String>) -> Self {
        Self::Query(name.into())
    }

    /// The key this rule finds in `head`, decoded; `None` when it is missing or malformed.
    #[must_use]
    pub fn extract(&self, head: &(impl RequestHead + ?Sized)) -> Option<String> {
        let value = match self {
            Self::PathSegment(PathSegment::Route { name }) => match head.matched_route() {
                MatchedRoute::Route(template) => param_value(&template, head.path(), name)?,
                MatchedRoute::Unknown | MatchedRoute::NoMatch => return None,
            },
            Self::PathSegment(segment) => path_segment(head.path(), segment)?,
            // A repeated header or parameter names no single key: refused, not guessed.
            Self::Header(name) if head.header_count(name) > 1 => return None,
            Self::Header(name) => String::from_utf8(head.header(name)?.to_vec()).ok()?,
            Self::Query(name) => query_param(head.query()?, name)?,
        };
        (!value.is_empty()).then_some(value)
    }

    /// Whether this rule is about `head` at all: `false` when a
    /// [`path_param`](Self::path_param) template's shape (segment count and literal segments)
    /// does not match the path, as for a request bound for another route or for none (a 404),
    /// and for a [`route_param`](Self::route_param) when the router matched no route or a
    /// route without the parameter (but `true` when the route is [unknown](MatchedRoute::Unknown):
    /// fail closed).
    /// Middleware passes such requests through untouched instead of answering 400; every other
    /// rule selects every request, so a header or query key belongs on matched routes only
    /// (axum's `route_layer`, actix's `web::resource(..).wrap(..)`).
    ///
    /// ```
    /// use lock_core::http::keyed::KeySource;
    /// use lock_core::http::RequestHead;
    ///
    /// struct Path(&'static str);
    /// impl RequestHead for Path {
    ///     fn method(&self) -> &str { "GET" }
    ///     fn path(&self) -> &str { self.0 }
    ///     fn query(&self) -> Option<&str> { None }
    ///     fn header(&self, _: &str) -> Option<&[u8]> { None }
    /// }
    ///
    /// let sku = KeySource::path_param("/buy/{sku}", "sku");
    /// assert!(sku.selects(&Path("/buy/a")));
    /// assert!(sku.selects(&Path("/buy/%zz")), "its route, a malformed key: 400");
    /// assert!(!sku.selects(&Path("/")));
    /// assert!(!sku.selects(&Path("/buy/a/b")));
    /// ```
    #[must_use]
    pub fn selects(&self, head: &(impl RequestHead + ?Sized)) -> bool {
        match self {
            Self::PathSegment(PathSegment::Named { template, .. }) => {
                crate::http::route::capture(template, head.path(), None).is_some()
            }
            Self::PathSegment(PathSegment::Route { name }) => match head.matched_route() {
                MatchedRoute::Route(template) => has_param(&template, name),
                MatchedRoute::NoMatch => false,
                MatchedRoute::Unknown => true,
            },
            _ => true,
        }
    }

    /// The 400 answer for a request this rule [selects](Self::selects) but finds no key in:
    /// [`Rejection::missing_key`] with [`describe`](Self::describe), or, for a
    /// [`route_param`](Self::route_param) whose adapter cannot see routing, a detail that says
    /// so and how to fix it.
    ///
    /// ```
    /// use lock_core::http::keyed::KeySource;
    /// use lock_core::http::RequestHead;
    ///
    /// struct Head;
    /// impl RequestHead for Head {
    ///     fn method(&self) -> &str { "POST" }
    ///     fn path(&self) -> &str { "/buy/a" }
    ///     fn query(&self) -> Option<&str> { None }
    ///     fn header(&self, _: &str) -> Option<&[u8]> { None }
    /// }
    ///
    /// let answer = KeySource::route_param("sku").missing_key(&Head);
    /// assert_eq!(answer.response.status, 400);
    /// assert!(String::from_utf8(answer.response.body).unwrap().contains("no matched route"));
    /// ```
    #[must_use]
    pub fn missing_key(&self, head: &(impl RequestHead + ?Sized)) -> Rejection {
        match self {
            Self::PathSegment(PathSegment::Route { .. })
                if head.matched_route() == MatchedRoute::Unknown =>
            {
                Rejection::missing_key_because(
                    &self.describe(),
                    "no matched route is known here: enable lock-tower's `axum` feature and \
                     put the layer inside the Router (`route_layer` or `layer`)",
                )
            }
            _ => Rejection::missing_key(&self.describe()),
        }
    }

    /// Where the key is looked for, for error messages.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::PathSegment(PathSegment::Index(i)) => format!("path segment {i}"),
            Self::PathSegment(PathSegment::Named { template, name }) => {
                format!("path parameter `{name}` of `{template}`")
            }
            Self::PathSegment(PathSegment::Route { name }) => format!("route parameter `{name}`"),
            Self::Header(name) => format!("header `{name}` (once)"),
            Self::Query(name) => format!("query parameter `{name}` (once)"),
        }
    }
}

fn path_segment(path: &str, which: &PathSegment) -> Option<String> {
    match which {
        PathSegment::Index(index) => decode_path_segment(segments(path).nth(*index)?).ok(),
        PathSegment::Named { template, name } => param_value(template, path, name),
        // Needs the matched route, which `extract` reads from the head.
        PathSegment::Route { .. } => None,
    }
}

/// The value of query parameter `name`, when it appears exactly once.
fn query_param(query: &str, name: &str) -> Option<String> {
    let mut values = query.split('&').filter_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (decode_query_component(key).ok()? == name).then_some(value)
    });
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    decode_query_component(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Head {
        path: &'static str,
        query: Option<&'static str>,
    }

    impl RequestHead for Head {
        fn method(&self) -> &str {
            "GET"
        }
        fn path(&self) -> &str {
            self.path
        }
        fn query(&self) -> Option<&str> {
            self.query
        }
        fn header(&self, name: &str) -> Option<&[u8]> {
            match name.to_ascii_lowercase().as_str() {
                "x-key" => Some(b"caf\xc3\xa9"),
                "x-bad" => Some(b"\xff"),
                "x-twice" => Some(b"one"),
                _ => None,
            }
        }
        fn header_count(&self, name: &str) -> usize {
            match name.to_ascii_lowercase().as_str() {
                "x-twice" => 2,
                _ => usize::from(self.header(name).is_some()),
            }
        }
    }

    const fn head(path: &'static str, query: Option<&'static str>) -> Head {
        Head { path, query }
    }

    #[test]
    fn path_segments_by_index_and_name() {
        let h = head("/buy/sku%201/", None);
        assert_eq!(
            KeySource::path_index(1).extract(&h).as_deref(),
            Some("sku 1")
        );
        assert_eq!(KeySource::path_index(2).extract(&h), None);
        let named = KeySource::path_param("/buy/{sku}", "sku");
        assert_eq!(named.extract(&h).as_deref(), Some("sku 1"));
        assert_eq!(named.extract(&head("/sell/x", None)), None);
        assert_eq!(named.extract(&head("/buy/x/y", None)), None);
        let colon = KeySource::path_param("/t/:tenant/o/:order", "order");
        assert_eq!(colon.extract(&head("/t/a/o/9", None)).as_deref(), Some("9"));
        assert_eq!(KeySource::path_index(0).extract(&head("/%zz", None)), None);
        assert!(named.selects(&head("/buy/x", None)));
        assert!(!named.selects(&head("/", None)));
        assert!(!named.selects(&head("/sell/x", None)));
        assert!(KeySource::header("x").selects(&head("/", None)));
    }

    /// A head whose router matched `route`.
    struct Routed(&'static str, MatchedRoute<'static>);

    impl RequestHead for Routed {
        fn method(&self) -> &str {
            "POST"
        }
        fn path(&self) -> &str {
            self.0
        }
        fn query(&self) -> Option<&str> {
            None
        }
        fn header(&self, _: &str) -> Option<&[u8]> {
            None
        }
        fn matched_route(&self) -> MatchedRoute<'_> {
            self.1.clone()
        }
    }

    #[test]
    fn route_params_follow_the_matched_route() {
        let sku = KeySource::route_param("sku");
        let route = |t: &'static str| MatchedRoute::Route(t.into());
        let buy = Routed("/v1/buy/a%20b", route("/v1/buy/{sku}"));
        assert!(sku.selects(&buy));
        assert_eq!(sku.extract(&buy).as_deref(), Some("a b"));
        let actix = Routed("/files/a/b", route("/files/{sku}*"));
        assert_eq!(sku.extract(&actix).as_deref(), Some("a/b"));
        let home = Routed("/", route("/"));
        assert!(!sku.selects(&home), "a route without the parameter");
        assert!(!sku.selects(&Routed("/x", MatchedRoute::NoMatch)));
        let unknown = Routed("/buy/a", MatchedRoute::Unknown);
        assert!(sku.selects(&unknown), "fail closed");
        assert_eq!(sku.extract(&unknown), None);
        assert_eq!(sku.missing_key(&unknown).response.status, 400);
        // The template of another route than the path's: selected, no key (400).
        let skewed = Routed("/buy/a", route("/api/buy/{sku}"));
        assert!(sku.selects(&skewed));
        assert_eq!(sku.extract(&skewed), None);
        let rest = KeySource::path_param("/files/{*path}", "path");
        assert_eq!(
            rest.extract(&head("/files/a/b", None)).as_deref(),
            Some("a/b")
        );
        assert!(!rest.selects(&head("/files", None)));
    }

    #[test]
    fn headers_and_queries() {
        let h = head("/", Some("a=1&sku=red+shoe%21&b=2&b=3&flag"));
        assert_eq!(
            KeySource::query("sku").extract(&h).as_deref(),
            Some("red shoe!")
        );
        assert_eq!(
            KeySource::query("b").extract(&h),
            None,
            "repeated: no single key"
        );
        assert_eq!(KeySource::query("flag").extract(&h), None, "empty");
        assert_eq!(KeySource::query("nope").extract(&h), None);
        assert_eq!(KeySource::query("a").extract(&head("/", None)), None);
        assert_eq!(
            KeySource::header("X-Key").extract(&h).as_deref(),
            Some("café")
        );
        assert_eq!(KeySource::header("x-bad").extract(&h), None, "not UTF-8");
        assert_eq!(KeySource::header("x-twice").extract(&h), None, "repeated");
    }
}
