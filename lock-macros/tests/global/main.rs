//! The process-wide defaults, before and after they are installed: the default client of
//! `#[distributed_lock]` ([`lock`]) and the default cache of `#[single_flight]`
//! ([`single_flight`]). Their own test binary: each can be installed once per process, and no
//! other test may see them installed or missing.

mod lock;
mod single_flight;
