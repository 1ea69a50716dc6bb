//! The cache key of a request.
//!
//! Format, after the rules' key prefix (default `http:`):
//!
//! ```text
//! GET|<path>|<?query or nothing>[|<name>[=<value>]]...     the default key
//! @|<the key function's string>                            a KeyFn's key
//! ```
//!
//! `HEAD` is keyed as `GET` (it reads the `GET` entry). The path and query are kept as sent
//! (not decoded or reordered); `?` marks a query that was sent, so `/a?` and `/a` differ.
//! Then each configured `Vary` header in configured order: `|name` when the request does not
//! send it, `|name=value` when it does, its lines joined with `", "` (RFC 9110 §5.3: the same
//! field either way). Every part is percent-encoded except letters, digits and
//! `-._~!$&'()*+,;=:@/`, so `|`, `%`, `#`, braces, spaces, control bytes, NUL and non-ASCII
//! bytes never appear raw: the parts can be read back from a key, so two different requests
//! never share one (injective), and keys are ASCII without NUL as lock-core's key rules ask.
//!
//! A key longer than [`MAX_KEY_LEN`] is cut to its first bytes and ends `#` + the hex
//! SHA-256 of the whole key (the parts never hold a raw `#`): a collision there would serve
//! one URL's response for another, so the digest has to be one that nobody can collide on
//! purpose.

use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::headers::{lines, FullRequestHead};
use super::CacheRules;
use crate::MAX_KEY_LEN;

/// The key a cached response is stored under: ASCII-safe UTF-8, no NUL, at most
/// [`MAX_KEY_LEN`] bytes.
///
/// ```
/// use lock_core::http::cache::{CacheRules, RequestParts};
///
/// let rules = CacheRules::builder().vary("Accept-Language").build().unwrap();
/// let request = RequestParts::new("HEAD", "/caf%C3%A9").with_query("a=1|2").with_header("accept-language", "de");
/// let key = rules.cache_key(&request).unwrap();
/// assert_eq!(key.as_str(), "http:GET|/caf%25C3%25A9|?a=1%7C2|accept-language=de");
/// assert!(!key.is_shortened());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey {
    key: String,
    shortened: bool,
}

impl CacheKey {
    /// The key.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.key
    }

    /// The key as an owned string.
    #[must_use]
    pub fn into_string(self) -> String {
        self.key
    }

    /// Whether the key was too long and ends in a digest of the whole.
    #[must_use]
    pub fn is_shortened(&self) -> bool {
        self.shortened
    }

    /// `prefix` + `body`, shortened when longer than [`MAX_KEY_LEN`].
    fn new(prefix: &str, body: &str) -> Self {
        let full = format!("{prefix}{body}");
        if full.len() <= MAX_KEY_LEN {
            return Self {
                key: full,
                shortened: false,
            };
        }
        let mut cut = MAX_KEY_LEN - 65;
        while !full.is_char_boundary(cut) {
            cut -= 1;
        }
        let digest = crate::hex::encode(&Sha256::digest(full.as_bytes()));
        Self {
            key: format!("{}#{digest}", &full[..cut]),
            shortened: true,
        }
    }
}

impl fmt::Display for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key)
    }
}

impl AsRef<str> for CacheKey {
    fn as_ref(&self) -> &str {
        &self.key
    }
}

/// A user-supplied key function: given the request, the string that identifies its response,
/// or `None` to pass the request through uncached. The string is percent-encoded and prefixed
/// like any key (so it may hold anything), and it replaces the whole default key: include
/// whatever the response depends on (path, query, tenant, language).
///
/// ```
/// use lock_core::http::cache::{CacheRules, KeyFn, RequestParts};
///
/// let by_tenant = KeyFn::new(|request| {
///     let tenant = request.header("x-tenant")?;
///     Some(format!("{}:{}", String::from_utf8_lossy(tenant), request.path()))
/// });
/// let rules = CacheRules::builder().key_fn(by_tenant).build().unwrap();
/// let request = RequestParts::get("/home").with_header("X-Tenant", "acme");
/// assert_eq!(rules.cache_key(&request).unwrap().as_str(), "http:@|acme:/home");
/// assert_eq!(rules.cache_key(&RequestParts::get("/home")), None);
/// ```
#[derive(Clone)]
pub struct KeyFn(Arc<KeyFnBody>);

type KeyFnBody = dyn Fn(&dyn FullRequestHead) -> Option<String> + Send + Sync;

impl KeyFn {
    /// Wraps a key function.
    pub fn new(f: impl Fn(&dyn FullRequestHead) -> Option<String> + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }
}

impl fmt::Debug for KeyFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyFn(..)")
    }
}

impl CacheRules {
    /// The key `request`'s response is stored under: the [`KeyFn`]'s when one is set (`None`
    /// when it declines), else the default key of the module docs.
    #[must_use]
    pub fn cache_key(&self, request: &impl FullRequestHead) -> Option<CacheKey> {
        if let Some(KeyFn(key_fn)) = &self.key_fn {
            let custom = key_fn(request)?;
            return Some(CacheKey::new(
                &self.key_prefix,
                &format!("@|{}", encode(custom.as_bytes())),
            ));
        }
        let method = request.method();
        let method = if method.eq_ignore_ascii_case("HEAD") {
            "GET"
        } else {
            method
        };
        let mut body = format!(
            "{}|{}|",
            encode(method.as_bytes()),
            encode(request.path().as_bytes())
        );
        if let Some(query) = request.query() {
            body.push('?');
            body.push_str(&encode(query.as_bytes()));
        }
        for name in &self.vary {
            body.push('|');
            body.push_str(&encode(name.as_bytes()));
            let values = lines(request, name);
            if !values.is_empty() {
                body.push('=');
                body.push_str(&encode(&values.join(b", ".as_slice())));
            }
        }
        Some(CacheKey::new(&self.key_prefix, &body))
    }
}

/// Percent-encodes every byte outside the unreserved and path-safe characters.
fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::http::cache::RequestParts;

    fn key(rules: &CacheRules, request: &RequestParts) -> String {
        rules.cache_key(request).unwrap().into_string()
    }

    #[test]
    fn format_table() {
        let plain = CacheRules::default();
        let vary = CacheRules::builder()
            .vary("Accept")
            .vary("X-A")
            .build()
            .unwrap();
        let r = RequestParts::get;
        let rows: Vec<(&CacheRules, RequestParts, &str)> = vec![
            (&plain, r("/"), "http:GET|/|"),
            (&plain, RequestParts::new("HEAD", "/"), "http:GET|/|"),
            (&plain, r("/a").with_query(""), "http:GET|/a|?"),
            (
                &plain,
                r("/a").with_query("b=1&c=%20"),
                "http:GET|/a|?b=1&c=%2520",
            ),
            (&plain, r("/a b|{c}#\0"), "http:GET|/a%20b%7C%7Bc%7D%23%00|"),
            (&plain, r("/x").with_header("accept", "y"), "http:GET|/x|"),
            (&vary, r("/x"), "http:GET|/x||accept|x-a"),
            (
                &vary,
                r("/x").with_header("X-A", ""),
                "http:GET|/x||accept|x-a=",
            ),
            (
                &vary,
                r("/x")
                    .with_header("accept", "a")
                    .with_header("ACCEPT", "b|c\u{e9}"),
                "http:GET|/x||accept=a,%20b%7Cc%C3%A9|x-a",
            ),
        ];
        for (rules, request, expected) in rows {
            assert_eq!(key(rules, &request), expected, "{request:?}");
        }
    }

    #[test]
    fn different_requests_never_share_a_key() {
        let rules = CacheRules::builder().vary("a").vary("b").build().unwrap();
        let r = RequestParts::get;
        let requests = [
            r("/a"),
            r("/a").with_query(""),
            r("/a?"),
            r("/a").with_query("x"),
            r("/a?x"),
            r("/a|").with_query("x"),
            r("/a").with_query("|x"),
            r("/a%7C"),
            r("/a").with_header("a", ""),
            r("/a").with_header("a", "x"),
            r("/a").with_header("b", "x"),
            r("/a").with_header("a", "x|b=x"),
            r("/a").with_header("a", "x").with_header("b", "x"),
            r("/a").with_header("a", "1, 2"),
            r("/a").with_header("a", "1,2"),
            RequestParts::new("PUT", "/a"),
        ];
        let keys: HashSet<String> = requests.iter().map(|q| key(&rules, q)).collect();
        assert_eq!(keys.len(), requests.len(), "{keys:#?}");
    }

    #[test]
    fn long_keys_are_shortened_deterministically() {
        let rules = CacheRules::default();
        let long = r"/".to_owned() + &"é".repeat(400);
        let a = rules.cache_key(&RequestParts::get(long.clone())).unwrap();
        let b = rules
            .cache_key(&RequestParts::get(long.clone() + "x"))
            .unwrap();
        for k in [&a, &b] {
            assert!(k.as_str().len() <= MAX_KEY_LEN && k.is_shortened(), "{k}");
            assert!(!k.as_str().contains('\0'));
        }
        assert_ne!(a, b);
        assert_eq!(a, rules.cache_key(&RequestParts::get(long)).unwrap());
        let fits = "/".to_owned() + &"x".repeat(MAX_KEY_LEN - "http:GET||".len() - 1);
        let fits = rules.cache_key(&RequestParts::get(fits)).unwrap();
        assert_eq!(fits.as_str().len(), MAX_KEY_LEN);
        assert!(!fits.is_shortened());
    }

    #[test]
    fn key_functions() {
        let rules = CacheRules::builder()
            .key_prefix("")
            .key_fn(KeyFn::new(|r| {
                (r.path() != "/skip").then(|| format!("k|{}\0", r.path()))
            }))
            .build()
            .unwrap();
        assert_eq!(key(&rules, &RequestParts::get("/p")), "@|k%7C/p%00");
        assert_eq!(rules.cache_key(&RequestParts::get("/skip")), None);
        let huge = KeyFn::new(|_| Some("y".repeat(5000)));
        let rules = CacheRules::builder().key_fn(huge).build().unwrap();
        let k = rules.cache_key(&RequestParts::get("/")).unwrap();
        assert!(k.is_shortened() && k.as_str().starts_with("http:@|yyy"));
        assert_eq!(format!("{:?}", KeyFn::new(|_| None)), "KeyFn(..)");
    }
}
