//! `chaos cache-worker ...`: one instance of a service behind the response cache in a process
//! of its own (scenario 16 kills one), sending `GET --path` through it. Its application counts
//! each call in the resource Redis (`INCR`, so every process counts in one place), takes
//! `--origin-ms`, and answers `200` with `Cache-Control: max-age=60`.
//!
//! With `--once` it sends one request; otherwise one every `--every-ms` until an answer says
//! the response is stored (`stored`, or a `hit`), then two more, or until `--give-up-ms`.
//! Events on stdout, `EV <name> <wall-clock µs> [fields]`: `ready`, `sent`, `computing` (its
//! application was called), `answer <status> <latency ms> <Cache-Status>`, `stored`, `done`,
//! `error <message>`.

use std::time::Duration;

use example_support::backend::BackendKind;
use example_support::flags::Flags;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::cache_app::{self, Canned};
use super::worker::event;

/// The flags `chaos cache-worker` takes.
pub const FLAGS: &[&str] = &[
    "backend",
    "url",
    "counter-url",
    "namespace",
    "path",
    "origin-ms",
    "every-ms",
    "give-up-ms",
    "once",
];

/// The resource Redis key counting the application's calls for `path`.
#[must_use]
pub fn counter_key(path: &str) -> String {
    format!("chaos:cache-calls:{path}")
}

/// Runs the worker with the flags after `cache-worker`; returns the exit code.
pub async fn run(flags: &Flags) -> i32 {
    let ms = |name, default| Duration::from_millis(flags.number_or_exit(name, default));
    let required = |name: &str| {
        flags
            .get(name)
            .unwrap_or_else(|| {
                example_support::flags::usage_error(&format!("chaos cache-worker needs --{name}"))
            })
            .to_owned()
    };
    let kind: BackendKind = flags.backend_or_exit();
    let (url, counter_url, path) = (required("url"), required("counter-url"), required("path"));
    let namespace = flags.get("namespace").unwrap_or("chaos-cache").to_owned();
    let origin = ms("origin-ms", 4000);
    let every = ms("every-ms", 250);
    let give_up = ms("give-up-ms", 60_000);
    let cache = match cache_app::instance(kind, &url, &namespace).await {
        Ok(cache) => cache,
        Err(e) => {
            event("error", &format!("connect: {e}"));
            return 3;
        }
    };
    let counter = match redis::Client::open(counter_url.as_str()) {
        Ok(client) => match client.get_multiplexed_async_connection().await {
            Ok(connection) => connection,
            Err(e) => {
                event("error", &format!("counter: {e}"));
                return 3;
            }
        },
        Err(e) => {
            event("error", &format!("counter: {e}"));
            return 3;
        }
    };
    event("ready", "");
    let once = flags.get("once").is_some();
    let started = Instant::now();
    let mut requests = JoinSet::new();
    let mut stored_seen = false;
    let mut more = 2;
    let mut next = Instant::now();
    loop {
        if !once && (started.elapsed() >= give_up || (stored_seen && more == 0)) {
            break;
        }
        let (cache, path, counter) = (cache.clone(), path.clone(), counter.clone());
        requests.spawn(async move {
            let key = counter_key(&path);
            let answered = cache_app::get(&cache, &path, move || async move {
                let mut counter = counter;
                let counted: Result<i64, _> =
                    redis::cmd("INCR").arg(&key).query_async(&mut counter).await;
                if let Err(e) = counted {
                    event("error", &format!("counting a call: {e}"));
                }
                event("computing", "");
                tokio::time::sleep(origin).await;
                Canned::new(200, &[("cache-control", "max-age=60")], "value")
            })
            .await;
            event(
                "answer",
                &format!(
                    "{} {:.1} {}",
                    answered.status,
                    answered.latency.as_secs_f64() * 1e3,
                    answered.cache_status
                ),
            );
            answered
        });
        event("sent", "");
        if once {
            // Killed while computing, or done once its one answer is in.
            requests.join_next().await;
            break;
        }
        next += every;
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(next) => break,
                Some(joined) = requests.join_next() => {
                    let Ok(answered) = joined else { continue };
                    let stored = answered.cache_status.contains("; stored")
                        || answered.cache_status.contains("; hit");
                    if stored && !stored_seen {
                        stored_seen = true;
                        event("stored", "");
                    }
                }
            }
        }
        if stored_seen {
            more -= 1;
        }
    }
    while tokio::time::timeout(give_up, requests.join_next())
        .await
        .ok()
        .flatten()
        .is_some()
    {}
    event("done", "");
    0
}
