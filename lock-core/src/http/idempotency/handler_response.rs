//! The handler's response as the idempotency layer reads it.

use std::future::Future;

use crate::http::cache::{BodyFailed, HeaderPairs, OriginResponse};

/// The handler's response, as an adapter hands it to [`Running::run`](super::Running::run):
/// status and every header line now, the body pulled one chunk at a time, so a body larger
/// than the limit is never buffered whole. The adapter's type keeps what lock-core does not
/// read: the error a failed body ended with, trailers.
///
/// It need not be `Send` (a request's handler runs on the request's own task); every
/// response cache [`OriginResponse`] is one.
///
/// ```
/// use lock_core::http::cache::{BodyFailed, HeaderPairs};
/// use lock_core::http::idempotency::HandlerResponse;
///
/// /// A response of a framework whose bodies are not `Send`.
/// struct Local(std::rc::Rc<Vec<u8>>, bool);
/// impl HeaderPairs for Local {
///     fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
///         each("content-type", b"text/plain");
///     }
/// }
/// impl HandlerResponse for Local {
///     fn status(&self) -> u16 { 201 }
///     async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, BodyFailed> {
///         Ok(std::mem::replace(&mut self.1, false).then(|| self.0.to_vec()))
///     }
/// }
/// # let _ = Local(Default::default(), true);
/// ```
pub trait HandlerResponse: HeaderPairs {
    /// The status code.
    fn status(&self) -> u16;

    /// The next chunk of body bytes (non-data parts such as trailers are skipped and kept by
    /// the implementation); `Ok(None)` once the body has ended.
    fn next_chunk(&mut self) -> impl Future<Output = Result<Option<Vec<u8>>, BodyFailed>>;
}

impl<R: OriginResponse> HandlerResponse for R {
    fn status(&self) -> u16 {
        OriginResponse::status(self)
    }

    fn next_chunk(&mut self) -> impl Future<Output = Result<Option<Vec<u8>>, BodyFailed>> {
        OriginResponse::next_chunk(self)
    }
}

/// A response body read up to a limit.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum BodyRead {
    /// The whole body, within the limit.
    Whole(Vec<u8>),
    /// More than the limit (declared by `Content-Length`, or found while reading).
    TooLarge,
    /// The body failed after these bytes.
    Failed(Vec<u8>),
}

/// Reads `response`'s body until it ends or passes `limit` bytes; a `Content-Length` over the
/// limit is refused before a byte is read.
pub(super) async fn read_body(response: &mut impl HandlerResponse, limit: u64) -> BodyRead {
    let mut declared = None;
    response.for_each_header(&mut |name, value| {
        if name.eq_ignore_ascii_case("content-length") {
            declared = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok());
        }
    });
    if declared.is_some_and(|length| length > limit) {
        return BodyRead::TooLarge;
    }
    let mut body = Vec::new();
    loop {
        match response.next_chunk().await {
            Ok(Some(chunk)) => {
                body.extend_from_slice(&chunk);
                if body.len() as u64 > limit {
                    return BodyRead::TooLarge;
                }
            }
            Ok(None) => return BodyRead::Whole(body),
            Err(BodyFailed) => return BodyRead::Failed(body),
        }
    }
}
