//! [`from_plain`]: the one way a response lock-core made becomes an `http::Response`, for
//! every layer of this crate.

use http::header::HeaderName;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use lock_core::http::PlainResponse;

/// `plain` as an `http::Response` with its body as bytes, for the layer to wrap in its body
/// type: the status (500 should it not be one), every header line in order, the body.
pub(crate) fn from_plain(plain: PlainResponse) -> Response<Vec<u8>> {
    let mut headers = HeaderMap::with_capacity(plain.headers.len());
    // Kept from a valid response, or made by lock-core: always valid. `extend` appends.
    headers.extend(plain.headers.into_iter().filter_map(|(name, value)| {
        let value = HeaderValue::from_bytes(&value).ok()?;
        Some((HeaderName::from_bytes(name.as_bytes()).ok()?, value))
    }));
    let mut response = Response::new(plain.body);
    *response.status_mut() =
        StatusCode::from_u16(plain.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    *response.headers_mut() = headers;
    response
}
