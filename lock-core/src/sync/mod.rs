//! The poison-free mutex guard every std mutex of the crate is locked with.

pub(crate) mod stop_flag;

use std::sync::{Mutex, MutexGuard};

/// Locks a std mutex, recovering from poisoning: every critical section here leaves the data
/// consistent, so a panic elsewhere must not turn into a panic in lock bookkeeping.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
