//! [`BodyLimit`]: the decisions of a lock key read from the request body (the adapters'
//! `BodyKey`): how much is read, and what a body too large or unreadable answers.

use crate::http::{Rejection, RejectionKind};

/// How many bytes of a request body the middleware reads to find its lock key, and the
/// answers when that fails: a body over the limit (declared by `Content-Length` or found
/// while reading) is 413, a body that breaks off is 400, and a body without a key is
/// [`Rejection::missing_key`] of [`BodyLimit::DESCRIBE`]. The adapters read, put the body
/// back for the handler, and ask this type what to answer.
///
/// ```
/// use lock_core::http::keyed::BodyLimit;
///
/// let limit = BodyLimit::new(1024);
/// assert!(limit.refuses_declared(Some(b"1025")));
/// assert!(!limit.refuses_declared(Some(b"1024")));
/// assert!(!limit.refuses_declared(None), "unknown: read and count");
/// assert!(limit.refuses(1025));
/// assert_eq!(limit.too_large().response.status, 413);
/// assert_eq!(BodyLimit::unreadable().response.status, 400);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyLimit {
    max_bytes: usize,
}

impl BodyLimit {
    /// Where the key is looked for, for the 400 answer of a body without one.
    pub const DESCRIBE: &'static str = "lock key in the request body";

    /// At most `max_bytes` bytes are read.
    ///
    /// ```
    /// assert_eq!(lock_core::http::keyed::BodyLimit::new(64).max_bytes(), 64);
    /// ```
    #[must_use]
    pub const fn new(max_bytes: usize) -> Self {
        Self { max_bytes }
    }

    /// The limit in bytes.
    ///
    /// ```
    /// assert_eq!(lock_core::http::keyed::BodyLimit::new(8).max_bytes(), 8);
    /// ```
    #[must_use]
    pub const fn max_bytes(self) -> usize {
        self.max_bytes
    }

    /// Whether a raw `Content-Length` value already says the body is over the limit (an
    /// absent or unparsable one does not: the read counts); [`declares_over`](crate::http::declares_over)
    /// of this limit.
    ///
    /// ```
    /// assert!(lock_core::http::keyed::BodyLimit::new(2).refuses_declared(Some(b"3")));
    /// ```
    #[must_use]
    pub fn refuses_declared(self, content_length: Option<&[u8]>) -> bool {
        crate::http::declares_over(content_length, self.max_bytes)
    }

    /// Whether `read` bytes are over the limit.
    ///
    /// ```
    /// assert!(!lock_core::http::keyed::BodyLimit::new(2).refuses(2));
    /// ```
    #[must_use]
    pub const fn refuses(self, read: usize) -> bool {
        read > self.max_bytes
    }

    /// The answer for a body over the limit: 413, nothing runs. Counted as an answer of the
    /// keyed-lock middleware.
    ///
    /// ```
    /// let answer = lock_core::http::keyed::BodyLimit::new(16).too_large();
    /// assert!(String::from_utf8(answer.response.body).unwrap().contains("at most 16 bytes"));
    /// ```
    #[must_use]
    pub fn too_large(self) -> Rejection {
        let rejection = Rejection::new(
            RejectionKind::TooLarge,
            413,
            None,
            "Request too large",
            &format!(
                "the body of a request locked by a key in its body may hold at most {} bytes",
                self.max_bytes
            ),
            None,
        );
        rejection.record_keyed_lock();
        rejection
    }

    /// The answer for a body that could not be read: 400, nothing runs. Counted as an answer
    /// of the keyed-lock middleware.
    ///
    /// ```
    /// use lock_core::http::keyed::BodyLimit;
    /// use lock_core::http::RejectionKind;
    ///
    /// assert_eq!(BodyLimit::unreadable().kind, RejectionKind::BadInput);
    /// ```
    #[must_use]
    pub fn unreadable() -> Rejection {
        let rejection = Rejection::unreadable_body();
        rejection.record_keyed_lock();
        rejection
    }

    /// The answer for a body read whole in which the application found no key: 400.
    ///
    /// ```
    /// use lock_core::http::keyed::BodyLimit;
    /// use lock_core::http::RejectionKind;
    ///
    /// assert_eq!(BodyLimit::missing_key().kind, RejectionKind::BadKey);
    /// ```
    #[must_use]
    pub fn missing_key() -> Rejection {
        Rejection::missing_key(Self::DESCRIBE)
    }
}
