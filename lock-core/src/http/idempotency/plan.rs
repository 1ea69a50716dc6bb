//! The first decision on a request, from its head alone: pass it on, refuse it, or handle it
//! under its idempotency key.

use super::IdempotencyRules;
use crate::http::{Rejection, RejectionKind, RequestHead};

/// What an idempotency layer does with a request, decided from its head.
///
/// ```
/// use lock_core::http::RequestHead;
/// use lock_core::http::idempotency::{IdempotencyRules, Plan};
///
/// struct Head(&'static str, Option<&'static [u8]>);
/// impl RequestHead for Head {
///     fn method(&self) -> &str { self.0 }
///     fn path(&self) -> &str { "/payments" }
///     fn query(&self) -> Option<&str> { None }
///     fn header(&self, name: &str) -> Option<&[u8]> { (name == "idempotency-key").then_some(self.1).flatten() }
/// }
///
/// let rules = IdempotencyRules::new();
/// assert!(matches!(rules.plan(&Head("GET", None)), Plan::Pass));
/// assert!(matches!(rules.plan(&Head("POST", Some(b"k-1"))), Plan::Handle(key) if key == "k-1"));
/// // The IETF draft's form, a structured-field string, is read too.
/// assert!(matches!(rules.plan(&Head("POST", Some(b"\"k-1\""))), Plan::Handle(key) if key == "k-1"));
/// assert!(matches!(rules.plan(&Head("POST", None)), Plan::Reject(r) if r.response.status == 400));
/// assert!(matches!(rules.plan(&Head("POST", Some("ключ".as_bytes()))), Plan::Reject(r) if r.response.status == 400));
/// ```
#[derive(Debug)]
pub enum Plan {
    /// Not a request the layer handles (another method, or no key where the key is optional):
    /// call the inner service as if the layer were not there.
    Pass,
    /// A missing or invalid key: answer this (400, problem+json); nothing runs.
    Reject(Rejection),
    /// Handle the request under this key.
    Handle(String),
}

impl Plan {
    pub(super) fn of(rules: &IdempotencyRules, head: &(impl RequestHead + ?Sized)) -> Self {
        if !rules
            .methods
            .iter()
            .any(|method| method.eq_ignore_ascii_case(head.method()))
        {
            return Self::Pass;
        }
        let lines = head.header_count(&rules.header);
        if lines > 1 {
            // An Item structured field: two lines are one invalid value, and answering with
            // either key would be a guess (RFC 9651 §3.3; the IETF Idempotency-Key draft).
            return Self::Reject(bad_key(
                "Repeated idempotency key",
                &format!(
                    "the {} header must appear once; this request has {lines}",
                    rules.header
                ),
            ));
        }
        match head.header(&rules.header) {
            None if rules.required => Self::Reject(bad_key(
                "Missing idempotency key",
                &format!("this endpoint requires the {} header", rules.header),
            )),
            None => Self::Pass,
            Some(value) => match parse_key(value, rules.max_key_len) {
                Ok(key) => Self::Handle(key),
                Err(reason) => Self::Reject(bad_key("Invalid idempotency key", &reason)),
            },
        }
    }
}

fn bad_key(title: &str, detail: &str) -> Rejection {
    Rejection::new(RejectionKind::BadKey, 400, None, title, detail, None)
}

/// A key as sent: plain, or a structured-field string (`"..."` with `\"` and `\\` escapes);
/// printable ASCII, not empty, at most `limit` characters.
fn parse_key(value: &[u8], limit: usize) -> Result<String, String> {
    let text = std::str::from_utf8(value)
        .ok()
        .filter(|text| text.bytes().all(|b| (0x20..0x7f).contains(&b)))
        .ok_or("the key must be printable ASCII")?
        .trim_matches(' ');
    let key = match text.strip_prefix('"') {
        Some(quoted) => unquote(quoted).ok_or("the key is a malformed quoted string")?,
        None => text.to_owned(),
    };
    if key.is_empty() {
        return Err("the key is empty".into());
    }
    if key.len() > limit {
        return Err(format!(
            "the key is {} characters long, the limit is {limit}",
            key.len()
        ));
    }
    Ok(key)
}

/// The inside of a structured-field string after its opening quote; `None` when the closing
/// quote is missing, something follows it, or an escape is not `\"` or `\\`.
fn unquote(rest: &str) -> Option<String> {
    let mut key = String::with_capacity(rest.len());
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next()? {
                escaped @ ('"' | '\\') => key.push(escaped),
                _ => return None,
            },
            '"' => return chars.as_str().is_empty().then_some(key),
            c => key.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_strictly() {
        assert_eq!(parse_key(b"abc", 255).unwrap(), "abc");
        assert_eq!(parse_key(b" abc ", 255).unwrap(), "abc");
        assert_eq!(parse_key(br#""a\"b\\c""#, 255).unwrap(), r#"a"b\c"#);
        assert_eq!(parse_key(b"a b", 255).unwrap(), "a b");
        for bad in [
            &b""[..],
            b"   ",
            b"\"\"",
            b"\"abc",
            b"\"abc\"x",
            b"\"a\\nb\"",
            b"a\tb",
            b"\xff",
            b"a\x00b",
        ] {
            assert!(parse_key(bad, 255).is_err(), "{bad:?}");
        }
        assert!(parse_key(&[b'k'; 255], 255).is_ok());
        assert!(parse_key(&[b'k'; 256], 255).is_err());
    }
}
