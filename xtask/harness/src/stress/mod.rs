//! `cargo xtask stress` (`src/bin/stress.rs`): processes × tasks contending on a backend, with
//! counters that catch every violation of what the lock or primitive guarantees.
//!
//! - [`primitive`]: `--primitive fair|rw|semaphore|latch`, each primitive with its own
//!   invariant counters, faults and `--break-check`.
//! - [`worker_reports`]: the worker processes' one JSON report line each.

pub mod primitive;
pub mod worker_reports;
