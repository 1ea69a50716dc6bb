//! The status an inner service answered with, as the adapters hand it to lock-core's metrics.

use http::Response;

/// The status the inner service answered with (`None`: it failed instead, and its error goes
/// on to the server; lock-core counts it as `status="none"`).
pub(crate) fn status_of<B, E>(answer: &Result<Response<B>, E>) -> Option<u16> {
    answer
        .as_ref()
        .ok()
        .map(|response| response.status().as_u16())
}
