//! `bench`'s floor of the lock's own server work: lock-core's acquire and release scripts (the
//! very Lua it sends, read from its source), called raw by `EVALSHA` on a `ConnectionManager`
//! as the backend's, with no library around them: no owner token drawn, no lease book, no
//! watchdog, no breaker, no batching. The uncontended cycle against it shows what the library
//! costs beyond its scripts (the goal: ≤ 1.05×); the `return 1` floor stays the transport's.

use redis::aio::ConnectionManager;
use redis::Script;
use tokio::time::Instant;

use crate::bench::floor::Summary;

/// `acquire.lua` after `lock_fence.lua`, as lock-core composes it.
fn acquire_script() -> Script {
    Script::new(&format!(
        "{}\n{}",
        include_str!("../../../../lock-core/src/redis/lua/lock_fence.lua"),
        include_str!("../../../../lock-core/src/redis/lua/acquire.lua")
    ))
}

/// `release.lua` after `publish_wake.lua` and `wake_next.lua`, as lock-core composes it.
fn release_script() -> Script {
    Script::new(&format!(
        "{}\n{}\n{}",
        include_str!("../../../../lock-core/src/redis/lua/publish_wake.lua"),
        include_str!("../../../../lock-core/src/redis/lua/wake_next.lua"),
        include_str!("../../../../lock-core/src/redis/lua/release.lua")
    ))
}

/// The scripts and a connection of their own.
pub struct RawScripts {
    connection: ConnectionManager,
    acquire: Script,
    release: Script,
    /// The label a client sends with each grant (this process's).
    label: lock_core::HolderLabel,
}

/// The lease the raw cycles ask for (ms), as the bench's lock does.
const LEASE_MS: u64 = 30_000;

impl RawScripts {
    /// Connects to `url` and loads the scripts.
    pub async fn connect(url: &str) -> Self {
        let client = redis::Client::open(url).expect("Redis URL");
        let mut connection = ConnectionManager::new(client)
            .await
            .expect("raw scripts' connection");
        let (acquire, release) = (acquire_script(), release_script());
        for script in [&acquire, &release] {
            script
                .prepare_invoke()
                .load_async(&mut connection)
                .await
                .expect("load a raw script");
        }
        let raw = Self {
            connection,
            acquire,
            release,
            label: lock_core::HolderLabel::from_process(),
        };
        for i in 0..200 {
            raw.cycle(&format!("raw-warm:{i}")).await;
        }
        raw
    }

    /// `iterations` acquire+release cycles, one task, on 64 keys in turn.
    pub async fn cycles(&self, iterations: usize) -> Summary {
        let mut samples = Vec::with_capacity(iterations);
        for i in 0..iterations {
            let key = format!("raw-solo:{}", i % 64);
            let start = Instant::now();
            self.cycle(&key).await;
            samples.push(start.elapsed());
        }
        Summary::of(&mut samples)
    }

    /// One grant and its release of `key`, as the backend sends them.
    async fn cycle(&self, key: &str) {
        let lock = format!("bench-raw:{{#{key}}}");
        let owner = "0123456789abcdef0123456789abcdef";
        let mut connection = self.connection.clone();
        // One command each, built as lock-core builds its own (no script invocation objects).
        // The holder record the lock's value carries: its client id, the time and the client's
        // label (this process's, as a client's default).
        let holder = format!(
            "{}|{}|{}",
            "0123456789abcdef",
            1_765_000_000_000_u64,
            self.label.as_stored()
        );
        let (granted, fence): (i64, i64) = redis::cmd("EVALSHA")
            .arg(self.acquire.get_hash())
            .arg(3)
            .arg(&lock)
            .arg(format!("{lock}:fence"))
            .arg(format!("{lock}:waiters"))
            .arg(owner)
            .arg(LEASE_MS)
            .arg("")
            .arg("0")
            .arg(60_000)
            .arg(86_400_000)
            .arg(holder)
            .query_async(&mut connection)
            .await
            .expect("raw acquire");
        assert_eq!(granted, 1, "raw acquire of {lock} found it held");
        let released: i64 = redis::cmd("EVALSHA")
            .arg(self.release.get_hash())
            .arg(2)
            .arg(&lock)
            .arg(format!("{lock}:waiters"))
            .arg(format!("{owner}:{fence}"))
            .arg("Pbench-raw:wake:")
            .query_async(&mut connection)
            .await
            .expect("raw release");
        assert_eq!(released, 1, "raw release of {lock}");
    }
}
