//! The handler's response as the cache's `Send` computation reads it: a copy of the head, and
//! the body pulled over a channel from the request's future, which owns the response.

use lock_core::http::cache::{BodyFailed, HeaderPairs, OriginResponse};
use tokio::sync::{mpsc, oneshot};

/// One body chunk asked for; the request's future answers on the enclosed channel.
pub(crate) type Ask = oneshot::Sender<Result<Option<Vec<u8>>, BodyFailed>>;

/// The handler failed; its `actix_web::Error` (not `Send`) stays with the request's future.
#[derive(Debug)]
pub(crate) struct HandlerFailed;

/// The handler's response, as the computation sees it. Dropping it tells the request's
/// future that the computation has read all it will.
pub(crate) struct ActixOrigin {
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    asks: mpsc::Sender<Ask>,
}

impl ActixOrigin {
    /// `length`: the body's size when actix knows it, which actix sends as
    /// `Content-Length` without it being among the headers; the cache sees it as one, so a
    /// body over the limit is passed on without a byte being read.
    pub(crate) fn new(
        status: u16,
        headers: &actix_web::http::header::HeaderMap,
        length: Option<u64>,
        asks: mpsc::Sender<Ask>,
    ) -> Self {
        let mut headers: Vec<(String, Vec<u8>)> = headers
            .iter()
            .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec()))
            .collect();
        if let Some(length) = length {
            if !headers.iter().any(|(name, _)| name == "content-length") {
                headers.push(("content-length".to_owned(), length.to_string().into_bytes()));
            }
        }
        Self {
            status,
            headers,
            asks,
        }
    }
}

impl HeaderPairs for ActixOrigin {
    fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
        self.headers.for_each_header(each);
    }
}

impl OriginResponse for ActixOrigin {
    fn status(&self) -> u16 {
        self.status
    }

    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, BodyFailed> {
        let (ask, answer) = oneshot::channel();
        self.asks.send(ask).await.map_err(|_| BodyFailed)?;
        answer.await.map_err(|_| BodyFailed)?
    }
}
