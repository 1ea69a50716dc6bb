//! What makes two requests "the same request": a digest of their method, target, chosen
//! headers and body, compared when a key is used again.

use sha2::{Digest, Sha256};

/// A SHA-256 digest of a request's method, path and query, the headers you chose and its
/// body. Two requests with one idempotency key must have the same fingerprint; otherwise the
/// second is refused (422) instead of being answered with the first one's response.
///
/// Every part is length-prefixed before it is hashed, so moving bytes between parts (a path
/// ending where a body begins) never gives the same fingerprint.
///
/// ```
/// use lock_core::idempotency::Fingerprint;
///
/// let pay = |amount: &str| {
///     Fingerprint::builder("POST", "/payments")
///         .header("content-type", b"application/json")
///         .body(amount.as_bytes())
///         .finish()
/// };
/// assert_eq!(pay(r#"{"cents":100}"#), pay(r#"{"cents":100}"#));
/// assert_ne!(pay(r#"{"cents":100}"#), pay(r#"{"cents":999}"#));
/// assert_eq!(pay("{}").to_hex().len(), 64);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// Starts a fingerprint of a request with `method` and `target` (path, and `?query` if
    /// any).
    pub fn builder(method: &str, target: &str) -> FingerprintBuilder {
        let mut builder = FingerprintBuilder {
            hasher: Sha256::new(),
        };
        builder.part(b"fp1");
        builder.part(method.as_bytes());
        builder.part(target.as_bytes());
        builder
    }

    /// The digest as 64 lower-case hex digits (how records store it).
    #[must_use]
    pub fn to_hex(&self) -> String {
        crate::hex::encode(&self.0)
    }

    /// Reads 64 hex digits back; `None` for anything else.
    #[must_use]
    pub fn from_hex(hex: &str) -> Option<Self> {
        if hex.len() != 64 || !hex.is_ascii() {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (index, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[index * 2..index * 2 + 2], 16).ok()?;
        }
        Some(Self(bytes))
    }
}

impl std::fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fingerprint({})", &self.to_hex()[..16])
    }
}

/// Adds headers and the body to a [`Fingerprint`]; from [`Fingerprint::builder`].
#[must_use]
pub struct FingerprintBuilder {
    hasher: Sha256,
}

impl FingerprintBuilder {
    fn part(&mut self, bytes: &[u8]) {
        self.hasher.update((bytes.len() as u64).to_be_bytes());
        self.hasher.update(bytes);
    }

    /// Adds a header (its name lower-cased; a header sent several times is added once per
    /// value, in order). An absent header is best added as nothing at all, so that adding a
    /// header to the fingerprint later changes no existing fingerprint of requests without it.
    pub fn header(mut self, name: &str, value: &[u8]) -> Self {
        self.part(b"h");
        self.part(name.to_ascii_lowercase().as_bytes());
        self.part(value);
        self
    }

    /// Adds the body (the whole of it, as received).
    pub fn body(mut self, body: &[u8]) -> Self {
        self.part(b"b");
        self.part(body);
        self
    }

    /// The fingerprint.
    #[must_use]
    pub fn finish(self) -> Fingerprint {
        Fingerprint(self.hasher.finalize().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_do_not_run_into_each_other() {
        let a = Fingerprint::builder("POST", "/a").body(b"b").finish();
        let b = Fingerprint::builder("POST", "/ab").body(b"").finish();
        assert_ne!(a, b);
        let with_header = Fingerprint::builder("POST", "/a")
            .header("X-Tenant", b"1")
            .body(b"b")
            .finish();
        let lower = Fingerprint::builder("POST", "/a")
            .header("x-tenant", b"1")
            .body(b"b")
            .finish();
        assert_eq!(with_header, lower);
        assert_ne!(a, with_header);
        assert_eq!(Fingerprint::from_hex(&a.to_hex()), Some(a));
        assert_eq!(Fingerprint::from_hex("zz"), None);
        assert_eq!(Fingerprint::from_hex(&"g".repeat(64)), None);
    }
}
