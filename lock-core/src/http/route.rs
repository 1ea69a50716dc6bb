//! Route templates (`/buy/{sku}`, `/t/:tenant`, `/files/{*rest}`) matched against a request
//! path, and what a framework's router says about a request ([`MatchedRoute`]).

use std::borrow::Cow;

use super::decode_path_segment;

/// What the framework's router decided for a request, as an adapter sees it; read by
/// [`KeySource::route_param`](super::keyed::KeySource::route_param) through
/// [`RequestHead::matched_route`](super::RequestHead::matched_route).
///
/// The three cases lead to three answers: a known route with the parameter is locked, a
/// request that matched no route (a 404 on its way) or a route without the parameter passes
/// through, and an adapter that cannot see routing at all fails closed (400 naming why).
///
/// ```
/// use lock_core::http::keyed::KeySource;
/// use lock_core::http::{MatchedRoute, RequestHead};
///
/// struct Head(MatchedRoute<'static>);
/// impl RequestHead for Head {
///     fn method(&self) -> &str { "POST" }
///     fn path(&self) -> &str { "/api/buy/a%2Fb" }
///     fn query(&self) -> Option<&str> { None }
///     fn header(&self, _: &str) -> Option<&[u8]> { None }
///     fn matched_route(&self) -> MatchedRoute<'_> { self.0.clone() }
/// }
///
/// let sku = KeySource::route_param("sku");
/// let routed = Head(MatchedRoute::Route("/api/buy/{sku}".into()));
/// assert!(sku.selects(&routed));
/// assert_eq!(sku.extract(&routed).as_deref(), Some("a/b"));
/// assert!(!sku.selects(&Head(MatchedRoute::NoMatch)), "a 404 stays a 404");
/// assert!(sku.selects(&Head(MatchedRoute::Unknown)), "fails closed");
/// assert_eq!(sku.extract(&Head(MatchedRoute::Unknown)), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MatchedRoute<'a> {
    /// The adapter cannot see which route matched (lock-tower without its `axum` feature, a
    /// layer outside the router); the default of [`RequestHead::matched_route`](super::RequestHead::matched_route).
    Unknown,
    /// The router matched no route: the request is bound for a fallback (a 404).
    NoMatch,
    /// The template of the matched route as the router spells it, nested prefixes included,
    /// for the path [`RequestHead::path`](super::RequestHead::path) returns
    /// (`/api/buy/{sku}`).
    Route(Cow<'a, str>),
}

/// One segment of a route template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part<'t> {
    Literal(&'t str),
    /// One path segment: `{name}`, `{name:regex}` (actix), `:name`.
    Param(&'t str),
    /// The rest of the path, one segment or more: `{*name}` (axum), `*name`, `{name}*`,
    /// `{name:.*}` and `{name:.+}` (actix). Only meaningful as the last segment.
    Rest(&'t str),
}

fn part(segment: &str) -> Part<'_> {
    if let Some(name) = segment.strip_prefix("{*").and_then(|s| s.strip_suffix('}')) {
        return Part::Rest(name);
    }
    if let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix("}*")) {
        return Part::Rest(name);
    }
    if let Some(inner) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
        return match inner.split_once(':') {
            Some((name, ".*" | ".+")) => Part::Rest(name),
            Some((name, _regex)) => Part::Param(name),
            None => Part::Param(inner),
        };
    }
    if let Some(name) = segment.strip_prefix(':') {
        return Part::Param(name);
    }
    if let Some(name) = segment.strip_prefix('*') {
        return Part::Rest(name);
    }
    Part::Literal(segment)
}

pub(super) fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

/// Whether `template` has a parameter called `name`.
pub(super) fn has_param(template: &str, name: &str) -> bool {
    segments(template).any(|s| matches!(part(s), Part::Param(p) | Part::Rest(p) if p == name))
}

/// Matches `path` against `template`: `None` when the segment count or a literal segment
/// differs, else the raw segments of parameter `name` (empty when `name` is `None` or not a
/// parameter of the template; several for a rest parameter).
pub(super) fn capture<'p>(
    template: &str,
    path: &'p str,
    name: Option<&str>,
) -> Option<Vec<&'p str>> {
    let actual: Vec<&str> = segments(path).collect();
    let mut found = Vec::new();
    let mut parts = segments(template).map(part).peekable();
    let mut index = 0;
    while let Some(p) = parts.next() {
        match p {
            Part::Rest(param) if parts.peek().is_none() => {
                let rest = actual.get(index..).filter(|rest| !rest.is_empty())?;
                if Some(param) == name {
                    found.extend_from_slice(rest);
                }
                return Some(found);
            }
            Part::Param(param) | Part::Rest(param) => {
                let segment = *actual.get(index)?;
                if Some(param) == name {
                    found.push(segment);
                }
            }
            Part::Literal(literal) => {
                if actual.get(index) != Some(&literal) {
                    return None;
                }
            }
        }
        index += 1;
    }
    (index == actual.len()).then_some(found)
}

/// The strictly decoded value of parameter `name` of `template` in `path`; the segments of a
/// rest parameter are decoded one by one and joined with `/`.
pub(super) fn param_value(template: &str, path: &str, name: &str) -> Option<String> {
    let raw = capture(template, path, Some(name))?;
    if raw.is_empty() {
        return None;
    }
    let decoded: Result<Vec<String>, _> = raw.into_iter().map(decode_path_segment).collect();
    Some(decoded.ok()?.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_syntaxes() {
        assert_eq!(part("{sku}"), Part::Param("sku"));
        assert_eq!(part(":sku"), Part::Param("sku"));
        assert_eq!(part("{id:\\d+}"), Part::Param("id"));
        assert_eq!(part("{*rest}"), Part::Rest("rest"));
        assert_eq!(part("{tail}*"), Part::Rest("tail"));
        assert_eq!(part("{tail:.*}"), Part::Rest("tail"));
        assert_eq!(part("buy"), Part::Literal("buy"));
    }

    #[test]
    fn params_and_rests() {
        let value = |t, p, n| param_value(t, p, n);
        assert_eq!(
            value("/buy/{sku}", "/buy/a%2Fb", "sku").as_deref(),
            Some("a/b")
        );
        assert_eq!(value("/buy/{sku}", "/buy/a/b", "sku"), None);
        assert_eq!(value("/buy/{sku}", "/sell/a", "sku"), None);
        assert_eq!(value("/buy/{sku}", "/buy/a", "other"), None);
        assert_eq!(
            value("/f/{*rest}", "/f/a/b%20c", "rest").as_deref(),
            Some("a/b c")
        );
        assert_eq!(
            value("/f/{tail}*", "/f/a/b", "tail").as_deref(),
            Some("a/b")
        );
        assert_eq!(
            value("/f/{*rest}", "/f", "rest"),
            None,
            "a rest is never empty"
        );
        assert_eq!(value("/f/{*rest}", "/f/%zz", "rest"), None);
        assert!(capture("/f/{*rest}", "/f/a/b", None).is_some());
        assert!(capture("/f/{*rest}", "/g/a", None).is_none());
        assert!(has_param("/t/:tenant/{*rest}", "rest"));
        assert!(!has_param("/t/:tenant", "sku"));
    }
}
