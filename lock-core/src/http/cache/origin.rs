//! The application's response as the cache reads it: a head now, the body chunk by chunk, so
//! a body larger than the rules allow is never buffered whole.

use std::future::Future;

use super::headers::HeaderPairs;
use crate::http::idempotency::HandlerResponse;

/// How the cache forwards a request to the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForwardAs {
    /// As it was sent.
    AsSent,
    /// As a `GET`: a `HEAD` whose response is to be stored, so the entry holds the body.
    Get,
}

/// The body of an [`OriginResponse`] failed; the response keeps the error to hand its own
/// client, which then receives the bytes read so far followed by that error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the application's response body failed")]
pub struct BodyFailed;

/// The application's answer, as an adapter hands it to [`CacheCall::serve`]: status and every
/// header line now, the body pulled one chunk at a time.
///
/// The adapter's type keeps whatever the cache does not read: when the response is not
/// stored, or its body turns out larger than the rules allow, the cache hands the response
/// back ([`Served::Origin`]) with the bytes it already read, and the adapter sends those, then
/// the rest of the body (or the error the body failed with, or nothing if it ended).
///
/// ```
/// use lock_core::http::cache::{BodyFailed, HeaderPairs, OriginResponse};
///
/// /// A response whose body is a list of chunks.
/// struct Canned {
///     headers: Vec<(String, Vec<u8>)>,
///     chunks: std::collections::VecDeque<Vec<u8>>,
/// }
///
/// impl HeaderPairs for Canned {
///     fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
///         self.headers.for_each_header(each);
///     }
/// }
///
/// impl OriginResponse for Canned {
///     fn status(&self) -> u16 {
///         200
///     }
///     async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, BodyFailed> {
///         Ok(self.chunks.pop_front())
///     }
/// }
/// # let _ = Canned { headers: Vec::new(), chunks: Default::default() };
/// ```
///
/// [`CacheCall::serve`]: super::CacheCall::serve
/// [`Served::Origin`]: super::Served::Origin
pub trait OriginResponse: HeaderPairs + Send + 'static {
    /// The status code.
    fn status(&self) -> u16;

    /// The next chunk of body bytes (non-data parts such as trailers are skipped and kept by
    /// the implementation); `Ok(None)` once the body has ended.
    fn next_chunk(&mut self) -> impl Future<Output = Result<Option<Vec<u8>>, BodyFailed>> + Send;
}

/// A body read up to a limit.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadBody {
    /// The whole body, within the limit.
    Complete(Vec<u8>),
    /// More than the limit: the bytes read so far (the limit and the chunk that crossed it).
    TooLarge(Vec<u8>),
    /// The body failed after these bytes.
    Failed(Vec<u8>),
}

/// Reads `response`'s body until it ends or passes `limit` bytes (the response cache's
/// computation, and the idempotency layer's handler response).
pub(crate) async fn read_body(response: &mut impl HandlerResponse, limit: u64) -> ReadBody {
    let mut body = Vec::new();
    loop {
        match response.next_chunk().await {
            Ok(Some(chunk)) => {
                body.extend_from_slice(&chunk);
                if body.len() as u64 > limit {
                    return ReadBody::TooLarge(body);
                }
            }
            Ok(None) => return ReadBody::Complete(body),
            Err(BodyFailed) => return ReadBody::Failed(body),
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::VecDeque;

    use super::*;

    /// A response whose body is a list of chunks, failing where a chunk is `None`.
    pub(crate) struct Canned {
        pub(crate) status: u16,
        pub(crate) headers: Vec<(String, Vec<u8>)>,
        pub(crate) chunks: VecDeque<Option<Vec<u8>>>,
        pub(crate) pulled: usize,
    }

    impl Canned {
        pub(crate) fn new(status: u16, headers: &[(&str, &str)], chunks: &[&str]) -> Self {
            Self {
                status,
                headers: headers
                    .iter()
                    .map(|(n, v)| ((*n).to_owned(), v.as_bytes().to_vec()))
                    .collect(),
                chunks: chunks.iter().map(|c| Some(c.as_bytes().to_vec())).collect(),
                pulled: 0,
            }
        }
    }

    impl HeaderPairs for Canned {
        fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
            self.headers.for_each_header(each);
        }
    }

    impl OriginResponse for Canned {
        fn status(&self) -> u16 {
            self.status
        }

        async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, BodyFailed> {
            match self.chunks.pop_front() {
                Some(Some(chunk)) => {
                    self.pulled += 1;
                    Ok(Some(chunk))
                }
                Some(None) => Err(BodyFailed),
                None => Ok(None),
            }
        }
    }

    #[tokio::test]
    async fn reads_up_to_the_limit_and_no_further() {
        let mut small = Canned::new(200, &[], &["ab", "cd"]);
        assert_eq!(
            read_body(&mut small, 4).await,
            ReadBody::Complete(b"abcd".to_vec())
        );
        let mut large = Canned::new(200, &[], &["ab", "cde", "fg", "hi"]);
        assert_eq!(
            read_body(&mut large, 4).await,
            ReadBody::TooLarge(b"abcde".to_vec())
        );
        assert_eq!(large.pulled, 2, "the rest stays in the response");
        let mut failing = Canned::new(200, &[], &["ab"]);
        failing.chunks.push_back(None);
        assert_eq!(
            read_body(&mut failing, 4).await,
            ReadBody::Failed(b"ab".to_vec())
        );
    }
}
