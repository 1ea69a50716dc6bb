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
