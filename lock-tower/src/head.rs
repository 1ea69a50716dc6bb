//! An `http::Request` as lock-core's HTTP layer reads it.

use http::Request;
use lock_core::http::{MatchedRoute, RequestHead};

/// An `http::Request` seen through lock-core's [`RequestHead`].
pub(crate) struct Head<'a, B>(pub(crate) &'a Request<B>);

impl<B> RequestHead for Head<'_, B> {
    fn method(&self) -> &str {
        self.0.method().as_str()
    }

    fn path(&self) -> &str {
        self.0.uri().path()
    }

    fn query(&self) -> Option<&str> {
        self.0.uri().query()
    }

    fn header(&self, name: &str) -> Option<&[u8]> {
        self.0.headers().get(name).map(|value| value.as_bytes())
    }

    fn header_count(&self, name: &str) -> usize {
        self.0.headers().get_all(name).iter().count()
    }

    fn matched_route(&self) -> MatchedRoute<'_> {
        matched_route(self.0.extensions())
    }
}

/// What axum's router put in the extensions: `MatchedPath` for a matched route (the full
/// template, nested prefixes included); `OriginalUri` alone for a request that went through
/// a router to its fallback (a 404); neither for a layer outside every router, which cannot
/// know the route (fail closed). Inside a nested router the path was stripped of the nest
/// prefix (`NestedPath`), so the template is too.
#[cfg(feature = "axum")]
pub(crate) fn matched_route(extensions: &http::Extensions) -> MatchedRoute<'_> {
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
pub(crate) fn matched_route(extensions: &http::Extensions) -> MatchedRoute<'_> {
    let _ = extensions;
    MatchedRoute::Unknown
}
