//! An idempotency record as a result store keeps it: in flight, completed or abandoned, under
//! the fencing token of the claim that wrote it.
//!
//! ```text
//! lc1 I <fence, 20 digits> <fingerprint, 64 hex> <started, ms since the epoch>\n
//! lc1 C <fence> <fingerprint> <completed, ms since the epoch>\n<the response, as StoredResponse>
//! lc1 A <fence>\n
//! ```
//!
//! `C` is final for every store: once completed, a record is replaced by nothing but its expiry.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Fingerprint;
use crate::results::StoredResponse;
use crate::results::{FENCE_DIGITS, VERSION};
use crate::{FencingToken, LockError};

/// The response a completed request is replayed with, and when it completed.
///
/// ```
/// use std::time::Duration;
/// use lock_core::results::StoredResponse;
/// use lock_core::idempotency::Completed;
/// use lock_core::FencingToken;
///
/// let response = StoredResponse {
///     status: 201,
///     headers: vec![("content-type".into(), b"application/json".to_vec())],
///     body: br#"{"id":7}"#.to_vec(),
///     initial_age: Duration::ZERO,
///     fresh: Duration::ZERO,
/// };
/// let completed = Completed::new(FencingToken::new(3), response);
/// assert_eq!(completed.response.status, 201);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Completed {
    /// The fencing token of the claim whose handler produced it.
    pub fencing_token: FencingToken,
    /// When it was stored (wall clock, ms precision).
    pub completed_at: SystemTime,
    /// Status, replayable headers and body (`initial_age` and `fresh` are unused here).
    pub response: StoredResponse,
}

impl Completed {
    /// A response completed now by the claim with `fence`.
    #[must_use]
    pub fn new(fence: FencingToken, response: StoredResponse) -> Self {
        Self {
            fencing_token: fence,
            completed_at: SystemTime::now(),
            response,
        }
    }
}

/// A record as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Record {
    /// A claim's handler is running (or its process died; the claim's lease tells which).
    InFlight {
        fence: FencingToken,
        fingerprint: Fingerprint,
    },
    Completed {
        fingerprint: Fingerprint,
        completed: Completed,
    },
    /// The claim ended without a response worth keeping (a 5xx, say); the next request runs.
    Abandoned { fence: FencingToken },
}

impl Record {
    pub(crate) fn encode_in_flight(fence: FencingToken, fingerprint: &Fingerprint) -> Vec<u8> {
        format!(
            "{VERSION} I {:0width$} {} {}\n",
            fence.get(),
            fingerprint.to_hex(),
            millis_since_epoch(SystemTime::now()),
            width = FENCE_DIGITS
        )
        .into_bytes()
    }

    pub(crate) fn encode_completed(fingerprint: &Fingerprint, completed: &Completed) -> Vec<u8> {
        let mut bytes = format!(
            "{VERSION} C {:0width$} {} {}\n",
            completed.fencing_token.get(),
            fingerprint.to_hex(),
            millis_since_epoch(completed.completed_at),
            width = FENCE_DIGITS
        )
        .into_bytes();
        bytes.extend_from_slice(&completed.response.encode());
        bytes
    }

    pub(crate) fn encode_abandoned(fence: FencingToken) -> Vec<u8> {
        format!(
            "{VERSION} A {:0width$}\n",
            fence.get(),
            width = FENCE_DIGITS
        )
        .into_bytes()
    }

    /// Reads a record back; anything malformed is a protocol error (never a panic).
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, LockError> {
        let malformed = |what: &str| LockError::Protocol {
            backend: "idempotency",
            detail: format!("malformed idempotency record: {what}"),
        };
        let line_end = bytes
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| malformed("no header line"))?;
        let header =
            std::str::from_utf8(&bytes[..line_end]).map_err(|_| malformed("header not UTF-8"))?;
        let mut fields = header.split(' ');
        if fields.next() != Some(VERSION) {
            return Err(malformed("unknown version"));
        }
        let kind = fields.next().ok_or_else(|| malformed("no kind"))?;
        let fence = fields
            .next()
            .filter(|digits| digits.len() == FENCE_DIGITS)
            .and_then(|digits| digits.parse::<u64>().ok())
            .map(FencingToken::new)
            .ok_or_else(|| malformed("bad fence"))?;
        let mut fingerprint = || {
            fields
                .next()
                .and_then(Fingerprint::from_hex)
                .ok_or_else(|| malformed("bad fingerprint"))
        };
        match kind {
            "I" => Ok(Self::InFlight {
                fence,
                fingerprint: fingerprint()?,
            }),
            "C" => {
                let fingerprint = fingerprint()?;
                let completed_at = fields
                    .next()
                    .and_then(|ms| ms.parse::<u64>().ok())
                    .map(|ms| UNIX_EPOCH + Duration::from_millis(ms))
                    .ok_or_else(|| malformed("bad completion time"))?;
                let response = StoredResponse::decode(&bytes[line_end + 1..])
                    .map_err(|error| malformed(&error.to_string()))?;
                Ok(Self::Completed {
                    fingerprint,
                    completed: Completed {
                        fencing_token: fence,
                        completed_at,
                        response,
                    },
                })
            }
            "A" => Ok(Self::Abandoned { fence }),
            _ => Err(malformed("unknown kind")),
        }
    }
}

fn millis_since_epoch(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{FENCE_AT, KIND_AT};

    fn response() -> StoredResponse {
        StoredResponse {
            status: 201,
            headers: vec![("x-id".into(), b"7".to_vec())],
            body: b"paid\n".to_vec(),
            initial_age: Duration::ZERO,
            fresh: Duration::ZERO,
        }
    }

    #[test]
    fn records_round_trip_with_the_header_stores_read() {
        let fingerprint = Fingerprint::builder("POST", "/pay").body(b"1").finish();
        let fence = FencingToken::new(42);
        let in_flight = Record::encode_in_flight(fence, &fingerprint);
        assert_eq!(in_flight[KIND_AT], b'I');
        assert_eq!(
            &in_flight[FENCE_AT..FENCE_AT + FENCE_DIGITS],
            b"00000000000000000042"
        );
        assert_eq!(
            Record::decode(&in_flight).unwrap(),
            Record::InFlight { fence, fingerprint }
        );
        let mut completed = Completed::new(fence, response());
        completed.completed_at = UNIX_EPOCH + Duration::from_millis(1_732_492_800_123);
        let bytes = Record::encode_completed(&fingerprint, &completed);
        assert_eq!(bytes[KIND_AT], b'C');
        assert_eq!(
            Record::decode(&bytes).unwrap(),
            Record::Completed {
                fingerprint,
                completed
            }
        );
        assert_eq!(
            Record::decode(&Record::encode_abandoned(fence)).unwrap(),
            Record::Abandoned { fence }
        );
    }

    #[test]
    fn malformed_records_are_errors() {
        for bad in [
            &b""[..],
            b"lc1 I 1\n",
            b"lc2 A 00000000000000000001\n",
            b"lc1 Z 00000000000000000001\n",
            b"lc1 C 00000000000000000001 zz 1\n",
            b"lc1 V 00000000000000000001 1 2 3 4 5\npayload",
        ] {
            assert!(Record::decode(bad).is_err(), "{bad:?}");
        }
    }
}
