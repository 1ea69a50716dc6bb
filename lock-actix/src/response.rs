//! [`from_plain`]: the one way a response lock-core made becomes an actix-web response, for
//! every middleware of this crate.

use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use lock_core::http::PlainResponse;

/// `plain` as an actix-web response with its body as bytes, for the middleware to wrap in
/// its body type: the status (500 should it not be one), every header line in order, the
/// body.
pub(crate) fn from_plain(plain: PlainResponse) -> HttpResponse<Vec<u8>> {
    let mut response = HttpResponse::with_body(status(plain.status), plain.body);
    // Kept from a valid response, or made by lock-core: always valid.
    let lines = plain.headers.into_iter().filter_map(|(name, value)| {
        let name = HeaderName::from_bytes(name.as_bytes()).ok()?;
        Some((name, HeaderValue::from_bytes(&value).ok()?))
    });
    for (name, value) in lines {
        response.headers_mut().append(name, value);
    }
    response
}

/// `code` as a status, 500 should it not be one.
pub(crate) fn status(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}
