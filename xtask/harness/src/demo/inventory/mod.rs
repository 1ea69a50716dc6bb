//! The inventory scenario: start app instances, fire the buyers, audit the stock, print the
//! table. Used by `cargo xtask demo inventory` and by the example apps' tests, with the
//! flash-sale [`checks`] and the [`bad_input`] table they run, and a [`test_redis`] of a test's
//! own.

pub mod bad_input;
pub mod checks;
pub mod test_redis;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use example_support::backend::BackendKind;
use example_support::shop::{Retried, Strategy};
use lock_core::stock::StockLevel;
use tokio::process::Child;

use crate::demo::process::launch;
use crate::shared::load::{self, Load, Progress, Report};

/// A running app process; killed when dropped.
#[derive(Debug)]
pub struct Instance {
    child: Child,
    /// `http://127.0.0.1:port`.
    pub base: String,
}

impl Instance {
    /// Starts `binary` with `args` plus `--port 0`, waits (up to 60 s) for its `listening on
    /// http://...` line, and drains the rest of its stdout (so the app never blocks on a full
    /// pipe).
    pub async fn launch(binary: &Path, args: &[String]) -> Result<Self, String> {
        let app = launch(binary, args).await?;
        let mut lines = app.lines;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Self {
            child: app.child,
            base: app.base,
        })
    }

    /// Kills the process now.
    pub async fn kill(&mut self) {
        self.child.kill().await.ok();
    }
}

/// One run of the scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// How the apps sell.
    pub strategy: Strategy,
    /// Where stock and locks live.
    pub backend: BackendKind,
    /// The Redis URL (redis backend).
    pub redis_url: String,
    /// App binaries, used in turn for the instances (axum, actix).
    pub apps: Vec<PathBuf>,
    /// How many app processes.
    pub instances: usize,
    /// Buyers (one request each).
    pub buyers: u64,
    /// Units on sale.
    pub stock: u64,
    /// Requests in flight.
    pub concurrency: usize,
    /// Draw a progress bar.
    pub progress: bool,
}

/// What a run produced.
#[derive(Debug)]
pub struct Outcome {
    /// The scenario.
    pub scenario: Scenario,
    /// What the buyers saw.
    pub report: Report,
    /// The store's audit afterwards.
    pub level: StockLevel,
    /// What a SQL stock retried, summed over the instances.
    pub retried: Option<Retried>,
}

/// A name unique to this process and moment, for namespaces and order ids.
#[must_use]
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        nanos % 1_000_000_000_000
    )
}

impl Scenario {
    /// The app arguments of instance `index` (the first one seeds the stock).
    #[must_use]
    pub fn app_args(&self, namespace: &str, sku: &str, index: usize) -> Vec<String> {
        let mut args = vec![
            "--strategy".into(),
            self.strategy.name().into(),
            "--backend".into(),
            self.backend.name().into(),
            "--redis-url".into(),
            self.redis_url.clone(),
            "--namespace".into(),
            namespace.into(),
            "--sku".into(),
            sku.into(),
        ];
        if index == 0 {
            args.extend(["--stock".into(), self.stock.to_string()]);
        }
        args
    }

    /// Starts the instances, fires the buyers, audits the stock.
    pub async fn run(&self) -> Result<Outcome, String> {
        let namespace = unique(&format!("inv-{}", self.strategy.name()));
        let sku = "flash-sku".to_owned();
        let mut instances = Vec::new();
        for index in 0..self.instances.max(1) {
            let app = &self.apps[index % self.apps.len()];
            instances.push(Instance::launch(app, &self.app_args(&namespace, &sku, index)).await?);
        }
        let targets: Vec<String> = instances.iter().map(|i| i.base.clone()).collect();
        let load = Load {
            targets: targets.clone(),
            sku: sku.clone(),
            buyers: self.buyers,
            concurrency: self.concurrency,
            run: namespace,
            progress: self.progress,
        };
        let report = load::fire(&load, Arc::new(Progress::default())).await;
        let (level, mut retried) = fetch_level(&targets[0], &sku).await?;
        for target in &targets[1..] {
            if let (Some(sum), (_, Some(more))) = (&mut retried, fetch_level(target, &sku).await?) {
                sum.retries += more.retries;
                sum.conflicts += more.conflicts;
            }
        }
        Ok(Outcome {
            scenario: self.clone(),
            report,
            level,
            retried,
        })
    }
}

/// `GET /stock/{sku}` from `base`: the level, and what the instance's SQL stock retried.
pub async fn fetch_level(base: &str, sku: &str) -> Result<(StockLevel, Option<Retried>), String> {
    let reply = load::send(
        &load::client(1),
        "GET",
        base,
        &format!("/stock/{sku}"),
        None,
    )
    .await;
    if reply.status != 200 {
        return Err(format!("GET /stock/{sku}: {} {}", reply.status, reply.body));
    }
    let json: serde_json::Value = serde_json::from_str(&reply.body).map_err(|e| e.to_string())?;
    let field = |name: &str| json[name].as_u64().unwrap_or(0);
    let level = StockLevel {
        available: field("available"),
        reserved: field("reserved"),
        sold: field("sold"),
        received: field("received"),
    };
    let retried = json.get("retries").map(|_| Retried {
        retries: field("retries"),
        conflicts: field("conflicts"),
    });
    Ok((level, retried))
}

impl Outcome {
    /// Units sold beyond the stock (must be 0), by the answers or by the store.
    #[must_use]
    pub fn oversold(&self) -> u64 {
        let answered = self.report.sold - self.report.duplicates;
        answered
            .max(self.level.sold)
            .saturating_sub(self.scenario.stock)
    }

    /// Units that should have sold and did not.
    #[must_use]
    pub fn undersold(&self) -> u64 {
        self.scenario
            .stock
            .min(self.scenario.buyers)
            .saturating_sub(self.report.sold - self.report.duplicates)
    }

    /// The flash-sale promise: exactly min(S, B) sold, the answers agree with the store, the
    /// store balances, nothing negative.
    pub fn check(&self) -> Result<(), String> {
        let sold = self.report.sold - self.report.duplicates;
        let want = self.scenario.stock.min(self.scenario.buyers);
        let level = &self.level;
        if sold != want || level.sold != want || self.oversold() != 0 {
            return Err(format!(
                "{}: {sold} answered sold, {} recorded, want {want}; errors {} ({:?})",
                self.scenario.strategy.name(),
                level.sold,
                self.report.errors,
                self.report.error_samples
            ));
        }
        if !level.is_balanced() || level.available != self.scenario.stock - want {
            return Err(format!("stock does not balance: {level:?}"));
        }
        Ok(())
    }
}

/// Prints the table for `outcomes` (at most 120 columns), then the lock strategy's ceiling;
/// from a debug build (`cargo xtask demo` alone), says that its rates are a debug build's.
/// `retries` (lost optimistic tries) and `conflicts` (deadlock or serialization victims run
/// again) are the SQL stores'; `-` elsewhere.
pub fn print_table(outcomes: &[Outcome]) {
    println!(
        "\n{:<11} {:<8} {:>4} {:>7} {:>6} {:>6} {:>8} {:>5} {:>6} {:>5} {:>8} {:>9} {:>7} {:>9} {:>6} {:>7}",
        "strategy",
        "backend",
        "inst",
        "buyers",
        "stock",
        "sold",
        "no stock",
        "busy",
        "errors",
        "left",
        "oversold",
        "undersold",
        "retries",
        "conflicts",
        "req/s",
        "p99 ms"
    );
    for o in outcomes {
        let s = &o.scenario;
        let (retries, conflicts) = o.retried.map_or(("-".to_owned(), "-".to_owned()), |r| {
            (r.retries.to_string(), r.conflicts.to_string())
        });
        println!(
            "{:<11} {:<8} {:>4} {:>7} {:>6} {:>6} {:>8} {:>5} {:>6} {:>5} {:>8} {:>9} {:>7} {:>9} {:>6.0} {:>7.1}",
            s.strategy.name(),
            s.backend.name(),
            s.instances,
            s.buyers,
            s.stock,
            o.report.sold - o.report.duplicates,
            o.report.out_of_stock,
            o.report.busy,
            o.report.errors,
            o.level.available,
            o.oversold(),
            o.undersold(),
            retries,
            conflicts,
            o.report.rate(),
            o.report.p99().as_secs_f64() * 1e3,
        );
    }
    for o in outcomes {
        if let Some(hold) = o.report.mean_hold() {
            println!(
                "{}: mean hold {:.2} ms, so at most {:.0} sales/s on one SKU (1 / hold)",
                o.scenario.strategy.name(),
                hold.as_secs_f64() * 1e3,
                1.0 / hold.as_secs_f64().max(1e-9)
            );
        }
    }
    if cfg!(debug_assertions) {
        println!(
            "req/s and holds above are a DEBUG build's (the quick demo), not the library's \
             speed: `cargo xtask demo inventory` runs in release"
        );
    }
}
