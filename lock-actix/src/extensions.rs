//! The extractors' values, from what the middleware put in a request's extensions.

use std::future::{ready, Ready};

use actix_web::{HttpMessage, HttpRequest};
use lock_core::http::Rejection;

use crate::LockRejection;

/// An extractor's value from what a middleware put in the request's extensions; a 500
/// `application/problem+json` naming the missing middleware when it is not there (the
/// handler is wired wrong, not the client). An `Option` of the extractor is `None` then.
pub(crate) fn from_extensions<T: Clone + 'static, E>(
    request: &HttpRequest,
    wrap: fn(T) -> E,
    missing: &'static str,
) -> Ready<Result<E, actix_web::Error>> {
    ready(
        request
            .extensions()
            .get::<T>()
            .cloned()
            .map(wrap)
            .ok_or_else(|| LockRejection::new(Rejection::missing_layer(missing)).into()),
    )
}
