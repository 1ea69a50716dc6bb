//! [`declares_over`]: whether a message's `Content-Length` already says its body is over a
//! limit, the one check every body-reading layer makes before it reads a byte.

/// Whether a raw `Content-Length` value says the body is longer than `limit` bytes. An absent
/// or unparsable value does not (the reader then counts the bytes as they come); the value is
/// read as ASCII digits, surrounding white space ignored.
///
/// The keyed lock's body key ([`BodyLimit::refuses_declared`](super::keyed::BodyLimit::refuses_declared)),
/// the idempotency layer (the request it fingerprints and the response it keeps) and both
/// adapters ask this, so a body refused by one is refused by all.
///
/// ```
/// use lock_core::http::declares_over;
///
/// assert!(declares_over(Some(b"1025"), 1024));
/// assert!(!declares_over(Some(b"1024"), 1024));
/// assert!(declares_over(Some(b" 9 "), 8));
/// assert!(!declares_over(Some(b"many"), 8), "unparsable: the read counts");
/// assert!(!declares_over(None, 0), "unknown: the read counts");
/// ```
#[must_use]
pub fn declares_over(content_length: Option<&[u8]>, limit: usize) -> bool {
    content_length
        .and_then(|value| std::str::from_utf8(value).ok()?.trim().parse::<u64>().ok())
        .is_some_and(|length| length > limit as u64)
}
