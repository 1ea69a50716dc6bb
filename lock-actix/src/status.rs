//! The status the rest of the chain answered with, as the adapters hand it to lock-core's
//! metrics.

use actix_web::dev::ServiceResponse;
use actix_web::Error;

/// The status sent for the rest of the chain's answer: an error's too, as actix-web renders
/// it (lock-core's `status="none"` is for frameworks that cannot tell).
pub(crate) fn status_of<B>(answer: &Result<ServiceResponse<B>, Error>) -> Option<u16> {
    Some(match answer {
        Ok(response) => response.status().as_u16(),
        Err(error) => error.as_response_error().status_code().as_u16(),
    })
}
