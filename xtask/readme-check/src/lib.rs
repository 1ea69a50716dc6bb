//! The READMEs' (the workspace's and each published crate's) and the guide's Rust code blocks as doctests: `cargo test -p readme-check --doc`
//! compiles each ```rust block as written, runs those on memory and only compiles the `no_run`
//! ones, which need a server. One struct per page with Rust blocks; the crate itself is empty.
//! A block copied as written compiles without a warning: doctests deny them (but for
//! `dead_code`: a block defines the handlers and helpers an application would call).

#![doc(test(attr(deny(warnings), allow(dead_code))))]

/// The workspace README.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct MainReadme;

/// The architecture map: its naming table's names, compiled.
#[cfg(doctest)]
#[doc = include_str!("../../../ARCHITECTURE.md")]
struct Architecture;

/// lock-macros' README.
#[cfg(doctest)]
#[doc = include_str!("../../../lock-macros/README.md")]
struct LockMacrosReadme;

/// lock-core's README (its crates.io page).
#[cfg(doctest)]
#[doc = include_str!("../../../lock-core/README.md")]
struct LockCoreReadme;

/// lock-tower's README (its crates.io page).
#[cfg(doctest)]
#[doc = include_str!("../../../lock-tower/README.md")]
struct LockTowerReadme;

/// lock-actix's README (its crates.io page).
#[cfg(doctest)]
#[doc = include_str!("../../../lock-actix/README.md")]
struct LockActixReadme;

/// The guide: production setup.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/production.md")]
struct GuideProduction;

/// The guide: the operator's view.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/operator.md")]
struct GuideOperator;

/// The guide: the lock.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/lock.md")]
struct GuideLock;

/// The guide: fair locks, read-write locks, semaphores, latches.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/primitives.md")]
struct GuidePrimitives;

/// The guide: leader election.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/election.md")]
struct GuideElection;

/// The guide: cache stampedes and the response cache.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/cache.md")]
struct GuideCache;

/// The guide: idempotent endpoints.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/idempotency.md")]
struct GuideIdempotency;

/// The guide: inventory and the keyed-lock middleware.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/inventory.md")]
struct GuideInventory;

/// The guide: the macros.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/macros.md")]
struct GuideMacros;

/// The guide: the memory backend.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/backends/memory.md")]
struct GuideMemory;

/// The guide: the Redis backend.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/backends/redis.md")]
struct GuideRedis;

/// The guide: Redis Cluster and Sentinel.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/backends/redis-cluster.md")]
struct GuideRedisCluster;

/// The guide: RedLock.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/backends/redlock.md")]
struct GuideRedlock;

/// The guide: the ZooKeeper backend.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/backends/zookeeper.md")]
struct GuideZooKeeper;

/// The guide: the etcd backend.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/backends/etcd.md")]
struct GuideEtcd;

/// The guide: the PostgreSQL backend.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/backends/postgres.md")]
struct GuidePostgres;

/// The guide: the MySQL backend.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/backends/mysql.md")]
struct GuideMySql;
