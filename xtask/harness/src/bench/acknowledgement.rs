//! `cargo xtask bench --backend redis-sentinel`: what replication and durability
//! acknowledgement cost a grant. The uncontended acquire+release cycle, one task, on the
//! Sentinel set's primary (two replicas, no persistence) with no acknowledgement,
//! `wait_for_replicas(1)` and `wait_for_replicas(2)`; and, when the stack's `redis-secure` set
//! runs (Redis 8, TLS, `appendfsync always`, one replica), with none, `wait_for_replicas(1)`,
//! `wait_for_aof(true, 0)`, the two together, and `wait_for_aof(false, 1)` (a replica's fsync,
//! which it reports once a second: a few cycles only). Each setting's rounds alternate with
//! the others' in one run, and each ratio is to the same set without acknowledgement.

use std::time::Duration;

use lock_core::redis::redis::sentinel::{SentinelClientBuilder, SentinelServerType};
use lock_core::redis::redis::{IntoConnectionInfo, TlsCertificates, TlsMode};
use lock_core::redis::RedisBackendBuilder;
use lock_core::{LockClient, RedisBackend};
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::bench::floor::Summary;

/// Alternating rounds of each setting.
const ROUNDS: usize = 5;
/// Cycles per setting and round.
const CYCLES: usize = 200;
/// Cycles per round of a setting that waits for a replica's fsync (about a second each).
const SLOW_CYCLES: usize = 2;
/// The server's wait for the acknowledgements, well above what a loopback replica needs.
const ACK_TIMEOUT: Duration = Duration::from_millis(500);
/// The wait for a replica's fsync, which it reports once a second, and the response timeout
/// that leaves room for it.
const FSYNC_TIMEOUT: Duration = Duration::from_millis(2500);
const FSYNC_RESPONSE_TIMEOUT: Duration = Duration::from_secs(4);

/// One setting: its name, how it builds on a backend builder, and its cycles per round.
struct Setting {
    name: &'static str,
    apply: fn(RedisBackendBuilder) -> RedisBackendBuilder,
    cycles: usize,
}

/// No acknowledgement: what each ratio is to.
const NONE: Setting = Setting {
    name: "no acknowledgement",
    apply: |builder| builder,
    cycles: CYCLES,
};

/// `WAIT 1` after each grant.
const REPLICAS_1: Setting = Setting {
    name: "wait_for_replicas(1)",
    apply: |builder| builder.wait_for_replicas(1, ACK_TIMEOUT),
    cycles: CYCLES,
};

/// The Sentinel set's settings.
const SENTINEL_SETTINGS: &[Setting] = &[
    NONE,
    REPLICAS_1,
    Setting {
        name: "wait_for_replicas(2)",
        apply: |builder| builder.wait_for_replicas(2, ACK_TIMEOUT),
        cycles: CYCLES,
    },
];

/// The `redis-secure` set's settings.
const SECURE_SETTINGS: &[Setting] = &[
    NONE,
    REPLICAS_1,
    Setting {
        name: "wait_for_aof(true, 0)",
        apply: |builder| builder.wait_for_aof(true, 0, ACK_TIMEOUT),
        cycles: CYCLES,
    },
    Setting {
        name: "replicas(1) + aof(true, 0)",
        apply: |builder| {
            builder
                .wait_for_replicas(1, ACK_TIMEOUT)
                .wait_for_aof(true, 0, ACK_TIMEOUT)
        },
        cycles: CYCLES,
    },
    Setting {
        name: "wait_for_aof(false, 1)",
        apply: |builder| {
            builder
                .response_timeout(FSYNC_RESPONSE_TIMEOUT)
                .wait_for_aof(false, 1, FSYNC_TIMEOUT)
        },
        cycles: SLOW_CYCLES,
    },
];

/// Where the stack's sets are.
pub struct Sets {
    /// The Sentinel set's sentinels.
    pub sentinels: Vec<String>,
    /// The service the Sentinel set's sentinels monitor.
    pub service: String,
    /// The `redis-secure` set, when it runs.
    pub secure: Option<Secure>,
}

/// The `redis-secure` set: its sentinel's URL (with the ACL user), service and CA file.
pub struct Secure {
    /// The sentinel's `rediss://` URL, with the ACL user and password.
    pub sentinel: String,
    /// The service it monitors.
    pub service: String,
    /// The private CA's PEM file.
    pub ca_file: String,
}

/// Measures, prints and returns the figures for the report.
pub async fn run(sets: Sets) -> Value {
    println!("bench: replication acknowledgement, uncontended acquire+release, one task\n");
    let sentinel = measure(
        "Sentinel set (Redis 7.0, 2 replicas, no persistence)",
        SENTINEL_SETTINGS,
        || RedisBackend::builder_sentinel(sets.sentinels.clone(), sets.service.clone()),
    )
    .await;
    let secure = match sets.secure {
        Some(secure) => {
            let ca = std::fs::read(&secure.ca_file)
                .unwrap_or_else(|e| panic!("{}: {e}", secure.ca_file));
            measure(
                "redis-secure set (Redis 8, TLS, appendfsync always, 1 replica)",
                SECURE_SETTINGS,
                || secure_builder(&secure, &ca),
            )
            .await
        }
        None => {
            println!("redis-secure set: not running (cargo xtask stack up --redis-secure)");
            Value::Null
        }
    };
    json!({ "sentinel": sentinel, "secure": secure })
}

/// The secure set through a `SentinelClient` with its private CA on both legs and the URL's
/// ACL user towards the data nodes too.
fn secure_builder(secure: &Secure, ca: &[u8]) -> RedisBackendBuilder {
    let info = secure
        .sentinel
        .as_str()
        .into_connection_info()
        .expect("the sentinel's URL");
    let settings = info.redis_settings();
    let (user, password) = (
        settings.username().unwrap_or_default(),
        settings.password().unwrap_or_default(),
    );
    let certificates = || TlsCertificates {
        client_tls: None,
        root_cert: Some(ca.to_vec()),
    };
    let client = SentinelClientBuilder::new(
        [info.addr().clone()],
        &secure.service,
        SentinelServerType::Master,
    )
    .and_then(|builder| {
        builder
            .set_client_to_sentinel_username(user)
            .set_client_to_sentinel_password(password)
            .set_client_to_sentinel_certificates(certificates())
            .set_client_to_redis_tls_mode(TlsMode::Secure)
            .set_client_to_redis_username(user)
            .set_client_to_redis_password(password)
            .set_client_to_redis_certificates(certificates())
            .build()
    })
    .expect("the secure set's sentinel client");
    RedisBackend::builder_from_sentinel_client(client)
}

/// The settings' cycles on one set, in alternating rounds; prints a line per setting.
async fn measure(
    set: &str,
    settings: &[Setting],
    builder: impl Fn() -> RedisBackendBuilder,
) -> Value {
    let mut clients = Vec::new();
    for setting in settings {
        let backend = (setting.apply)(builder())
            .connect()
            .await
            .unwrap_or_else(|e| panic!("{set}, {}: {}", setting.name, e.with_causes()));
        let locks = LockClient::builder(backend)
            .namespace(format!("bench-acks-{}", std::process::id()))
            .build()
            .expect("client");
        cycles(&locks, setting.cycles.min(50)).await;
        clients.push(locks);
    }
    let mut samples = vec![Vec::new(); settings.len()];
    for _ in 0..ROUNDS {
        for ((locks, setting), samples) in clients.iter().zip(settings).zip(&mut samples) {
            samples.extend(cycles(locks, setting.cycles).await);
        }
    }
    println!("{set}");
    let mut report = Vec::new();
    let base = Summary::of(&mut samples[0]).p50;
    for (setting, samples) in settings.iter().zip(&mut samples) {
        let summary = Summary::of(samples);
        let ratio = summary.p50.as_secs_f64() / base.as_secs_f64();
        println!(
            "  {:<28} p50 {:>9.1} µs  p99 {:>9.1} µs  {ratio:.2}× no acknowledgement",
            setting.name,
            micros(summary.p50),
            micros(summary.p99)
        );
        report.push(json!({
            "setting": setting.name,
            "p50_us": micros(summary.p50),
            "p99_us": micros(summary.p99),
            "ratio": ratio,
        }));
    }
    println!();
    Value::Array(report)
}

/// `n` uncontended acquire+release cycles on keys of their own; each one's time.
async fn cycles(locks: &LockClient, n: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let started = Instant::now();
        let guard = locks
            .lock(format!("ack:{i}"))
            .try_acquire()
            .await
            .unwrap_or_else(|e| panic!("acquire: {}", e.with_causes()))
            .expect("an uncontended key");
        guard.release().await.expect("release");
        times.push(started.elapsed());
    }
    times
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}
