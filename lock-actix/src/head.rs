//! A `ServiceRequest` as lock-core's HTTP layer reads it.

use actix_web::dev::ServiceRequest;
use lock_core::http::{MatchedRoute, RequestHead};

/// A `ServiceRequest` seen through lock-core's [`RequestHead`].
pub(crate) struct Head<'a>(pub(crate) &'a ServiceRequest);

impl RequestHead for Head<'_> {
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
        self.0.headers().get_all(name).count()
    }

    /// actix computes the pattern from the app's resource map, so it is known in app-level
    /// `wrap` too (scope prefixes included); no resource matched: a 404 on its way.
    fn matched_route(&self) -> MatchedRoute<'_> {
        match self.0.match_pattern() {
            Some(pattern) => MatchedRoute::Route(pattern.into()),
            None => MatchedRoute::NoMatch,
        }
    }
}
