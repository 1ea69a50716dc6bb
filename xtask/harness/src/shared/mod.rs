//! Harness code more than one tool uses (beside the crate root's [`connect`](crate::connect),
//! [`Percentiles`](crate::Percentiles) and the servers' URLs).
//!
//! - [`cluster_nodes`]: a Redis Cluster's primaries, from `CLUSTER NODES` (chaos scenario 19,
//!   the cluster bench).
//! - [`load`]: the HTTP client and the flash-sale load generator (the demos, the example
//!   apps' tests, chaos scenario 17).
//! - [`proxy`]: a TCP proxy to put between clients and any server, whose faults switch at run
//!   time (chaos, the payments crash demo).

pub mod cluster_nodes;
pub mod load;
pub mod proxy;
