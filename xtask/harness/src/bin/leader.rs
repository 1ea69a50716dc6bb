//! `cargo xtask demo leader [--instances N] [--every-ms MS] [--slots S] [--redis-url URL]
//! [--bin-dir DIR]`: a scheduled job on N instances of `flash-sale-axum` (3 by default), one
//! run per slot, one instance killed halfway; PASS or FAIL (exit status 1). See
//! `lock_harness::demo::leader`.
//!
//! The app binary is looked for next to this one (`cargo xtask demo leader` builds it first)
//! or in `--bin-dir`.

use std::time::Duration;

use example_support::backend::redis_url;
use example_support::flags::{usage_error, Flags};
use lock_harness::demo::leader::LeaderDemo;

#[tokio::main]
async fn main() {
    let flags = Flags::of_process(&["instances", "every-ms", "slots", "redis-url", "bin-dir"]);
    let instances = flags.number_or_exit("instances", 3) as usize;
    if !(2..=8).contains(&instances) {
        usage_error("--instances takes 2 to 8");
    }
    let every = Duration::from_millis(flags.number_or_exit("every-ms", 500));
    if let Err(e) = example_support::shop::report::check_period(every) {
        usage_error(&format!("--every-ms: {e}"));
    }
    let slots = u32::try_from(flags.number_or_exit("slots", 16)).unwrap_or(u32::MAX);
    if slots < 4 {
        usage_error("--slots takes 4 or more");
    }
    let app = lock_harness::app_binary(flags.get("bin-dir"), "flash-sale-axum");
    if !app.exists() {
        usage_error(&format!(
            "{} not found; build it with `cargo build --release -p flash-sale-axum` or pass --bin-dir",
            app.display()
        ));
    }
    let demo = LeaderDemo {
        app: &app,
        redis_url: redis_url(&flags),
        instances,
        every,
        slots,
    };
    match demo.run().await {
        Ok(verdict) if verdict.passed() => {}
        Ok(_) => std::process::exit(1),
        Err(error) => usage_error(&error),
    }
}
