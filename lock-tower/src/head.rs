//! An `http::Request` (or its `Parts`), and `http`'s header maps, as lock-core's HTTP layer
//! reads them.

use http::request::Parts;
use http::{Extensions, HeaderMap, HeaderValue, Method, Request, Uri};
use lock_core::http::cache::FullRequestHead;
use lock_core::http::{HeaderMapView, MatchedRoute, RequestView};

/// An `http` header map through lock-core's [`HeaderMapView`].
#[derive(Clone, Copy)]
pub(crate) struct Headers<'a>(pub(crate) &'a HeaderMap);

impl HeaderMapView for Headers<'_> {
    fn lines_of<'s>(&'s self, name: &str) -> impl Iterator<Item = &'s [u8]> {
        self.0.get_all(name).iter().map(HeaderValue::as_bytes)
    }

    fn for_each_line(&self, each: &mut dyn FnMut(&str, &[u8])) {
        for (name, value) in self.0 {
            each(name.as_str(), value.as_bytes());
        }
    }
}

/// `request`'s head as lock-core reads it.
pub(crate) fn head<B>(request: &Request<B>) -> impl FullRequestHead + '_ {
    let (method, uri) = (request.method(), request.uri());
    view(method, uri, request.headers(), request.extensions())
}

/// A request head without its body, as lock-core reads it.
pub(crate) fn parts_head(parts: &Parts) -> impl FullRequestHead + '_ {
    view(&parts.method, &parts.uri, &parts.headers, &parts.extensions)
}

fn view<'a>(
    method: &'a Method,
    uri: &'a Uri,
    headers: &'a HeaderMap,
    extensions: &'a Extensions,
) -> impl FullRequestHead + 'a {
    RequestView {
        method: method.as_str(),
        path: uri.path(),
        query: uri.query(),
        headers: Headers(headers),
        route: move || matched_route(extensions),
    }
}

/// What axum's router put in the extensions: `MatchedPath` for a matched route (the full
/// template, nested prefixes included); `OriginalUri` alone for a request that went through
/// a router to its fallback (a 404); neither for a layer outside every router, which cannot
/// know the route (fail closed). Inside a nested router the path was stripped of the nest
/// prefix (`NestedPath`), so the template is too.
#[cfg(feature = "axum")]
pub(crate) fn matched_route(extensions: &Extensions) -> MatchedRoute<'_> {
    use axum::extract::{MatchedPath, NestedPath, OriginalUri};

    let Some(matched) = extensions.get::<MatchedPath>() else {
        return match extensions.get::<OriginalUri>() {
            Some(_) => MatchedRoute::NoMatch,
            None => MatchedRoute::Unknown,
        };
    };
    let template = matched.as_str();
    let Some(nested) = extensions.get::<NestedPath>() else {
        return MatchedRoute::Route(template.into());
    };
    let prefix = nested.as_str().split('/').filter(|s| !s.is_empty()).count();
    let inner: Vec<&str> = template
        .split('/')
        .filter(|s| !s.is_empty())
        .skip(prefix)
        .collect();
    MatchedRoute::Route(format!("/{}", inner.join("/")).into())
}

/// Without axum, no router is visible: route parameters fail closed.
#[cfg(not(feature = "axum"))]
pub(crate) fn matched_route(extensions: &Extensions) -> MatchedRoute<'_> {
    let _ = extensions;
    MatchedRoute::Unknown
}
