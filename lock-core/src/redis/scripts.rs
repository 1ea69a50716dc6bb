//! The Lua scripts, loaded once per connection and run by SHA (`redis::Script` reloads them
//! after `NOSCRIPT`, e.g. when the server restarted).

use std::sync::LazyLock;

use redis::Script;

pub(super) static WAKE_NEXT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{}\n{}",
        include_str!("lua/publish_wake.lua"),
        include_str!("lua/wake_next.lua")
    )
});

/// The next fencing token of a lock, prepended to the scripts that grant a lock's lease.
pub(super) const LOCK_FENCE: &str = include_str!("lua/lock_fence.lua");

/// Grants a lease (with the fencing `INCR` in the same step) or queues a waiter.
pub(super) static ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{LOCK_FENCE}\n{}",
        include_str!("lua/acquire.lua")
    ))
});

/// Owner-checked release that wakes one waiter.
pub(super) static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{}\n{}",
        *WAKE_NEXT,
        include_str!("lua/release.lua")
    ))
});

/// Releases a lease won under an owner token by an acquisition that was abandoned.
pub(super) static RELEASE_ABANDONED: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{}\n{}",
        *WAKE_NEXT,
        include_str!("lua/release_abandoned.lua")
    ))
});

/// Raises a lock's fencing counter's TTL (`keep_fence`).
pub(super) static KEEP_FENCE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/keep_fence.lua")));

/// Owner-checked renewal or check.
pub(super) static RENEW: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/renew.lua")));

/// Passes an unused wake-up on to the next waiter.
pub(super) static WAKE: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{}\n{}", *WAKE_NEXT, include_str!("lua/wake.lua"))));

const PRIMITIVE_LIB: &str = include_str!("lua/primitive_lib.lua");

const PUBLISH_WAKE: &str = include_str!("lua/publish_wake.lua");

/// A script of the fair lock, read-write lock and semaphore: `primitive_lib.lua` and `body`.
fn primitive(body: &str) -> Script {
    Script::new(&format!("{PUBLISH_WAKE}\n{PRIMITIVE_LIB}\n{body}"))
}

/// Grants a fair lock's turn, a read or write share or permits, or queues the caller.
pub(super) static PRIMITIVE_ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| primitive(include_str!("lua/primitive_acquire.lua")));

/// Owner-checked renewal or check of a primitive's lease.
pub(super) static PRIMITIVE_RENEW: LazyLock<Script> =
    LazyLock::new(|| primitive(include_str!("lua/primitive_renew.lua")));

/// Owner-checked release of a primitive's lease that wakes (or hands over to) the next waiter.
pub(super) static PRIMITIVE_RELEASE: LazyLock<Script> =
    LazyLock::new(|| primitive(include_str!("lua/primitive_release.lua")));

/// Removes what an abandoned acquisition of a primitive left: its queue entry, its lease.
pub(super) static PRIMITIVE_ABANDON: LazyLock<Script> =
    LazyLock::new(|| primitive(include_str!("lua/primitive_abandon.lua")));

/// A primitive's queue length, semaphore size and permits held.
pub(super) static PRIMITIVE_INFO: LazyLock<Script> =
    LazyLock::new(|| primitive(include_str!("lua/primitive_info.lua")));

/// The leader of an election: its fence and participant id.
pub(super) static PRIMITIVE_LEADER: LazyLock<Script> =
    LazyLock::new(|| primitive(include_str!("lua/primitive_leader.lua")));

/// Sets a semaphore's size.
pub(super) static SET_PERMITS: LazyLock<Script> =
    LazyLock::new(|| primitive(include_str!("lua/set_permits.lua")));

/// Starts a count-down latch unless one runs.
pub(super) static LATCH_CREATE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/latch_create.lua")));

/// Counts a latch down, waking its waiters at zero.
pub(super) static LATCH_COUNT_DOWN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{PUBLISH_WAKE}\n{}",
        include_str!("lua/latch_count_down.lua")
    ))
});

/// Registers a latch waiter, or says the latch is open.
pub(super) static LATCH_WAIT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/latch_wait.lua")));

/// `read`, the operator's scripts' reading that takes a key of another type for nothing.
const READ_LENIENT: &str = include_str!("lua/read_lenient.lua");

/// Reads a lock for the operator's view (loaded when first used, as the other operator scripts).
pub(super) static INSPECT_LOCK: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{READ_LENIENT}\n{}",
        include_str!("lua/inspect_lock.lua")
    ))
});

/// Releases a lock by force, with its audit record.
pub(super) static FORCE_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{LOCK_FENCE}\n{}\n{}",
        *WAKE_NEXT,
        include_str!("lua/force_release.lua")
    ))
});

/// Reads a fair lock, read-write lock, semaphore or election for the operator's view.
pub(super) static INSPECT_PRIMITIVE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{READ_LENIENT}\n{}",
        include_str!("lua/inspect_primitive.lua")
    ))
});

/// Releases one holder of a fair lock, read-write lock, semaphore or election by force.
pub(super) static PRIMITIVE_FORCE_RELEASE: LazyLock<Script> =
    LazyLock::new(|| primitive(include_str!("lua/primitive_force_release.lua")));

/// Every script, for loading them up front.
pub(super) fn all() -> [&'static Script; 16] {
    [
        &ACQUIRE,
        &RELEASE,
        &RELEASE_ABANDONED,
        &KEEP_FENCE,
        &RENEW,
        &WAKE,
        &PRIMITIVE_ACQUIRE,
        &PRIMITIVE_RENEW,
        &PRIMITIVE_RELEASE,
        &PRIMITIVE_ABANDON,
        &PRIMITIVE_INFO,
        &PRIMITIVE_LEADER,
        &SET_PERMITS,
        &LATCH_CREATE,
        &LATCH_COUNT_DOWN,
        &LATCH_WAIT,
    ]
}
