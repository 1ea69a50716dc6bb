//! The axum extractors' values, from what a layer put in a request's extensions.

use axum::response::{IntoResponse, Response};
use http::request::Parts;
use lock_core::http::Rejection;

use crate::response::from_plain;

/// An extractor's value from what a layer put in the request's extensions, `None` when the
/// layer did not handle the request (what `Option<Extractor>` gives).
pub(crate) fn from_extensions<T: Clone + Send + Sync + 'static, E>(
    parts: &Parts,
    wrap: fn(T) -> E,
) -> Option<E> {
    parts.extensions.get::<T>().cloned().map(wrap)
}

/// The rejection of an extractor whose layer did not handle the request: a 500
/// `application/problem+json` whose detail names the missing layer (the handler is wired
/// wrong, not the client).
pub(crate) fn missing_layer(detail: &str) -> Response {
    from_plain(Rejection::missing_layer(detail).response)
        .map(axum::body::Body::from)
        .into_response()
}
