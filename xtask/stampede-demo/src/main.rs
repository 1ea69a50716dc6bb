//! `cargo xtask demo stampede [--backend memory|redis] [--instances N] [--clients C]
//! [--rate R] [--seconds S] [--origin-ms D] [--fresh-ms F] [--swr-ms W] [--redis-url URL]`:
//! N instances of the product service in this process (axum and actix-web in turn, each on
//! its own loopback port, each with its own cache client) share one cache backend and one
//! slow origin; then the two phases of [`lock_harness::demo::stampede`], a summary table, and
//! PASS/FAIL (exit status 1 on FAIL).
//!
//! On memory the instances share one in-process store and lock backend; on Redis each
//! instance connects on its own, as separate processes would, and they meet only in Redis.

use std::time::Duration;

use example_support::backend::redis_url;
use example_support::flags::{usage_error, Flags};
use example_support::product::{CacheBackend, Origin, ProductPolicy, ProductService};
use lock_harness::demo::inventory::unique;
use lock_harness::demo::stampede::{print_table, Stampede};

const FLAGS: &[&str] = &[
    "backend",
    "instances",
    "clients",
    "rate",
    "seconds",
    "origin-ms",
    "fresh-ms",
    "swr-ms",
    "redis-url",
];

#[tokio::main]
async fn main() {
    let flags = Flags::of_process(FLAGS);
    let number = |name, default| flags.number_or_exit(name, default);
    let kind = flags.backend_or_exit();
    let backend = CacheBackend::for_kind(kind, &redis_url(&flags))
        .unwrap_or_else(|e| usage_error(&e.to_string()));
    let instances = number("instances", 2).max(1) as usize;
    let clients = number("clients", 1_000).max(1) as usize;
    let rate = number("rate", 1_000).max(1);
    let seconds = Duration::from_secs(number("seconds", 5).max(1));
    let defaults = ProductPolicy::default();
    let millis =
        |name, default: Duration| Duration::from_millis(number(name, default.as_millis() as u64));
    let policy = ProductPolicy {
        fresh: millis("fresh-ms", defaults.fresh),
        stale_while_revalidate: millis("swr-ms", defaults.stale_while_revalidate),
        origin_delay: millis("origin-ms", defaults.origin_delay),
        ..defaults
    };
    if let Err(e) = policy.freshness().validate() {
        usage_error(&e.to_string());
    }

    // One database behind every instance, as in production; its calls are what we count.
    let origin = Origin::new(policy.origin_delay, policy.fresh);
    let namespace = unique("stampede");
    let mut targets = Vec::new();
    let mut names = Vec::new();
    for index in 0..instances {
        let cache = backend
            .cache(&namespace, policy.freshness())
            .await
            .unwrap_or_else(|e| {
                usage_error(&format!("cannot reach the {} backend: {e}", backend.name()))
            });
        let framework = if index % 2 == 0 { "axum" } else { "actix" };
        let service = ProductService::new(
            format!("{framework}-{index}"),
            cache,
            origin.clone(),
            policy,
        )
        .unwrap_or_else(|e| usage_error(&format!("instance {index}: {e}")));
        let base = match framework {
            "axum" => stampede_axum::spawn(service).await,
            _ => stampede_actix::spawn(service, 1),
        }
        .unwrap_or_else(|e| usage_error(&format!("cannot start instance {index}: {e}")));
        names.push(format!(
            "{framework} {}",
            base.trim_start_matches("http://")
        ));
        targets.push(base);
    }
    println!(
        "stampede on {}, {instances} instances: {}",
        backend.name(),
        names.join(", ")
    );
    println!(
        "origin {} ms; fresh {} ms, stale-while-revalidate {} ms",
        policy.origin_delay.as_millis(),
        policy.fresh.as_millis(),
        policy.stale_while_revalidate.as_millis(),
    );

    let stampede = Stampede {
        targets,
        origin,
        policy,
        progress: true,
    };
    println!("\nphase 1, cold key: {clients} clients at once ask for one product nobody has read");
    let cold = stampede.cold_key(clients).await;
    println!(
        "\nphase 2, hot key expiring under steady load: {rate} req/s for {} s on one product",
        seconds.as_secs()
    );
    let (hot, fill) = stampede.hot_key(rate, seconds).await;
    println!(
        "  (first fill: {} in {:.1} ms, not counted below)",
        fill.cache_status.as_deref().unwrap_or("error"),
        fill.latency.as_secs_f64() * 1e3
    );
    let reports = [cold, hot];
    print_table(&reports);
    println!();
    let mut failed = false;
    for report in &reports {
        let verdict = if report.passed() { "PASS" } else { "FAIL" };
        failed |= !report.passed();
        let promise = match report.name {
            "cold key" => format!(
                "{} concurrent requests, origin calls for the cold product: {}",
                report.requests,
                report.per_expiry.first().unwrap_or(&0)
            ),
            _ => format!(
                "{} expiries under load, at most {} origin call(s) per expiry;\n      \
                 {} requests waited for the origin, p99 {:.1} ms against a {} ms origin",
                report.per_expiry.len().saturating_sub(1),
                report.max_per_expiry(),
                report.waited(),
                report.latency.p99.as_secs_f64() * 1e3,
                policy.origin_delay.as_millis()
            ),
        };
        println!("{verdict}  {}: {promise}", report.name);
    }
    if failed {
        std::process::exit(1);
    }
}
