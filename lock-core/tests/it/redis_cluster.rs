//! The conformance suites of the lock and the primitives on the stack's Redis Cluster
//! (`LOCK_TEST_REDIS_CLUSTER_URLS`: 3 primaries with a replica each): every script routed to
//! the primary of its keys' slot, wake-ups by a `PUBLISH` that reaches every node.

use lock_core::redis::RedisConnection;
use lock_core::LockClient;

use crate::conformance::{self, conformance_suite, Harness};
use crate::primitives::primitives_suite;
use crate::redis_support::{BehindTheBack, Deployment};

pub(crate) struct OnDeployment {
    deployment: Deployment,
    behind: BehindTheBack<RedisConnection>,
}

/// The suites' harness on `deployment`, when it is there.
pub(crate) async fn on(deployment: Option<Deployment>) -> Option<OnDeployment> {
    let deployment = deployment?;
    let behind = deployment.behind().await;
    Some(OnDeployment { deployment, behind })
}

impl Harness for OnDeployment {
    async fn client(&self) -> LockClient {
        conformance::client_on(self.deployment.backend().await)
    }

    async fn delete_behind(&self, full_key: &str) {
        self.behind.delete_behind(full_key).await;
    }

    async fn queued(&self, full_key: &str) -> usize {
        self.behind.queued(full_key).await
    }
}

conformance_suite!(on(Deployment::cluster()));
primitives_suite!(on(Deployment::cluster()));

/// On a cluster the `WAIT` goes to the node that ran the grant (a pipeline goes to its first
/// keyed command's slot): with each primary's one replica, grants are acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_wait_for_the_primarys_replica() {
    let Some(deployment) = Deployment::cluster() else {
        return;
    };
    conformance::bounded(async {
        let backend = deployment
            .builder()
            .wait_for_replicas(1, std::time::Duration::from_millis(500))
            .connect()
            .await
            .unwrap();
        let locks = LockClient::new(backend);
        for n in 0..20 {
            let key = conformance::unique_key(&format!("acks-{n}"));
            let guard = locks.lock(&key).try_acquire().await.unwrap().unwrap();
            assert!(guard.release().await.unwrap());
        }
    })
    .await;
}

/// A backend on the application's own cluster connection: its scripts go on that connection,
/// its waiters are still woken by the sharded channels it subscribes from the nodes' URLs (the
/// poll cap is longer than the test's bound, so only a push can wake them), and the
/// application's connection keeps serving the application after the backend is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_shares_the_applications_cluster_connection() {
    let Some(Deployment::Cluster(nodes)) = Deployment::cluster() else {
        return;
    };
    conformance::bounded(async {
        let connection = redis::cluster::ClusterClient::builder(nodes.clone())
            .response_timeout(std::time::Duration::from_secs(2))
            .build()
            .unwrap()
            .get_async_connection()
            .await
            .unwrap();
        let connect = || {
            lock_core::RedisBackend::builder_cluster_from_parts(nodes.clone(), connection.clone())
                .poll_cap(std::time::Duration::from_secs(60))
                .connect()
        };
        let (a, b) = (
            conformance::client_on(connect().await.unwrap()),
            conformance::client_on(connect().await.unwrap()),
        );
        let behind = BehindTheBack {
            admin: RedisConnection::from(connection.clone()),
            names: connect().await.unwrap(),
        };
        for n in 0..6 {
            let key = conformance::unique_key(&format!("shared-connection-{n}"));
            let held = a.lock(&key).try_acquire().await.unwrap().unwrap();
            let waiter = tokio::spawn({
                let (b, key) = (b.clone(), key.clone());
                async move { b.lock(&key).await.unwrap() }
            });
            conformance::eventually("the waiter queued", || async {
                behind.queued(held.key().full()).await > 0
            })
            .await;
            let token = held.fencing_token();
            assert!(held.release().await.unwrap());
            let next = waiter.await.unwrap();
            assert!(next.fencing_token() > token);
            assert!(next.release().await.unwrap());
        }
        drop((a, b, behind));
        let mut app = connection.clone();
        let key = conformance::unique_key("application-key");
        let () = redis::cmd("SET")
            .arg(&key)
            .arg("still mine")
            .query_async(&mut app)
            .await
            .unwrap();
        let value: String = redis::cmd("GET")
            .arg(&key)
            .query_async(&mut app)
            .await
            .unwrap();
        assert_eq!(value, "still mine");
    })
    .await;
}
