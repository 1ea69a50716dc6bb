//! `cargo xtask chaos`: the fault catalogue of issue 15, run against every backend, with a
//! fenced resource that counts what got through.
//!
//! - [`proxy`](crate::shared::proxy) (in `shared/`, the payments crash demo uses it too): a TCP
//!   proxy to put between clients and any server, whose faults (pass, delay, stall, blackhole,
//!   reset, per direction) switch at run time.
//! - [`resource`]: the fenced resource every verdict comes from (a `RedisFencedStore` value
//!   on the stack's Redis, with overlap and stale-write counters beside it).
//! - [`worker`]: a lock client in a process of its own (`chaos worker ...`), to pause with
//!   SIGSTOP and kill with SIGKILL; [`process`] is the coordinator's handle on one.
//! - [`drops`], [`crowd`], [`starve`]: what a worker runs in scenarios 8, 10 and 11 (acquires
//!   dropped at random points, a crowd of waiters on one key, a starved runtime).
//! - [`target`]: the lock server per backend, reached straight or through a proxy, and the
//!   operator's hand on it; [`server_process`]: its processes, paused in scenario 2.
//! - [`cache_app`]: an instance of a service behind the response cache, for the cache
//!   scenarios (15, 16); [`cache_worker`]: one in a process of its own, killed in scenario 16.
//! - [`web`]: the service scenario 17 takes Redis away from (`chaos web ...`): the response
//!   cache, idempotency and keyed-lock layers on one connection, its log lines as events.
//! - [`scenarios`]: the catalogue; [`report`]: the table.

#[cfg(feature = "servers")]
pub mod cache_app;
#[cfg(feature = "servers")]
pub mod cache_worker;
#[cfg(feature = "servers")]
pub mod cluster_workload;
#[cfg(feature = "servers")]
pub mod crowd;
#[cfg(feature = "servers")]
pub mod drops;
#[cfg(feature = "servers")]
pub mod process;
#[cfg(feature = "servers")]
pub mod random;
#[cfg(feature = "servers")]
pub mod report;
#[cfg(feature = "servers")]
pub mod resource;
#[cfg(feature = "servers")]
pub mod scenarios;
#[cfg(feature = "servers")]
pub mod server_process;
#[cfg(feature = "servers")]
pub mod starve;
#[cfg(feature = "servers")]
pub mod target;
#[cfg(feature = "servers")]
pub mod web;
#[cfg(feature = "servers")]
pub mod worker;
