//! A 3-member ZooKeeper ensemble on loopback losing a follower, then its leader, under a
//! contended lock workload: no overlaps, fencing tokens increasing, progress after each kill.
//!
//! The test runs its own ensemble (`lock_testing::cluster::ZooKeeperEnsemble`: `java`
//! with the jar `zookeeperd` installs, as `cargo xtask stack up` does) on free loopback ports,
//! since it must kill members. Without them it fails when `LOCK_TEST_REQUIRE_SERVERS=1` or
//! `CI` is set, and otherwise skips loudly. The scenario is in `cluster_support::failover`.

use std::time::Duration;

use lock_core::ZooKeeperBackend;
use lock_testing::cluster::{ZooKeeperEnsemble, ZOOKEEPER_JAR};

use crate::cluster_support::{data_dir, failover, require};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_ensemble_survives_follower_and_leader_loss() {
    if require(
        &format!("ZooKeeper (`java` and {ZOOKEEPER_JAR})"),
        ZooKeeperEnsemble::installed(),
    )
    .is_none()
    {
        return;
    }
    let ensemble = ZooKeeperEnsemble::start(data_dir("zk-ensemble")).unwrap();
    let key = format!("ensemble:{}", std::process::id());
    failover(ensemble, &key, |url| async move {
        ZooKeeperBackend::builder(url)
            .session_timeout(Duration::from_secs(4))
            .connect_timeout(Duration::from_secs(3))
            .connect()
            .await
            .unwrap()
    })
    .await;
}
