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
    let status = StatusCode::from_u16(plain.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::with_body(status, plain.body);
    let headers = response.headers_mut();
    for (name, value) in plain.headers {
        // Kept from a valid response, or made by lock-core: always valid.
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(&value),
        ) {
            headers.append(name, value);
        }
    }
    response
}
