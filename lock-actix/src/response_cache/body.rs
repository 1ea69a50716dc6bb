//! [`ResponseCacheBody`]: what the response cache middleware answers with.

use std::collections::VecDeque;
use std::error::Error as StdError;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use actix_web::body::{BodySize, MessageBody};
use bytes::Bytes;
use pin_project_lite::pin_project;

pin_project! {
    /// The body of a response from [`ResponseCache`](super::ResponseCache): a stored or
    /// generated body, the handler's body untouched, or the handler's body resumed after the
    /// chunks the cache read from it.
    ///
    /// ```
    /// # fn is_body<B: actix_web::body::MessageBody>() {}
    /// is_body::<lock_actix::ResponseCacheBody<actix_web::body::BoxBody>>();
    /// ```
    pub struct ResponseCacheBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<B> {
        Full { data: Bytes },
        Untouched { #[pin] body: B },
        Resumed {
            read: VecDeque<Bytes>,
            error: Option<Box<dyn StdError>>,
            rest: Option<Pin<Box<B>>>,
        },
    }
}

impl<B> ResponseCacheBody<B> {
    pub(crate) fn full(data: Vec<u8>) -> Self {
        Self {
            kind: Kind::Full {
                data: Bytes::from(data),
            },
        }
    }

    pub(crate) fn untouched(body: B) -> Self {
        Self {
            kind: Kind::Untouched { body },
        }
    }

    /// The chunks already read, then the error the body failed with or the rest of it.
    pub(crate) fn resumed(
        read: Vec<Bytes>,
        error: Option<Box<dyn StdError>>,
        rest: Option<Pin<Box<B>>>,
    ) -> Self {
        Self {
            kind: Kind::Resumed {
                read: read.into(),
                error,
                rest,
            },
        }
    }
}

impl<B: MessageBody> MessageBody for ResponseCacheBody<B> {
    type Error = Box<dyn StdError>;

    fn size(&self) -> BodySize {
        match &self.kind {
            Kind::Full { data } => BodySize::Sized(data.len() as u64),
            Kind::Untouched { body } => body.size(),
            Kind::Resumed { read, error, rest } => {
                let read_len: u64 = read.iter().map(|chunk| chunk.len() as u64).sum();
                match (error, rest) {
                    (None, None) => BodySize::Sized(read_len),
                    (None, Some(rest)) => match rest.size() {
                        BodySize::Sized(left) => BodySize::Sized(read_len + left),
                        BodySize::None if read.is_empty() => BodySize::None,
                        _ => BodySize::Stream,
                    },
                    (Some(_), _) => BodySize::Stream,
                }
            }
        }
    }

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        match self.project().kind.project() {
            KindProj::Full { data } => {
                if data.is_empty() {
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Ok(std::mem::take(data))))
            }
            KindProj::Untouched { body } => body.poll_next(cx).map_err(Into::into),
            KindProj::Resumed { read, error, rest } => {
                if let Some(chunk) = read.pop_front() {
                    return Poll::Ready(Some(Ok(chunk)));
                }
                if let Some(error) = error.take() {
                    return Poll::Ready(Some(Err(error)));
                }
                let Some(body) = rest else {
                    return Poll::Ready(None);
                };
                let next = ready!(body.as_mut().poll_next(cx));
                if next.is_none() {
                    *rest = None;
                }
                Poll::Ready(next.map(|chunk| chunk.map_err(Into::into)))
            }
        }
    }
}

impl<B> std::fmt::Debug for ResponseCacheBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.kind {
            Kind::Full { .. } => "Full",
            Kind::Untouched { .. } => "Untouched",
            Kind::Resumed { .. } => "Resumed",
        };
        f.debug_struct("ResponseCacheBody")
            .field("kind", &kind)
            .finish_non_exhaustive()
    }
}
