//! `cargo xtask bench` (`src/bin/bench.rs`, `src/bin/allocations.rs`): the lock figures'
//! raw floors and the figures of their own, each measured beside its floor in the same run.
//!
//! - [`floor`]: per backend, the cheapest server operation on the same kind of client the
//!   backend uses, and the [`Summary`](floor::Summary) every figure is reported in.
//! - [`fair`], [`cache`], [`middleware`], [`idempotency`], [`stock`], [`etcd_contention`] and
//!   `redlock` (feature `compare`): the figures of one feature or backend each.
//! - `rslock_compare` (feature `compare`): the comparison rows with rslock.
//! - [`raw_scripts`]: lock-core's acquire and release scripts called raw, the floor of the
//!   lock's own server work; [`cluster`]: the 64-task rate on a Redis Cluster against one Redis;
//!   [`acknowledgement`]: what `WAIT` and `WAITAOF` after each grant cost.
//! - [`overhead`]: the same locked work with `#[distributed_lock]` and by hand.
//! - [`operator`]: what inspection, a forced release and a listing page cost on a backend.
//! - [`busy_cores`]: `--load`'s busy process on every core.

#[cfg(feature = "servers")]
pub mod acknowledgement;
pub mod busy_cores;
// The floors speak to every server (feature `servers`).
#[cfg(feature = "servers")]
pub mod cache;
#[cfg(feature = "servers")]
pub mod cluster;
#[cfg(feature = "servers")]
pub mod cpu;
#[cfg(feature = "servers")]
pub mod etcd_contention;
pub mod fair;
#[cfg(feature = "servers")]
pub mod floor;
#[cfg(feature = "servers")]
pub mod idempotency;
#[cfg(feature = "servers")]
pub mod middleware;
// Reported in the floors' `Summary` (feature `servers`).
#[cfg(feature = "servers")]
pub mod operator;
pub mod overhead;
#[cfg(feature = "servers")]
pub mod raw_scripts;
#[cfg(all(feature = "servers", feature = "compare"))]
pub mod redlock;
#[cfg(all(feature = "servers", feature = "compare"))]
pub mod rslock_compare;
#[cfg(feature = "servers")]
pub mod stock;
