//! The stores: the trait family a backend implements ([`traits`], public as
//! `lock_core::backend`), the circuit breaker every server connection has ([`breaker`], public
//! as `lock_core::breaker`), the embedded [`memory`] backend, and one module per server behind
//! its cargo feature.

pub mod breaker;
#[cfg(feature = "etcd")]
pub mod etcd;
#[cfg(any(feature = "zookeeper", feature = "etcd"))]
pub(crate) mod expiry;
#[cfg(any(feature = "etcd", feature = "postgres", feature = "mysql"))]
pub(crate) mod in_flight;
pub(crate) mod memory;
#[cfg(any(feature = "zookeeper", feature = "etcd"))]
pub(crate) mod queue_rule;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub mod sql;
pub mod traits;
#[cfg(feature = "zookeeper")]
pub mod zookeeper;

/// Spreads re-checks of many waiters (and the probes of many breakers) over ±20% of `base`,
/// so they do not arrive together.
pub(crate) fn jitter(base: std::time::Duration) -> std::time::Duration {
    let mut byte = [0u8; 1];
    let spread = if getrandom::fill(&mut byte).is_ok() {
        f64::from(byte[0]) / 255.0
    } else {
        0.5
    };
    base.mul_f64(0.8 + 0.4 * spread)
}
