//! Owner tokens (who holds a lease) and fencing tokens (which grant came later).

use crate::LockError;

/// A random 128-bit value naming one holder of one lease.
///
/// Drawn from the operating system's random source for each acquisition, so a late or
/// retried release or renewal from an earlier holder can never match a later one. Printing it
/// (`Display` or `Debug`) shows only the first 8 hex digits, so logs never carry a whole token.
///
/// ```
/// use lock_core::OwnerToken;
///
/// let token = OwnerToken::random().unwrap();
/// assert_eq!(token.to_string().len(), "1234abcd…".len());
/// assert_eq!(OwnerToken::from_hex(&token.to_hex()), Some(token));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct OwnerToken(u128);

impl OwnerToken {
    /// Draws a fresh token from the OS random source.
    pub fn random() -> Result<Self, LockError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| LockError::unavailable("os-random", e))?;
        Ok(Self(u128::from_le_bytes(bytes)))
    }

    /// The whole token as 32 lowercase hex digits: what backends store. Keep it out of logs.
    #[must_use]
    pub fn to_hex(&self) -> String {
        self.hex().to_string()
    }

    /// [`to_hex`](Self::to_hex) without a `String`: for formatting straight into a command.
    pub(crate) fn hex(&self) -> impl std::fmt::Display {
        HexToken(self.0)
    }

    /// Parses the form [`to_hex`](Self::to_hex) writes.
    #[must_use]
    pub fn from_hex(hex: &str) -> Option<Self> {
        if hex.len() != 32 {
            return None;
        }
        u128::from_str_radix(hex, 16).ok().map(Self)
    }
}

impl std::fmt::Display for OwnerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}…", &self.to_hex()[..8])
    }
}

impl std::fmt::Debug for OwnerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OwnerToken({self})")
    }
}

/// A number that strictly increases with every grant of the same key, on every backend.
///
/// Give it to the resource the lock protects and have the resource refuse writes carrying a
/// token no newer than the last one it accepted: a holder that was paused past its lease can
/// then no longer overwrite the work of the next holder. In SQL, keep the token beside the row
/// and make the write conditional on it, in the same statement:
///
/// ```sql
/// -- fence BIGINT NOT NULL DEFAULT 0
/// UPDATE orders SET status = $status, fence = $token WHERE id = $id AND fence < $token
/// -- 0 rows updated: a newer holder has written (or the row is missing); stop, do not retry.
/// ```
///
/// `fence < $token` accepts one write per grant; a holder that writes the row several times
/// under one grant uses `fence <= $token`, as `lock_core::sql::FencedUpdate`
/// builds it (and `RedisFencedStore` checks it for a Redis value).
///
/// **Store it in a 64-bit column** (`BIGINT` in PostgreSQL and MySQL, or any 64-bit integer).
/// Tokens are `u64` and need more than 32 bits from the start on some backends: a Redis
/// counter is seeded from the server's clock in microseconds (about 2<sup>51</sup>), a
/// ZooKeeper zxid carries the epoch in its upper 32 bits. A 32-bit column overflows or
/// truncates them and breaks the ordering. They stay below 2<sup>63</sup>, so a signed
/// `BIGINT` holds them.
///
/// ```
/// use lock_core::FencingToken;
///
/// assert!(FencingToken::new(7) < FencingToken::new(8));
/// assert_eq!(FencingToken::new(8).get(), 8);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct FencingToken(u64);

impl FencingToken {
    /// Wraps a raw token (as read back from a fenced resource).
    #[must_use]
    pub const fn new(value: u64) -> Self {
        Self(value)
    }

    /// The raw number.
    #[must_use]
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for FencingToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// An owner token as 32 lowercase hex digits.
struct HexToken(u128);

impl std::fmt::Display for HexToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_differ_and_round_trip() {
        let a = OwnerToken::random().unwrap();
        let b = OwnerToken::random().unwrap();
        assert_ne!(a, b);
        assert_eq!(OwnerToken::from_hex(&a.to_hex()), Some(a));
        assert_eq!(OwnerToken::from_hex("zz"), None);
        assert!(!format!("{a:?}").contains(&a.to_hex()));
    }
}
