//! A response as the response cache and the idempotency records store it: status, the headers the response decision kept, the
//! body, and the two durations a replay needs (how old the response was when stored, how
//! long it was fresh), in a small binary format that is read back without ever panicking.
//!
//! ```text
//! "LCR1"  status:u16  initial-age-secs:u32  fresh-ms:u64  header-count:u16
//!         { name-len:u16 name  value-len:u32 value }*  body (the rest)
//! ```
//!
//! Integers are big-endian. Names are stored lower case and must be HTTP tokens; values may
//! not hold CR, LF or NUL; the status is a final status (200–599). Anything else, or a
//! length that runs past the end, is a [`StoredResponseError`].

use std::time::Duration;

const MAGIC: &[u8; 4] = b"LCR1";

/// A response as stored, and as replayed to later requests.
///
/// ```
/// use std::time::Duration;
/// use lock_core::results::StoredResponse;
///
/// let stored = StoredResponse {
///     status: 200,
///     headers: vec![("content-type".into(), b"text/plain".to_vec())],
///     body: b"lamp".to_vec(),
///     initial_age: Duration::from_secs(3),
///     fresh: Duration::from_secs(60),
/// };
/// let bytes = stored.encode();
/// assert_eq!(StoredResponse::decode(&bytes).unwrap(), stored);
/// assert!(StoredResponse::decode(b"garbage").is_err());
/// ```
///
/// Not `#[non_exhaustive]`: its fields are the stored format; another field would be another
/// format (a new marker), not an addition callers could ignore.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredResponse {
    /// The status code.
    pub status: u16,
    /// The headers to replay (names lower case): those the response cache's decision kept, or
    /// those an idempotent request's replays carry.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The whole body.
    pub body: Vec<u8>,
    /// How old the response already was when it was stored (its `Age`); whole seconds.
    pub initial_age: Duration,
    /// How long it was fresh from the moment it was stored (for `Cache-Status` `ttl`).
    pub fresh: Duration,
}

/// Why stored bytes are not a [`StoredResponse`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoredResponseError {
    /// The bytes do not start with this format's marker (another format or version).
    #[error("not a stored response (unknown format marker)")]
    Format,
    /// A length runs past the end of the bytes.
    #[error("the stored response is truncated")]
    Truncated,
    /// The status is not a final status from 200 to 599.
    #[error("the stored status {0} is not a final status")]
    Status(u16),
    /// A header name is not a lower-case HTTP token.
    #[error("a stored header name is not a lower-case token")]
    HeaderName,
    /// A header value holds CR, LF or NUL.
    #[error("a stored header value holds CR, LF or NUL")]
    HeaderValue,
}

impl StoredResponse {
    /// A response to replay as it is: no age when stored, no freshness (what idempotency
    /// records keep).
    ///
    /// ```
    /// use lock_core::results::StoredResponse;
    ///
    /// let receipt = StoredResponse::new(201, vec![("content-type".into(), b"application/json".to_vec())], b"{}".to_vec());
    /// assert_eq!((receipt.status, receipt.initial_age.as_secs(), receipt.fresh.as_secs()), (201, 0, 0));
    /// ```
    #[must_use]
    pub fn new(status: u16, headers: Vec<(String, Vec<u8>)>, body: Vec<u8>) -> Self {
        Self {
            status,
            headers,
            body,
            initial_age: Duration::ZERO,
            fresh: Duration::ZERO,
        }
    }

    /// The bytes to store. Header names and values longer than the format's length fields
    /// (64 KiB, 4 GiB) are not sent by any HTTP implementation; should one be, it is left
    /// out rather than stored cut.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let headers: Vec<&(String, Vec<u8>)> = self
            .headers
            .iter()
            .filter(|(n, v)| u16::try_from(n.len()).is_ok() && u32::try_from(v.len()).is_ok())
            .take(usize::from(u16::MAX))
            .collect();
        let size = 24
            + headers
                .iter()
                .map(|(n, v)| 6 + n.len() + v.len())
                .sum::<usize>()
            + self.body.len();
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.status.to_be_bytes());
        let age = u32::try_from(self.initial_age.as_secs()).unwrap_or(u32::MAX);
        out.extend_from_slice(&age.to_be_bytes());
        let fresh = u64::try_from(self.fresh.as_millis()).unwrap_or(u64::MAX);
        out.extend_from_slice(&fresh.to_be_bytes());
        // At most u16::MAX by the `take` above.
        out.extend_from_slice(&(headers.len() as u16).to_be_bytes());
        for (name, value) in headers {
            out.extend_from_slice(&(name.len() as u16).to_be_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&(value.len() as u32).to_be_bytes());
            out.extend_from_slice(value);
        }
        out.extend_from_slice(&self.body);
        out
    }

    /// Reads stored bytes back; any malformation is an error, never a panic.
    pub fn decode(bytes: &[u8]) -> Result<Self, StoredResponseError> {
        let mut reader = Reader(bytes);
        if reader.take(MAGIC.len())? != MAGIC {
            return Err(StoredResponseError::Format);
        }
        let status = u16::from_be_bytes(reader.array()?);
        if !(200..=599).contains(&status) {
            return Err(StoredResponseError::Status(status));
        }
        let initial_age = Duration::from_secs(u64::from(u32::from_be_bytes(reader.array()?)));
        let fresh = Duration::from_millis(u64::from_be_bytes(reader.array()?));
        let count = u16::from_be_bytes(reader.array()?);
        let mut headers = Vec::with_capacity(usize::from(count).min(64));
        for _ in 0..count {
            let len = u16::from_be_bytes(reader.array()?);
            let name = reader.take(usize::from(len))?;
            if !is_token(name) || name.iter().any(u8::is_ascii_uppercase) {
                return Err(StoredResponseError::HeaderName);
            }
            let len = u32::from_be_bytes(reader.array()?);
            let len = usize::try_from(len).map_err(|_| StoredResponseError::Truncated)?;
            let value = reader.take(len)?;
            if value.iter().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
                return Err(StoredResponseError::HeaderValue);
            }
            // A token is ASCII, so always UTF-8.
            let name = String::from_utf8_lossy(name).into_owned();
            headers.push((name, value.to_vec()));
        }
        Ok(Self {
            status,
            headers,
            body: reader.0.to_vec(),
            initial_age,
            fresh,
        })
    }
}

/// The unread rest of the bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], StoredResponseError> {
        if self.0.len() < n {
            return Err(StoredResponseError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], StoredResponseError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
}

/// Whether `bytes` is a `token` (RFC 9110 §5.6.2): one or more `tchar`; what a header name
/// must be.
pub(crate) fn is_token(bytes: &[u8]) -> bool {
    !bytes.is_empty()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StoredResponse {
        StoredResponse {
            status: 404,
            headers: vec![
                ("content-type".into(), b"application/json".to_vec()),
                ("vary".into(), b"accept-language".to_vec()),
                ("x-empty".into(), Vec::new()),
                ("x-bytes".into(), vec![0xff, b' ', 0x80]),
            ],
            body: b"{\"missing\":true}\n\0\xff".to_vec(),
            initial_age: Duration::from_secs(7),
            fresh: Duration::from_millis(61_500),
        }
    }

    #[test]
    fn round_trips() {
        let stored = sample();
        assert_eq!(StoredResponse::decode(&stored.encode()), Ok(stored));
        let empty = StoredResponse {
            status: 204,
            headers: Vec::new(),
            body: Vec::new(),
            initial_age: Duration::ZERO,
            fresh: Duration::from_secs(1),
        };
        assert_eq!(StoredResponse::decode(&empty.encode()), Ok(empty));
    }

    #[test]
    fn malformed_bytes_are_typed_errors() {
        let good = sample().encode();
        let patched = |at: usize, bytes: &[u8]| {
            let mut bad = good.clone();
            bad[at..at + bytes.len()].copy_from_slice(bytes);
            StoredResponse::decode(&bad)
        };
        use StoredResponseError as E;
        assert_eq!(StoredResponse::decode(b""), Err(E::Truncated));
        assert_eq!(StoredResponse::decode(b"lc1 V 0000"), Err(E::Format));
        assert_eq!(patched(4, &99u16.to_be_bytes()), Err(E::Status(99)));
        assert_eq!(patched(4, &600u16.to_be_bytes()), Err(E::Status(600)));
        // The first header name starts at 4 + 2 + 4 + 8 + 2 + 2 = 22.
        assert_eq!(patched(22, b"C"), Err(E::HeaderName));
        assert_eq!(patched(22, b" "), Err(E::HeaderName));
        // Its value starts after the 12-byte name and a 4-byte length.
        assert_eq!(patched(38, b"\r"), Err(E::HeaderValue));
        assert_eq!(patched(20, &u16::MAX.to_be_bytes()), Err(E::Truncated));
        assert_eq!(patched(34, &u32::MAX.to_be_bytes()), Err(E::Truncated));
        assert_eq!(patched(18, &u16::MAX.to_be_bytes()), Err(E::Truncated));
    }

    #[test]
    fn every_prefix_and_garbage_decodes_without_panicking() {
        // Whatever decodes encodes back to the same bytes: nothing is read loosely.
        let check = |bytes: &[u8]| {
            if let Ok(decoded) = StoredResponse::decode(bytes) {
                assert_eq!(decoded.encode(), bytes);
            }
        };
        let good = sample().encode();
        for end in 0..good.len() {
            // A prefix that ends inside the headers is truncated; one that ends inside the
            // body is a shorter body.
            check(&good[..end]);
        }
        for mut junk in crate::test_input::garbage(500) {
            check(&junk);
            junk.splice(0..0, MAGIC.iter().copied());
            check(&junk);
        }
    }
}
