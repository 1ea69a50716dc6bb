//! A `ServiceRequest`, and actix-web's header maps, as lock-core's HTTP layer reads them.

use actix_web::dev::ServiceRequest;
use actix_web::http::header::HeaderMap;
use lock_core::http::cache::FullRequestHead;
use lock_core::http::{HeaderMapView, MatchedRoute, RequestView};

/// An actix-web header map through lock-core's [`HeaderMapView`].
#[derive(Clone, Copy)]
pub(crate) struct Headers<'a>(pub(crate) &'a HeaderMap);

impl HeaderMapView for Headers<'_> {
    fn lines_of<'s>(&'s self, name: &str) -> impl Iterator<Item = &'s [u8]> {
        self.0.get_all(name).map(|value| value.as_bytes())
    }

    fn for_each_line(&self, each: &mut dyn FnMut(&str, &[u8])) {
        self.0
            .iter()
            .for_each(|(name, value)| each(name.as_str(), value.as_bytes()));
    }
}

/// `request` as lock-core reads it. actix computes the route pattern from the app's resource
/// map, so it is known in app-level `wrap` too (scope prefixes included); no resource
/// matched: a 404 on its way.
pub(crate) fn head(request: &ServiceRequest) -> impl FullRequestHead + '_ {
    RequestView {
        method: request.method().as_str(),
        path: request.uri().path(),
        query: request.uri().query(),
        headers: Headers(request.headers()),
        route: || {
            request
                .match_pattern()
                .map_or(MatchedRoute::NoMatch, |pattern| {
                    MatchedRoute::Route(pattern.into())
                })
        },
    }
}
