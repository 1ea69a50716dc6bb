//! The handler's response as lock-core's idempotency layer reads it.

use std::error::Error as StdError;
use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::ServiceResponse;
use actix_web::http::header::CONTENT_LENGTH;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use lock_core::http::cache::{BodyFailed, HeaderPairs};
use lock_core::http::idempotency::HandlerResponse;

/// A handler's response being read: its request (needed to answer), its head, its body, and
/// the error the body failed with, if it did.
pub(super) struct Handled<B> {
    request: HttpRequest,
    head: HttpResponse<()>,
    body: Pin<Box<B>>,
    /// The body's size when actix knows it and the head has no `Content-Length` (actix sends
    /// one from it): read as one, so a body over the limit is refused without being read.
    length: Option<u64>,
    error: Option<Box<dyn StdError>>,
}

impl<B: MessageBody> Handled<B> {
    pub(super) fn new(response: ServiceResponse<B>) -> Self {
        let (request, response) = response.into_parts();
        let (head, body) = response.into_parts();
        let length = match body.size() {
            BodySize::Sized(length) if !head.headers().contains_key(CONTENT_LENGTH) => Some(length),
            _ => None,
        };
        Self {
            request,
            head,
            body: Box::pin(body),
            length,
            error: None,
        }
    }

    /// The response to send: `read`, the body as far as it was read, then the error it failed
    /// with (if it did).
    pub(super) fn into_response(self, read: Vec<u8>) -> ServiceResponse<BoxBody> {
        let body = match self.error {
            Some(error) => BoxBody::new(Failed {
                read: (!read.is_empty()).then(|| Bytes::from(read)),
                error: Some(error),
            }),
            None => BoxBody::new(read),
        };
        ServiceResponse::new(self.request, self.head.set_body(body))
    }

    /// The request, to answer it with another response.
    pub(super) fn into_request(self) -> HttpRequest {
        self.request
    }
}

impl<B> HeaderPairs for Handled<B> {
    fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
        for (name, value) in self.head.headers() {
            each(name.as_str(), value.as_bytes());
        }
        if let Some(length) = self.length {
            each(CONTENT_LENGTH.as_str(), length.to_string().as_bytes());
        }
    }
}

impl<B: MessageBody> HandlerResponse for Handled<B> {
    fn status(&self) -> u16 {
        self.head.status().as_u16()
    }

    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, BodyFailed> {
        if self.error.is_some() {
            return Err(BodyFailed);
        }
        match std::future::poll_fn(|cx| self.body.as_mut().poll_next(cx)).await {
            Some(Ok(chunk)) => Ok(Some(chunk.to_vec())),
            Some(Err(error)) => {
                self.error = Some(error.into());
                Err(BodyFailed)
            }
            None => Ok(None),
        }
    }
}

/// The part of a handler's body read before it failed, then its error.
struct Failed {
    read: Option<Bytes>,
    error: Option<Box<dyn StdError>>,
}

impl MessageBody for Failed {
    type Error = Box<dyn StdError>;

    fn size(&self) -> BodySize {
        BodySize::Stream
    }

    fn poll_next(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        if let Some(read) = self.read.take() {
            return Poll::Ready(Some(Ok(read)));
        }
        Poll::Ready(self.error.take().map(Err))
    }
}
