//! The etcd keys of one lock: `<prefix>/<lock name>/<lease id in hex>`, one per acquisition.
//!
//! The lock name is percent-encoded where it could run into another lock's range (`/` and
//! `%`), so the range `<prefix>/<lock name>/` holds exactly this lock's queue. The layout is
//! the one etcd's own `concurrency.Mutex` uses (`pfx + "/" + %x lease id`).

use std::fmt::Write as _;

use crate::LockError;

/// Checks a key prefix: non-empty, not ending in `/` (the layout adds the separators).
pub(super) fn validate_prefix(prefix: &str) -> Result<(), LockError> {
    if prefix.is_empty() || prefix.ends_with('/') || prefix.contains('\0') {
        return Err(LockError::InvalidConfig(format!(
            "etcd key prefix {prefix:?} must be non-empty, without NUL and not end with '/'"
        )));
    }
    Ok(())
}

/// `<prefix>/<encoded full key>/`: the range holding the lock's queue.
pub(super) fn lock_prefix(prefix: &str, full_key: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + full_key.len() + 2);
    out.push_str(prefix);
    out.push('/');
    for ch in full_key.chars() {
        if ch == '/' || ch == '%' {
            write!(out, "%{:02X}", u32::from(ch)).ok();
        } else {
            out.push(ch);
        }
    }
    out.push('/');
    out
}

/// The key of the acquisition holding etcd lease `lease_id`.
pub(super) fn entry_key(lock_prefix: &str, lease_id: i64) -> String {
    format!("{lock_prefix}{lease_id:x}")
}

/// The lease id an entry key ends with.
pub(super) fn lease_of(lock_prefix: &str, key: &[u8]) -> Option<i64> {
    let hex = std::str::from_utf8(key.strip_prefix(lock_prefix.as_bytes())?).ok()?;
    i64::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_lock_never_sees_another_locks_entries() {
        let a = lock_prefix("lock", "ns:a");
        let nested = lock_prefix("lock", "ns:a/b");
        assert_eq!(a, "lock/ns:a/");
        assert_eq!(nested, "lock/ns:a%2Fb/");
        assert!(!nested.starts_with(&a));
        assert_eq!(lock_prefix("lock", "100%"), "lock/100%25/");
        let key = entry_key(&a, 0x694d_7c1a);
        assert_eq!(key, "lock/ns:a/694d7c1a");
        assert_eq!(lease_of(&a, key.as_bytes()), Some(0x694d_7c1a));
        assert_eq!(lease_of(&nested, key.as_bytes()), None);
        assert!(validate_prefix("lock").is_ok() && validate_prefix("lock/").is_err());
    }
}
