//! `cargo xtask demo inventory [--backend memory|redis|postgres|mysql] [--instances N]
//! [--buyers B] [--stock S] [--strategy S|all] [--strategies lock,atomic,reserve]
//! [--concurrency C] [--app axum|actix|both]`: the flash sale, end to end over HTTP, once per
//! strategy, then a table of what sold. `all` is every strategy of the backend (on PostgreSQL
//! and MySQL: for-update, optimistic, conditional, reserve).
//!
//! The app binaries are looked for next to this one (`cargo xtask demo inventory` builds
//! them first) or in `--bin-dir`.

use std::path::PathBuf;

use example_support::backend::{redis_url, BackendKind};
use example_support::flags::{usage_error, Flags};
use example_support::shop::Strategy;
use lock_harness::demo::inventory::{print_table, Scenario};

#[tokio::main]
async fn main() {
    let flags = Flags::of_process(&[
        "backend",
        "instances",
        "buyers",
        "stock",
        "strategy",
        "strategies",
        "concurrency",
        "app",
        "redis-url",
        "bin-dir",
    ]);
    let backend = flags.backend_or_exit();
    let default_instances = if backend == BackendKind::Memory { 1 } else { 2 };
    let number = |name, default| flags.number_or_exit(name, default);
    let instances = number("instances", default_instances) as usize;
    if backend == BackendKind::Memory && instances != 1 {
        usage_error(
            "the memory backend lives in one process: use --instances 1 or --backend redis",
        );
    }
    let named = match (flags.get("strategy"), flags.get("strategies")) {
        (Some(_), Some(_)) => usage_error("--strategy and --strategies: give one of them"),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => "all",
    };
    let strategies: Vec<Strategy> = if named == "all" {
        Strategy::all_on(backend).to_vec()
    } else {
        named
            .split(',')
            .map(|s| Strategy::parse(s).unwrap_or_else(|e| usage_error(&e)))
            .collect()
    };
    let apps: Vec<PathBuf> = match flags.get("app").unwrap_or("both") {
        "axum" => vec!["flash-sale-axum"],
        "actix" => vec!["flash-sale-actix"],
        "both" => vec!["flash-sale-axum", "flash-sale-actix"],
        other => usage_error(&format!(
            "unknown --app {other:?}; expected axum, actix or both"
        )),
    }
    .into_iter()
    .map(|name| lock_harness::app_binary(flags.get("bin-dir"), name))
    .collect();
    if let Some(missing) = apps.iter().find(|app| !app.exists()) {
        usage_error(&format!(
            "{} not found; build it with `cargo build -p flash-sale-axum -p flash-sale-actix` or pass --bin-dir",
            missing.display()
        ));
    }

    let buyers = number("buyers", 10_000);
    let stock = number("stock", 500);
    let mut outcomes = Vec::new();
    for strategy in strategies {
        let scenario = Scenario {
            strategy,
            backend,
            redis_url: redis_url(&flags),
            apps: apps.clone(),
            instances,
            buyers,
            stock,
            concurrency: number("concurrency", 256) as usize,
            progress: true,
        };
        let names: Vec<String> = (0..instances)
            .map(|i| {
                apps[i % apps.len()]
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        eprintln!(
            "inventory: {} on {}, {buyers} buyers for {stock} units, instances: {}",
            strategy.name(),
            backend.name(),
            names.join(", ")
        );
        outcomes.push(scenario.run().await.unwrap_or_else(|e| usage_error(&e)));
    }
    print_table(&outcomes);
    let failures: Vec<String> = outcomes.iter().filter_map(|o| o.check().err()).collect();
    if failures.is_empty() {
        println!("\nevery strategy sold exactly min(stock, buyers); nothing oversold");
    } else {
        for failure in &failures {
            eprintln!("FAILED: {failure}");
        }
        std::process::exit(1);
    }
}
