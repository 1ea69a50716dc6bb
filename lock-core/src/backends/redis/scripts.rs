//! The Lua scripts, loaded once per connection and run by SHA (`redis::Script` reloads them
//! after `NOSCRIPT`, e.g. when the server restarted).

use std::sync::LazyLock;

use redis::Script;

const WAKE_NEXT: &str = include_str!("lua/wake_next.lua");

/// Grants a lease (with the fencing `INCR` in the same step) or queues a waiter.
pub(super) static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/acquire.lua")));

/// Owner-checked release that wakes one waiter.
pub(super) static RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{WAKE_NEXT}\n{}", include_str!("lua/release.lua"))));

/// Releases a lease won under an owner token by an acquisition that was abandoned.
pub(super) static RELEASE_ABANDONED: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{WAKE_NEXT}\n{}",
        include_str!("lua/release_abandoned.lua")
    ))
});

/// Owner-checked renewal or check.
pub(super) static RENEW: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/renew.lua")));

/// Passes an unused wake-up on to the next waiter.
pub(super) static WAKE: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{WAKE_NEXT}\n{}", include_str!("lua/wake.lua"))));

/// Every script, for loading them up front.
pub(super) fn all() -> [&'static Script; 5] {
    [&ACQUIRE, &RELEASE, &RELEASE_ABANDONED, &RENEW, &WAKE]
}
