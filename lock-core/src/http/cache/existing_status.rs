//! [`existing_cache_status`]: the `Cache-Status` a response already carries, which this cache's
//! member follows.

use super::{HeaderPairs, CACHE_STATUS};

/// The response's own `Cache-Status` lines (from caches nearer the application), joined with
/// `", "` in order; lines that are not visible ASCII are left out, as a header map's text view
/// leaves them. `None` without any. The adapters hand it to
/// [`Bypass::cache_status_value`](super::Bypass::cache_status_value) and
/// [`FromOrigin::cache_status_value`](super::FromOrigin::cache_status_value).
///
/// ```
/// use lock_core::http::cache::existing_cache_status;
///
/// let headers = [("Cache-Status", &b"edge; hit"[..]), ("cache-status", b"app; fwd=miss"), ("cache-status", b"caf\xc3\xa9")];
/// assert_eq!(existing_cache_status(&headers).as_deref(), Some("edge; hit, app; fwd=miss"));
/// assert_eq!(existing_cache_status(&[("age", "1")]), None);
/// ```
#[must_use]
pub fn existing_cache_status(headers: &(impl HeaderPairs + ?Sized)) -> Option<String> {
    let mut lines: Vec<String> = Vec::new();
    headers.for_each_header(&mut |name, value| {
        let visible = value.iter().all(|&b| b == b'\t' || (32..127).contains(&b));
        if name.eq_ignore_ascii_case(CACHE_STATUS) && visible {
            lines.extend(std::str::from_utf8(value).ok().map(str::to_owned));
        }
    });
    (!lines.is_empty()).then(|| lines.join(", "))
}
