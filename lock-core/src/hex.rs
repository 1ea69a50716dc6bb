//! Lower-case hex digits of bytes (digests in keys, fingerprints in records), written in one
//! pass into one `String`: what every key and record on a request's path uses, so none of
//! them formats a `String` per byte.

/// The digits, by value.
const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends the lower-case hex digits of `bytes` to `out` (two per byte).
pub(crate) fn push(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
}

/// The lower-case hex digits of `bytes` (two per byte).
pub(crate) fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    push(&mut out, bytes);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_two_lower_case_digits_per_byte() {
        assert_eq!(encode(&[]), "");
        assert_eq!(encode(&[0x00, 0x0f, 0xa0, 0xff, 0x7e]), "000fa0ff7e");
        let every: Vec<u8> = (0..=255).collect();
        let expected: String = every.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(encode(&every), expected);
        let mut out = "sha256:".to_owned();
        push(&mut out, &[0xab]);
        assert_eq!(out, "sha256:ab");
    }
}
