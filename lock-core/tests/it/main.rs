//! lock-core's integration tests, as one test binary: one module per suite, and the suites'
//! shared support as modules beside them. One binary links lock-core and its dependencies once,
//! where a binary per file linked them once each.
//!
//! A suite that needs a server is gated on its backend's feature and fails without its server
//! when `LOCK_TEST_REQUIRE_SERVERS=1` or `CI` is set (`cargo xtask test` sets the first);
//! otherwise it says loudly that it skipped. Run one suite with its module as the filter:
//! `cargo test -p lock-core --all-features --test it redis::`.
//!
//! `tests/redis_outage.rs` is a binary of its own: it installs a process-wide tracing
//! subscriber to count log lines, which every test of this binary would write to.

// The suites' shared support.
#[cfg(feature = "redis")]
mod acl_support;
mod cache_support;
mod child_support;
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
mod cluster_support;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "redis"))]
mod commit_support;
mod conformance;
#[cfg(feature = "metrics")]
mod metrics_support;
mod primitives;
#[cfg(any(feature = "redis", feature = "zookeeper"))]
mod proxy_support;
#[cfg(feature = "redis")]
mod redis_support;
#[cfg(any(feature = "mysql", feature = "postgres"))]
mod sql_support;
#[cfg(any(
    feature = "etcd-tls",
    all(feature = "zookeeper-tls", feature = "zookeeper-sasl"),
    feature = "postgres-tls",
    feature = "mysql-tls"
))]
mod tls_support;

// The suites, each in the file that held its own test binary before.
mod admin_console;
mod cache;
#[cfg(feature = "metrics")]
mod cache_metrics;
#[cfg(feature = "redis")]
mod cache_processes;
mod election;
#[cfg(feature = "etcd")]
mod etcd;
#[cfg(feature = "etcd")]
mod etcd_cluster;
#[cfg(feature = "etcd-tls")]
mod etcd_tls;
#[cfg(all(feature = "redis", feature = "postgres", feature = "mysql"))]
mod fenced;
#[cfg(feature = "metrics")]
mod http_metrics;
mod idempotency;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "redis"))]
mod idempotency_commit;
mod lease_timing;
mod memory;
#[cfg(feature = "metrics")]
mod metrics;
mod multi_lock;
#[cfg(feature = "mysql")]
mod mysql;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
mod redis_cluster;
#[cfg(feature = "redis")]
mod redis_failover;
#[cfg(feature = "redis")]
mod redis_operator;
#[cfg(feature = "redis")]
mod redis_prefix;
#[cfg(feature = "redis")]
mod redis_primitives;
#[cfg(feature = "redis")]
mod redis_restart;
#[cfg(feature = "redis-tls")]
mod redis_secure;
#[cfg(feature = "redis")]
mod redis_sentinel;
#[cfg(feature = "redis")]
mod redlock;
mod result_store;
mod run_once;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod sql_stock;
#[cfg(any(feature = "postgres-tls", feature = "mysql-tls"))]
mod sql_tls;
mod stock;
#[cfg(feature = "zookeeper")]
mod zk_ensemble;
#[cfg(feature = "zookeeper")]
mod zookeeper;
#[cfg(feature = "zookeeper")]
mod zookeeper_interop;
#[cfg(all(feature = "zookeeper-tls", feature = "zookeeper-sasl"))]
mod zookeeper_tls;
