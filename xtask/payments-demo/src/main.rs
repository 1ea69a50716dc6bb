//! `cargo xtask demo idempotency [--backend memory|redis|postgres] [--instances N]
//! [--clients C] [--keys K] [--duplicates D] [--retries R] [--handler-ms H] [--redis-url URL]
//! [--postgres-url URL]`: N instances of the payments service in this process (axum and
//! actix-web in turn, each on its own loopback port, each with its own connections) share one
//! backend and one ledger; then the three phases of [`lock_harness::demo::payments::demo`]
//! (duplicates, retries after completion, keys reused with another amount), a summary table,
//! and PASS/FAIL (exit status 1 on FAIL).
//!
//! On memory the instances share one in-process store, lock backend and ledger (no server,
//! no system package: `cargo run -p payments-demo --no-default-features --bin idempotency`);
//! on redis each instance connects to Redis (records, claims) and PostgreSQL (the ledger) on
//! its own, as separate processes would; on postgres all three are in PostgreSQL.

use std::time::Duration;

use example_support::flags::{usage_error, Flags};
use example_support::payments::{PaymentService, PaymentsBackend, PaymentsConfig};
use lock_harness::demo::inventory::unique;
use lock_harness::demo::payments::demo::Demo;

const FLAGS: &[&str] = &[
    "backend",
    "instances",
    "clients",
    "keys",
    "duplicates",
    "retries",
    "handler-ms",
    "redis-url",
    "postgres-url",
];

#[tokio::main]
async fn main() {
    let flags = Flags::of_process(FLAGS);
    let number = |name, default| flags.number_or_exit(name, default);
    let instances = number("instances", 2).max(1) as usize;
    let clients = number("clients", 64).max(1) as usize;
    let keys = number("keys", 200).max(1) as usize;
    let duplicates = number("duplicates", 4).max(1) as usize;
    let retries = number("retries", 2).max(1) as usize;
    let mut config = PaymentsConfig::from_flags(&flags).unwrap_or_else(|e| usage_error(&e));
    config.namespace = unique("payments");
    config.handler_delay = Duration::from_millis(number("handler-ms", 20));
    let backend = PaymentsBackend::of_config(&config);

    let mut targets = Vec::new();
    let mut services = Vec::new();
    let mut names = Vec::new();
    for index in 0..instances {
        let framework = if index % 2 == 0 { "axum" } else { "actix" };
        config.name = format!("{framework}-{index}");
        let service = PaymentService::on(&backend, &config)
            .await
            .unwrap_or_else(|e| usage_error(&format!("cannot start instance {index}: {e}")));
        let base = match framework {
            "axum" => payments_axum::spawn(service.clone()).await,
            _ => payments_actix::spawn(service.clone(), 1),
        }
        .unwrap_or_else(|e| usage_error(&format!("cannot serve instance {index}: {e}")));
        names.push(format!(
            "{framework} {}",
            base.trim_start_matches("http://")
        ));
        targets.push(base);
        services.push(service);
    }
    let ledger = services[0].ledger().clone();
    let where_ = match backend.name() {
        "memory" => "records, claims and ledger in this process".to_owned(),
        "redis" => format!(
            "records and claims in Redis at {}\nledger in PostgreSQL at {}",
            config.redis_url, config.postgres_url
        ),
        _ => format!(
            "records, claims and ledger in PostgreSQL at {}",
            config.postgres_url
        ),
    };
    println!(
        "idempotent payments on {}, {instances} instances: {}",
        backend.name(),
        names.join(", ")
    );
    println!("{where_}\n(no unique constraint on the idempotency key in the ledger)");
    println!(
        "{keys} keys × {duplicates} concurrent copies, then × {retries} after completion, then \
         every 5th key\nwith another amount; handler {} ms; at most {clients} requests in flight",
        config.handler_delay.as_millis()
    );

    let demo = Demo {
        targets,
        services,
        ledger,
        keys,
        duplicates,
        retries,
        clients,
        progress: true,
    };
    let outcome = demo
        .run()
        .await
        .unwrap_or_else(|e| usage_error(&format!("the demo could not run: {e}")));
    outcome.print();
    if !outcome.passed() {
        std::process::exit(1);
    }
}
