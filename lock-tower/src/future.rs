//! The response future of [`KeyedLockService`](crate::KeyedLockService).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

type Boxed<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Waits for the lock, runs the inner service under it and releases it; or resolves at once
/// to the layer's own rejection (409/429/503/400) as an `Ok` response.
///
/// ```
/// # fn is_future<F: std::future::Future>() {}
/// is_future::<lock_tower::ResponseFuture<Result<http::Response<String>, std::convert::Infallible>>>();
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct ResponseFuture<T> {
    // Boxed: the lock sequence is an async fn (acquire, race the lost signal, release) whose
    // state machine cannot be named; one allocation per locked request is noise next to the
    // backend round trips.
    inner: Boxed<T>,
}

impl<T> ResponseFuture<T> {
    pub(crate) fn new(inner: impl Future<Output = T> + Send + 'static) -> Self {
        Self {
            inner: Box::pin(inner),
        }
    }
}

impl<T> Future for ResponseFuture<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        self.inner.as_mut().poll(cx)
    }
}

impl<T> fmt::Debug for ResponseFuture<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}
