//! The application's `http::Response` as lock-core reads it (the response cache and the
//! idempotency layer): its head now, its body chunk by chunk.

use std::pin::Pin;

use bytes::Buf;
use http::header::CONTENT_LENGTH;
use http::response::Parts;
use http::{HeaderMap, Response};
use http_body::Body;
use lock_core::http::cache::{BodyFailed, HeaderPairs, OriginResponse};

/// A response being read by the cache: its head, its body, and what reading found (the end,
/// an error, trailers), so whatever the cache does not keep reaches the client as it was.
pub(crate) struct Origin<B: Body> {
    pub(crate) parts: Parts,
    pub(crate) body: Pin<Box<B>>,
    pub(crate) ended: bool,
    pub(crate) error: Option<B::Error>,
    pub(crate) trailers: Option<HeaderMap>,
    /// The body's exact size when it is known and the head has no `Content-Length` (hyper
    /// sends one from it): the cache reads it as one, so a body over the limit is passed on
    /// without a byte being read.
    length: Option<u64>,
}

impl<B: Body> Origin<B> {
    pub(crate) fn new(response: Response<B>) -> Self {
        let (parts, body) = response.into_parts();
        let length = body
            .size_hint()
            .exact()
            .filter(|_| !parts.headers.contains_key(CONTENT_LENGTH));
        Self {
            parts,
            body: Box::pin(body),
            ended: false,
            error: None,
            trailers: None,
            length,
        }
    }
}

impl<B: Body> HeaderPairs for Origin<B> {
    fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
        for (name, value) in &self.parts.headers {
            each(name.as_str(), value.as_bytes());
        }
        if let Some(length) = self.length {
            each(CONTENT_LENGTH.as_str(), length.to_string().as_bytes());
        }
    }
}

impl<B> OriginResponse for Origin<B>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Send,
{
    fn status(&self) -> u16 {
        self.parts.status.as_u16()
    }

    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, BodyFailed> {
        loop {
            if self.error.is_some() {
                return Err(BodyFailed);
            }
            if self.ended {
                return Ok(None);
            }
            let frame = std::future::poll_fn(|cx| self.body.as_mut().poll_frame(cx)).await;
            match frame {
                None => self.ended = true,
                Some(Err(error)) => self.error = Some(error),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(mut data) => return Ok(Some(data.copy_to_bytes(data.remaining()).into())),
                    Err(frame) => {
                        if let Ok(trailers) = frame.into_trailers() {
                            self.trailers = Some(trailers);
                        }
                    }
                },
            }
        }
    }
}
