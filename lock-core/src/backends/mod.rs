//! The stores: the trait family a backend implements ([`traits`], public as
//! `lock_core::backend`), the embedded [`memory`] backend, and one module per server behind
//! its cargo feature.

#[cfg(feature = "etcd")]
pub mod etcd;
#[cfg(any(feature = "zookeeper", feature = "etcd"))]
pub(crate) mod expiry;
pub(crate) mod memory;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub mod sql;
pub mod traits;
#[cfg(feature = "zookeeper")]
pub mod zookeeper;
