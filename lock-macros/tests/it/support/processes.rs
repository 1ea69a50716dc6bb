//! One test in two processes: the test binary runs itself again for an ignored worker test,
//! both meet at a barrier in Redis, and count there, where the parent reads the totals.

use std::future::Future;
use std::process::{Command, Stdio};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use tokio::time::timeout;

/// An ignored test of this binary that another test runs as its second process.
pub(crate) struct SecondProcess {
    /// The ignored test's name, as `--exact` wants it.
    pub(crate) test: &'static str,
    /// The variable that hands it the namespace; unset (run by hand), the test does nothing.
    pub(crate) env: &'static str,
}

impl SecondProcess {
    /// In the worker: the namespace the parent handed over, `None` when run by hand.
    pub(crate) fn namespace(&self) -> Option<String> {
        std::env::var(self.env).ok()
    }

    /// Starts the worker on `namespace`, runs `here` within `bound`, then waits for the worker
    /// and fails the test, with the worker's output, unless its one test passed.
    pub(crate) async fn run_beside(
        &self,
        namespace: &str,
        bound: Duration,
        here: impl Future<Output = ()>,
    ) {
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", self.test, "--ignored", "--nocapture"])
            .env(self.env, namespace)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        timeout(bound, here).await.expect("timed out");
        let output = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        assert!(
            output.status.success() && String::from_utf8_lossy(&output.stdout).contains("1 passed"),
            "the child process failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// The Redis keys the two processes of one run share: `lock-macros-test:{namespace}:{name}`.
pub(crate) struct Counters {
    /// `lock-macros-test:{namespace}`, the keys' common prefix.
    pub(crate) prefix: String,
    /// A raw connection for the bookkeeping.
    pub(crate) admin: MultiplexedConnection,
}

impl Counters {
    /// The counters of the run in `namespace`, on the Redis server at `url`.
    pub(crate) async fn connect(url: &str, namespace: &str) -> Self {
        Self {
            prefix: format!("lock-macros-test:{namespace}"),
            admin: super::admin(url).await,
        }
    }

    /// The full key of counter `name`.
    pub(crate) fn key(&self, name: &str) -> String {
        format!("{}:{name}", self.prefix)
    }

    /// The barrier: says `who` is ready, and returns once both processes are.
    pub(crate) async fn meet(&mut self, who: &str) {
        let ready = self.key("ready");
        let _: i64 = redis::cmd("SADD")
            .arg(&ready)
            .arg(who)
            .query_async(&mut self.admin)
            .await
            .unwrap();
        loop {
            let count: i64 = redis::cmd("SCARD")
                .arg(&ready)
                .query_async(&mut self.admin)
                .await
                .unwrap();
            if count == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Counter `name`'s value.
    pub(crate) async fn get<T: redis::FromRedisValue>(&mut self, name: &str) -> T {
        redis::cmd("GET")
            .arg(self.key(name))
            .query_async(&mut self.admin)
            .await
            .unwrap()
    }

    /// Deletes the counters `names` and the barrier's set.
    pub(crate) async fn delete(&mut self, names: &[&str]) {
        let keys: Vec<String> = names
            .iter()
            .chain(&["ready"])
            .map(|name| self.key(name))
            .collect();
        let _: i64 = redis::cmd("DEL")
            .arg(keys)
            .query_async(&mut self.admin)
            .await
            .unwrap();
    }
}
