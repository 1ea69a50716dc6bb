//! Where a lock lives in ZooKeeper, and Curator's names for the nodes under it.
//!
//! The lock `shop:order:42` under the root `/locks` is the container node
//! `/locks/shop:order:42`; each acquisition adds the ephemeral sequential child
//! `_c_<uuid>-lock-<sequence>`, exactly as Curator's `InterProcessMutex` (with its protected
//! mode) names them, so both libraries see one queue and exclude each other.

use std::fmt::Write as _;

use crate::{LockError, OwnerToken};

/// The name Curator's `InterProcessMutex` gives its lock nodes (before the sequence).
pub(super) const LOCK_NAME: &str = "lock-";

/// How many holders a lock admits. A semaphore would use the same queue with more permits
/// (Curator's rule: the first `permits` children hold; a waiter watches the child `permits`
/// places ahead of it).
pub(super) const PERMITS: usize = 1;

/// Checks a root path: absolute, not `/` itself, no empty or relative components.
pub(super) fn validate_root(root: &str) -> Result<(), LockError> {
    let valid = root.len() > 1
        && root.starts_with('/')
        && !root.ends_with('/')
        && root[1..]
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && !root.chars().any(needs_escape_in_path);
    if valid {
        Ok(())
    } else {
        Err(LockError::InvalidConfig(format!(
            "ZooKeeper root {root:?} must be an absolute path like \"/locks\" (not \"/\")"
        )))
    }
}

/// The lock node of `full_key` under `root`.
pub(super) fn lock_path(root: &str, full_key: &str) -> String {
    format!("{root}/{}", encode_component(full_key))
}

/// Characters ZooKeeper refuses anywhere in a path.
fn needs_escape_in_path(ch: char) -> bool {
    let code = u32::from(ch);
    [
        0x0000..=0x001f,
        0x007f..=0x009f,
        0xd800..=0xf8ff,
        0xfff0..=0xffff,
    ]
    .into_iter()
    .any(|range| range.contains(&code))
}

/// A lock name as one path component: `/`, `%` and the characters ZooKeeper refuses are
/// percent-encoded (UTF-8 bytes), as are the names `.` and `..`; everything else is kept, so
/// the node stays readable for operators and for a Curator user naming the same path.
pub(super) fn encode_component(full_key: &str) -> String {
    let mut out = String::with_capacity(full_key.len());
    for ch in full_key.chars() {
        if ch == '/' || ch == '%' || needs_escape_in_path(ch) {
            for byte in ch.encode_utf8(&mut [0; 4]).bytes() {
                write!(out, "%{byte:02X}").ok();
            }
        } else {
            out.push(ch);
        }
    }
    if out == "." || out == ".." {
        out = out.replace('.', "%2E");
    }
    out
}

/// `_c_<uuid>-lock-`: the name (before the sequence ZooKeeper appends) of the node one
/// acquisition creates. The uuid is the owner token, so a create whose reply was lost finds its
/// node again (Curator's protected mode) and a retry with the same token finds its grant.
pub(super) fn node_prefix(owner: OwnerToken) -> String {
    let hex = owner.to_hex();
    format!(
        "_c_{}-{}-{}-{}-{}-{LOCK_NAME}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// The part of a child's name the queue is ordered by (Curator's `fixForSorting`): the text
/// after the last `lock-`, or the whole name for foreign children.
fn sort_key(name: &str) -> &str {
    name.rfind(LOCK_NAME)
        .map_or(name, |at| &name[at + LOCK_NAME.len()..])
}

/// Orders children as Curator does, so both libraries agree on who is first.
pub(super) fn sort_queue(children: &mut [String]) {
    children.sort_by(|a, b| sort_key(a).cmp(sort_key(b)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_one_valid_component() {
        assert_eq!(encode_component("shop:order:42"), "shop:order:42");
        assert_eq!(encode_component("a/b%c"), "a%2Fb%25c");
        assert_eq!(encode_component(".."), "%2E%2E");
        assert_eq!(encode_component("x\u{1}y"), "x%01y");
        assert_eq!(encode_component("库存"), "库存");
        assert_eq!(lock_path("/locks", "ns:k/1"), "/locks/ns:k%2F1");
    }

    #[test]
    fn roots_are_checked() {
        assert!(validate_root("/locks").is_ok());
        assert!(validate_root("/a/b").is_ok());
        for bad in ["", "/", "locks", "/locks/", "/a//b", "/a/./b", "/a/.."] {
            assert!(validate_root(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn queue_is_ordered_by_sequence_like_curator() {
        let token = OwnerToken::from_hex("0123456789abcdef0123456789abcdef").unwrap();
        assert_eq!(
            node_prefix(token),
            "_c_01234567-89ab-cdef-0123-456789abcdef-lock-"
        );
        let mut children = vec![
            "_c_ffff-lock-0000000003".to_owned(),
            "_c_0000-lock-0000000001".to_owned(),
            "_c_aaaa-lock-0000000002".to_owned(),
        ];
        sort_queue(&mut children);
        assert!(children[0].ends_with("01") && children[2].ends_with("03"));
    }
}
