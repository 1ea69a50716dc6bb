//! Reading a request body whole, up to a limit: the idempotency layer keeps it,
//! [`BodyKey`](crate::BodyKey) finds a key in it.

use std::future::poll_fn;
use std::pin::pin;

use bytes::{Buf, Bytes};
use http::header::CONTENT_LENGTH;
use http::{HeaderMap, HeaderValue};
use http_body::Body;
use lock_core::http::declares_over;

/// A body read up to the limit.
pub(crate) enum Read {
    /// All of it (trailers are not part of what is kept).
    Whole(Bytes),
    /// Longer than the limit (said so, or found so); what was read is dropped.
    TooLarge,
    /// It failed before its end.
    Failed,
}

/// Reads `body` whole unless it is (or its head, `headers`, says it is) longer than `limit`.
pub(crate) async fn read<B: Body>(body: B, headers: &HeaderMap, limit: usize) -> Read {
    let declared = headers.get(CONTENT_LENGTH).map(HeaderValue::as_bytes);
    if declares_over(declared, limit) || body.size_hint().lower() > limit as u64 {
        return Read::TooLarge;
    }
    let mut body = pin!(body);
    let mut data = Vec::new();
    while let Some(frame) = poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let frame = match frame {
            Ok(frame) => frame,
            Err(_) => return Read::Failed,
        };
        // Trailers are skipped.
        if let Ok(mut chunk) = frame.into_data() {
            if data.len() + chunk.remaining() > limit {
                return Read::TooLarge;
            }
            while chunk.has_remaining() {
                let part = chunk.chunk();
                data.extend_from_slice(part);
                let read = part.len();
                chunk.advance(read);
            }
        }
    }
    Read::Whole(data.into())
}
