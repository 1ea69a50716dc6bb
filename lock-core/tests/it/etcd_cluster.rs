//! A 3-member etcd cluster on loopback losing a follower, then its leader, under a contended
//! lock workload: no overlaps, fencing tokens increasing, progress after each kill.
//!
//! The test runs its own cluster (`lock_testing::cluster::EtcdCluster`: the `etcd` binary
//! of `etcd-server`, as `cargo xtask stack up` does) on free loopback ports, since it must kill
//! members. Without it it fails when `LOCK_TEST_REQUIRE_SERVERS=1` or `CI` is set, and
//! otherwise skips loudly. The scenario is in `cluster_support::failover`.

use std::time::Duration;

use lock_core::EtcdBackend;
use lock_testing::cluster::EtcdCluster;

use crate::cluster_support::{data_dir, failover, require};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_cluster_survives_follower_and_leader_loss() {
    if require("etcd (`etcd-server`)", EtcdCluster::installed()).is_none() {
        return;
    }
    let cluster = EtcdCluster::start(data_dir("etcd-cluster")).unwrap();
    let key = format!("cluster:{}", std::process::id());
    failover(cluster, &key, |url| async move {
        EtcdBackend::builder(&url)
            .connect_timeout(Duration::from_secs(2))
            .response_timeout(Duration::from_secs(2))
            .connect()
            .await
            .unwrap()
    })
    .await;
}
