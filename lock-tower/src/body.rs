//! [`LayerBody`]: the body of the requests and responses that went through a layer of this
//! crate that reads bodies (the response cache, idempotency).

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes};
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

pin_project! {
    /// A body that went through [`ResponseCacheService`](crate::ResponseCacheService) or
    /// [`IdempotencyService`](crate::IdempotencyService): a stored or generated body (a hit,
    /// a replay, a problem), the application's body untouched (a request the layer passes
    /// on), or a body the layer read (to store or fingerprint it) sent on from the bytes read,
    /// then the error it failed with or the rest of it, then its trailers. Its frames are
    /// `Bytes`; its error is the wrapped body's. Named [`ResponseCacheBody`] and
    /// [`IdempotencyBody`] after the layers.
    ///
    /// axum's router takes it as any other request body:
    ///
    /// ```
    /// # fn is_body<B: http_body::Body<Data = bytes::Bytes>>() {}
    /// is_body::<lock_tower::LayerBody<axum::body::Body>>();
    /// ```
    pub struct LayerBody<B: Body> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<B: Body> {
        Full { data: Option<Bytes> },
        Untouched { #[pin] body: B },
        Resumed {
            prefix: Option<Bytes>,
            error: Option<B::Error>,
            rest: Option<Pin<Box<B>>>,
            trailers: Option<HeaderMap>,
        },
    }
}

/// The response cache service's response body.
pub type ResponseCacheBody<B> = LayerBody<B>;

/// The idempotency service's body: the inner service's request body, and the response body.
pub type IdempotencyBody<B> = LayerBody<B>;

impl<B: Body> LayerBody<B> {
    pub(crate) fn full(data: impl Into<Bytes>) -> Self {
        let data: Bytes = data.into();
        let data = (!data.is_empty()).then_some(data);
        Self {
            kind: Kind::Full { data },
        }
    }

    pub(crate) fn untouched(body: B) -> Self {
        Self {
            kind: Kind::Untouched { body },
        }
    }

    /// `prefix`, then the error the body failed with, or the rest of the body, then its
    /// trailers.
    pub(crate) fn resumed(
        prefix: impl Into<Bytes>,
        error: Option<B::Error>,
        rest: Option<Pin<Box<B>>>,
        trailers: Option<HeaderMap>,
    ) -> Self {
        let prefix: Bytes = prefix.into();
        let prefix = (!prefix.is_empty()).then_some(prefix);
        Self {
            kind: Kind::Resumed {
                prefix,
                error,
                rest,
                trailers,
            },
        }
    }
}

fn to_bytes<D: Buf>(frame: Frame<D>) -> Frame<Bytes> {
    frame.map_data(|mut data| data.copy_to_bytes(data.remaining()))
}

impl<B: Body> Body for LayerBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match self.project().kind.project() {
            KindProj::Full { data } => Poll::Ready(data.take().map(|data| Ok(Frame::data(data)))),
            KindProj::Untouched { body } => body
                .poll_frame(cx)
                .map(|frame| frame.map(|frame| frame.map(to_bytes))),
            KindProj::Resumed {
                prefix,
                error,
                rest,
                trailers,
            } => {
                if let Some(prefix) = prefix.take() {
                    return Poll::Ready(Some(Ok(Frame::data(prefix))));
                }
                if let Some(error) = error.take() {
                    return Poll::Ready(Some(Err(error)));
                }
                if let Some(body) = rest {
                    match ready!(body.as_mut().poll_frame(cx)) {
                        Some(frame) => return Poll::Ready(Some(frame.map(to_bytes))),
                        None => *rest = None,
                    }
                }
                Poll::Ready(trailers.take().map(|t| Ok(Frame::trailers(t))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Full { data } => data.is_none(),
            Kind::Untouched { body } => body.is_end_stream(),
            Kind::Resumed {
                prefix,
                error,
                rest,
                trailers,
            } => {
                prefix.is_none()
                    && error.is_none()
                    && trailers.is_none()
                    && rest.as_ref().is_none_or(|body| body.is_end_stream())
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full { data } => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
            Kind::Untouched { body } => body.size_hint(),
            Kind::Resumed { prefix, rest, .. } => {
                let read = prefix.as_ref().map_or(0, |p| p.len() as u64);
                let Some(body) = rest else {
                    return SizeHint::with_exact(read);
                };
                let left = body.size_hint();
                let mut hint = SizeHint::new();
                hint.set_lower(left.lower().saturating_add(read));
                if let Some(upper) = left.upper() {
                    hint.set_upper(upper.saturating_add(read));
                }
                hint
            }
        }
    }
}

impl<B: Body> std::fmt::Debug for LayerBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.kind {
            Kind::Full { .. } => "Full",
            Kind::Untouched { .. } => "Untouched",
            Kind::Resumed { .. } => "Resumed",
        };
        f.debug_struct("LayerBody")
            .field("kind", &kind)
            .finish_non_exhaustive()
    }
}
