//! [`IdempotencyBody`]: the request body the inner service receives, and the response body
//! the layer answers with.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

pin_project! {
    /// A body that went through [`IdempotencyService`](super::IdempotencyService): the
    /// original body untouched (a request the layer passes on, and its response), or one the
    /// layer read whole (a handled request's body, read to fingerprint it; the handler's
    /// response, read to keep it) or made itself (a replay, a problem). Its frames are
    /// `Bytes`; its error is the wrapped body's: a body that failed while the layer read it
    /// fails again, after the bytes read, when it is sent on.
    ///
    /// axum's router takes it as any other request body:
    ///
    /// ```
    /// # fn is_body<B: http_body::Body<Data = bytes::Bytes>>() {}
    /// is_body::<lock_tower::IdempotencyBody<axum::body::Body>>();
    /// ```
    pub struct IdempotencyBody<B: Body> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<B: Body> {
        Untouched { #[pin] body: B },
        Read {
            data: Option<Bytes>,
            error: Option<B::Error>,
            trailers: Option<HeaderMap>,
        },
    }
}

impl<B: Body> IdempotencyBody<B> {
    pub(crate) fn untouched(body: B) -> Self {
        Self {
            kind: Kind::Untouched { body },
        }
    }

    pub(crate) fn full(data: impl Into<Bytes>) -> Self {
        Self::read(data.into(), None, None)
    }

    /// `data`, then `error` (the body failed after it) or `trailers`.
    pub(crate) fn read(data: Bytes, error: Option<B::Error>, trailers: Option<HeaderMap>) -> Self {
        Self {
            kind: Kind::Read {
                data: (!data.is_empty()).then_some(data),
                error,
                trailers,
            },
        }
    }
}

fn to_bytes<D: Buf>(frame: Frame<D>) -> Frame<Bytes> {
    frame.map_data(|mut data| data.copy_to_bytes(data.remaining()))
}

impl<B: Body> Body for IdempotencyBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match self.project().kind.project() {
            KindProj::Untouched { body } => body
                .poll_frame(cx)
                .map(|frame| frame.map(|frame| frame.map(to_bytes))),
            KindProj::Read {
                data,
                error,
                trailers,
            } => {
                if let Some(data) = data.take() {
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                if let Some(error) = error.take() {
                    return Poll::Ready(Some(Err(error)));
                }
                Poll::Ready(
                    trailers
                        .take()
                        .map(|trailers| Ok(Frame::trailers(trailers))),
                )
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Untouched { body } => body.is_end_stream(),
            Kind::Read {
                data,
                error,
                trailers,
            } => data.is_none() && error.is_none() && trailers.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Untouched { body } => body.size_hint(),
            Kind::Read { data, error, .. } => {
                let read = data.as_ref().map_or(0, |data| data.len() as u64);
                if error.is_some() {
                    // Fails before it ends: no promise of a length.
                    let mut hint = SizeHint::new();
                    hint.set_lower(read);
                    hint
                } else {
                    SizeHint::with_exact(read)
                }
            }
        }
    }
}

impl<B: Body> std::fmt::Debug for IdempotencyBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.kind {
            Kind::Untouched { .. } => "Untouched",
            Kind::Read { .. } => "Read",
        };
        f.debug_struct("IdempotencyBody")
            .field("kind", &kind)
            .finish_non_exhaustive()
    }
}
