//! Lock keys: validated, namespaced names.

use std::sync::Arc;

use crate::LockError;

/// The longest key accepted, in bytes of UTF-8, not counting the namespace.
///
/// Long enough for composite business keys (`tenant:order:line`), short enough that every
/// backend can store it as-is or hashed (SQL backends keep the original beside a hash).
pub const MAX_KEY_LEN: usize = 512;

/// The longest namespace accepted, in bytes.
pub const MAX_NAMESPACE_LEN: usize = 64;

/// A validated lock name: the caller's key plus the client's namespace.
///
/// Any non-empty UTF-8 of at most [`MAX_KEY_LEN`] bytes without NUL is a valid key; backends
/// receive it only as data (Redis `KEYS`/`ARGV`, SQL bound parameters), never spliced into
/// commands or scripts.
///
/// ```
/// use lock_core::LockKey;
///
/// let key = LockKey::new("shop", "order:{42}").unwrap();
/// assert_eq!(key.name(), "order:{42}");
/// assert_eq!(key.full(), "shop:order:{42}");
/// assert!(LockKey::new("shop", "").is_err());
/// ```
///
/// Cloning is a reference count: the text is shared, so the lock's bookkeeping (held leases,
/// the clean-up armed for an abandoned acquire) keeps copies without allocating.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct LockKey {
    full: Arc<str>,
    name_start: usize,
}

impl LockKey {
    /// Validates `name` and places it under `namespace` (which may be empty).
    pub fn new(namespace: &str, name: &str) -> Result<Self, LockError> {
        validate_namespace(namespace)?;
        let refuse = |reason: String| LockError::InvalidKey {
            key: name.chars().take(64).collect(),
            reason,
        };
        if name.is_empty() {
            return Err(refuse("the key is empty".into()));
        }
        if name.len() > MAX_KEY_LEN {
            return Err(refuse(format!(
                "the key is {} bytes long, the limit is {MAX_KEY_LEN}",
                name.len()
            )));
        }
        if name.contains('\0') {
            return Err(refuse("the key contains a NUL character".into()));
        }
        let full: Arc<str> = if namespace.is_empty() {
            Arc::from(name)
        } else {
            let mut full = String::with_capacity(namespace.len() + 1 + name.len());
            full.push_str(namespace);
            full.push(':');
            full.push_str(name);
            Arc::from(full)
        };
        Ok(Self {
            name_start: full.len() - name.len(),
            full,
        })
    }

    /// The key as the caller gave it.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.full[self.name_start..]
    }

    /// The namespace, empty when none was set.
    #[must_use]
    pub fn namespace(&self) -> &str {
        self.full[..self.name_start].trim_end_matches(':')
    }

    /// `namespace:name`, the name backends store.
    #[must_use]
    pub fn full(&self) -> &str {
        &self.full
    }
}

impl std::fmt::Debug for LockKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.full, f)
    }
}

impl std::fmt::Display for LockKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.full)
    }
}

/// Checks a namespace: empty (no namespace), or 1..=[`MAX_NAMESPACE_LEN`] ASCII letters,
/// digits, `-`, `_` and `.`. That keeps out what backends give meaning to (`{`/`}` change Redis
/// Cluster hash slots, `:` separates the namespace from the key, `/` is a ZooKeeper path
/// separator) and non-ASCII text whose bytes differ between normalisations.
pub(crate) fn validate_namespace(namespace: &str) -> Result<(), LockError> {
    const RULE: &str = "a namespace is empty or ASCII letters, digits, '-', '_' and '.'";
    if namespace.len() > MAX_NAMESPACE_LEN {
        return Err(LockError::InvalidConfig(format!(
            "namespace is {} bytes long, the limit is {MAX_NAMESPACE_LEN}",
            namespace.len()
        )));
    }
    if let Some(bad) = namespace
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(LockError::InvalidConfig(format!(
            "namespace {namespace:?} contains {bad:?}; {RULE}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_any_utf8_and_keeps_parts() {
        let key = LockKey::new("ns", "库存:sku-1 {x} ' \" ]]--").unwrap();
        assert_eq!(key.name(), "库存:sku-1 {x} ' \" ]]--");
        assert_eq!(key.namespace(), "ns");
        let bare = LockKey::new("", "k").unwrap();
        assert_eq!(bare.full(), "k");
        assert_eq!(bare.namespace(), "");
    }

    #[test]
    fn refuses_bad_keys_with_reasons() {
        let long = "x".repeat(MAX_KEY_LEN + 1);
        for (key, reason) in [("", "empty"), (long.as_str(), "limit"), ("a\0b", "NUL")] {
            match LockKey::new("ns", key) {
                Err(LockError::InvalidKey { reason: r, .. }) => assert!(r.contains(reason), "{r}"),
                other => panic!("{key:?}: {other:?}"),
            }
        }
        assert!(LockKey::new("ns", &"x".repeat(MAX_KEY_LEN)).is_ok());
    }

    #[test]
    fn refuses_bad_namespaces() {
        for ns in [
            "a{b",
            "a}b",
            "a:b",
            "a b",
            "ünïcødé",
            "a/b\\c",
            "a\0b",
            "tab\t",
            &"n".repeat(MAX_NAMESPACE_LEN + 1),
        ] {
            match LockKey::new(ns, "k") {
                Err(LockError::InvalidConfig(message)) if ns.len() <= MAX_NAMESPACE_LEN => {
                    assert!(
                        message.contains("ASCII letters, digits, '-', '_' and '.'"),
                        "{message}"
                    );
                }
                Err(LockError::InvalidConfig(message)) => assert!(message.contains("limit")),
                other => panic!("{ns:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn accepts_the_namespace_alphabet_and_no_namespace() {
        for ns in ["", "shop", "Shop-2_eu.west", &"n".repeat(MAX_NAMESPACE_LEN)] {
            assert!(LockKey::new(ns, "k").is_ok(), "{ns:?}");
        }
    }
}
