//! Strict percent-decoding of request values: the rule [`KeySource`](super::KeySource) keys
//! follow, for handlers that read a path or query value themselves and must decide as the
//! middleware does. Some frameworks decode leniently (actix-web's `web::Path<String>` turns
//! `%FF` into U+FFFD), so the middleware would refuse a request whose handler reads it as
//! another key; decoding the raw value with these functions keeps the two in step.

/// Why a raw request value could not be decoded.
///
/// ```
/// use lock_core::http::{decode_path_segment, DecodeError};
///
/// assert_eq!(decode_path_segment("a%zz"), Err(DecodeError::BadEscape));
/// assert_eq!(decode_path_segment("%FF"), Err(DecodeError::NotUtf8));
/// assert_eq!(DecodeError::NotUtf8.to_string(), "is not UTF-8 after percent-decoding");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// A `%` not followed by two hex digits.
    #[error("has a `%` not followed by two hex digits")]
    BadEscape,
    /// The decoded bytes are not UTF-8 (a lone `%FF`, a truncated or overlong sequence, a
    /// surrogate).
    #[error("is not UTF-8 after percent-decoding")]
    NotUtf8,
}

/// Decodes one raw path segment (as sent, e.g. from `uri.path()`): `%XX` escapes become
/// bytes, everything else is kept (`+` stays a plus), and the result must be UTF-8.
///
/// ```
/// use lock_core::http::{decode_path_segment, DecodeError};
///
/// assert_eq!(decode_path_segment("caf%C3%A9+1").as_deref(), Ok("café+1"));
/// assert_eq!(decode_path_segment("a%2Fb").as_deref(), Ok("a/b"));
/// assert_eq!(decode_path_segment("%C3"), Err(DecodeError::NotUtf8));
/// ```
pub fn decode_path_segment(raw: &str) -> Result<String, DecodeError> {
    percent_decode(raw, false)
}

/// Decodes one raw query-string name or value (`application/x-www-form-urlencoded`): as
/// [`decode_path_segment`], and `+` is a space.
///
/// ```
/// use lock_core::http::decode_query_component;
///
/// assert_eq!(decode_query_component("red+shoe%21").as_deref(), Ok("red shoe!"));
/// assert!(decode_query_component("%").is_err());
/// ```
pub fn decode_query_component(raw: &str) -> Result<String, DecodeError> {
    percent_decode(raw, true)
}

fn percent_decode(raw: &str, plus_is_space: bool) -> Result<String, DecodeError> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = raw.get(i + 1..i + 3).ok_or(DecodeError::BadEscape)?;
                if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(DecodeError::BadEscape);
                }
                out.push(u8::from_str_radix(hex, 16).map_err(|_| DecodeError::BadEscape)?);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| DecodeError::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_must_be_two_hex_digits() {
        for raw in ["%", "%4", "a%zz", "%+1", "%-1", "%\u{e9}"] {
            assert_eq!(
                decode_path_segment(raw),
                Err(DecodeError::BadEscape),
                "{raw}"
            );
        }
        assert_eq!(decode_path_segment("%41%62").as_deref(), Ok("Ab"));
        assert_eq!(decode_path_segment("").as_deref(), Ok(""));
    }

    #[test]
    fn decoded_bytes_must_be_utf8() {
        for raw in ["%FF", "caf%C3", "%C0%AF", "%ED%A0%80", "%F4%90%80%80"] {
            assert_eq!(decode_path_segment(raw), Err(DecodeError::NotUtf8), "{raw}");
        }
        assert_eq!(decode_path_segment("%F0%9F%A6%80").as_deref(), Ok("🦀"));
        assert_eq!(
            decode_path_segment("%00").as_deref(),
            Ok("\0"),
            "NUL is the caller's call"
        );
    }

    #[test]
    fn plus_is_a_space_only_in_queries() {
        assert_eq!(decode_path_segment("a+b").as_deref(), Ok("a+b"));
        assert_eq!(decode_query_component("a+b%2B").as_deref(), Ok("a b+"));
    }
}
