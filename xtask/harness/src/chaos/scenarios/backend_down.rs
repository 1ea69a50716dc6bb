//! Scenario 17, the backend down under the web layers (issue 20, part 4): a service with
//! lock-tower's response cache, idempotency layer and keyed lock on one Redis connection
//! (`chaos web`, a process of its own) gets a steady load on each route while the run's own
//! Redis is killed for 30 s (6 s with `--short`) and started again. Measured from outside: each
//! request's latency against a route with no layer over the same handler (the floor), the
//! statuses and `Retry-After`s, the service's own log lines (lock-core's INFO, WARN, ERROR),
//! and how long after Redis is back a response is stored again.
//!
//! Promises, once the outage is known (the service's breaker reported it): the fail-open cache
//! answers every request 200 within 1 ms of the floor at the median and 10 ms at p99; the
//! fail-closed layers answer 503 within 10 ms (p99) with a `Retry-After` of 1–5 s; over the
//! outage the service logs one WARN and, when Redis is back, one INFO, and no ERROR; a
//! response is stored again within 10 s of Redis being back. `--unsafe-no-breaker` runs the
//! service with a breaker that does not fail fast, which is what every request did before
//! (it then fails).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};

use super::Chaos;
use crate::chaos::process::{Event, Worker};
use crate::chaos::report::{p50_p99, Measured};
use crate::chaos::target::Target;
use crate::chaos::worker::wall_us;
use crate::shared::load::{client, exchange, HttpClient};

/// Requests per second on each route.
const RATE: u64 = 20;
/// Load before Redis is killed.
const WARM: Duration = Duration::from_secs(3);

/// One of the service's routes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Floor,
    Cache,
    Idempotency,
    KeyedLock,
}

impl Route {
    const ALL: [Self; 4] = [Self::Floor, Self::Cache, Self::Idempotency, Self::KeyedLock];

    fn name(self) -> &'static str {
        match self {
            Self::Floor => "GET /raw (no layer)",
            Self::Cache => "GET /products (cache)",
            Self::Idempotency => "POST /pay (idempotency)",
            Self::KeyedLock => "POST /orders (keyed lock)",
        }
    }

    /// The `n`th request of this route.
    fn request(self, base: &str, n: u64, run: &str) -> hyper::Request<Empty<Bytes>> {
        let (method, path) = match self {
            Self::Floor => ("GET", format!("/raw/{}", n % 20)),
            Self::Cache => ("GET", format!("/products/{}", n % 20)),
            Self::Idempotency => ("POST", "/pay".to_owned()),
            Self::KeyedLock => ("POST", format!("/orders/{}", n % 20)),
        };
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(format!("{base}{path}"));
        if self == Self::Idempotency {
            request = request.header("idempotency-key", format!("{run}-{n}"));
        }
        request.body(Empty::new()).expect("a valid request")
    }
}

/// One answered request.
#[derive(Clone, Debug)]
struct Sample {
    route: Route,
    /// When it was sent (wall-clock µs).
    sent: u64,
    latency_ms: f64,
    /// 0 when it failed before an answer.
    status: u16,
    retry_after: Option<u64>,
    cache_status: String,
}

/// Runs the scenario's rounds (Redis only: the run's own server is the one it kills).
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    let mut m = Measured {
        latency_label: "cache while down",
        ..Measured::default()
    };
    let outage = if cx.settings.short {
        Duration::from_secs(6)
    } else {
        Duration::from_secs(30)
    };
    for round in 0..cx.settings.rounds {
        eprintln!(
            "  [17 redis] round {}/{}: {} s outage",
            round + 1,
            cx.settings.rounds,
            outage.as_secs()
        );
        if let Err(e) = one_round(cx, target, round, outage, &mut m).await {
            m.violation(format!("round {round}: {e}"));
        }
    }
    m
}

async fn one_round(
    cx: &Chaos,
    target: &Target,
    round: u32,
    outage: Duration,
    m: &mut Measured,
) -> Result<(), String> {
    let namespace = format!("s17-r{round}-{}", cx.run);
    let mut args = vec![
        "--url".to_owned(),
        target.url.clone(),
        "--namespace".to_owned(),
        namespace.clone(),
    ];
    if cx.settings.unsafe_no_breaker {
        args.push("--no-fail-fast".to_owned());
    }
    let mut web = Worker::spawn_command(&cx.exe, "web", &args)?;
    let port = web.wait_for("ready", Duration::from_secs(20)).await?.fields;
    let base = format!("http://127.0.0.1:{port}");
    let samples = Arc::new(Mutex::new(Vec::new()));
    let (stop, stopped) = watch::channel(false);
    let load = tokio::spawn(fire(base, namespace, samples.clone(), stopped));

    tokio::time::sleep(WARM).await;
    let server = |up: bool| {
        tokio::task::block_in_place(|| {
            let mut server = cx.redis.lock().unwrap_or_else(|e| e.into_inner());
            if up {
                server.spawn();
            } else {
                server.kill();
            }
        });
    };
    let killed = wall_us();
    server(false);
    m.faults += 1;
    tokio::time::sleep(outage).await;
    server(true);
    let back = wall_us();
    let recovery = Duration::from_secs(if cx.settings.short { 8 } else { 10 });
    tokio::time::sleep(recovery).await;
    stop.send_replace(true);
    load.await.map_err(|e| format!("load: {e}"))?;
    let ended = wall_us();
    let logs = web.all("log");
    drop(web);
    let samples = std::mem::take(&mut *samples.lock().unwrap_or_else(|e| e.into_inner()));
    judge(m, &samples, &logs, killed, back, ended, outage);
    Ok(())
}

/// Sends each route's requests at [`RATE`] until `stop`, each in a task of its own (an open
/// loop: a slow answer does not hold the next request back).
async fn fire(
    base: String,
    run: String,
    samples: Arc<Mutex<Vec<Sample>>>,
    mut stop: watch::Receiver<bool>,
) {
    let http = client(64);
    let mut tick = tokio::time::interval(Duration::from_millis(1000 / RATE));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut flying = JoinSet::new();
    let mut n = 0;
    loop {
        tokio::select! {
            _ = stop.wait_for(|stopped| *stopped) => break,
            _ = tick.tick() => {}
        }
        for route in Route::ALL {
            let request = route.request(&base, n, &run);
            let (http, samples) = (http.clone(), samples.clone());
            flying.spawn(async move {
                let sample = send(&http, route, request).await;
                samples
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(sample);
            });
        }
        n += 1;
        while flying.try_join_next().is_some() {}
    }
    while flying.join_next().await.is_some() {}
}

async fn send(http: &HttpClient, route: Route, request: hyper::Request<Empty<Bytes>>) -> Sample {
    let sent = wall_us();
    let started = Instant::now();
    let answer = exchange(http, request).await;
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    let (status, retry_after, cache_status) = match &answer {
        Ok(response) => {
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned()
            };
            (
                response.status().as_u16(),
                header("retry-after").parse().ok(),
                header("cache-status"),
            )
        }
        Err(_) => (0, None, String::new()),
    };
    Sample {
        route,
        sent,
        latency_ms,
        status,
        retry_after,
        cache_status,
    }
}

/// Prints the round's figures and records what broke a promise.
fn judge(
    m: &mut Measured,
    samples: &[Sample],
    logs: &[Event],
    killed: u64,
    back: u64,
    ended: u64,
    outage: Duration,
) {
    let level_of = |e: &Event| e.fields.split(' ').next().unwrap_or_default().to_owned();
    let over_outage: Vec<&Event> = logs
        .iter()
        .filter(|e| e.at >= killed && e.at <= ended)
        .collect();
    let count = |level: &str| over_outage.iter().filter(|e| level_of(e) == level).count();
    let (warn, info, error) = (count("WARN"), count("INFO"), count("ERROR"));
    // The outage is known from the breaker's WARN; without one, from the kill.
    let known = over_outage
        .iter()
        .find(|e| level_of(e) == "WARN" && e.fields.contains("lock backend down"))
        .map_or(killed, |e| e.at);
    let window = |route: Route, from: u64| -> Vec<&Sample> {
        samples
            .iter()
            .filter(|s| s.route == route && s.sent >= from && s.sent < back)
            .collect()
    };
    let per_minute = warn as f64 * 60.0 / outage.as_secs_f64();
    println!(
        "  17: Redis down {:.1} s; the service knew after {:.0} ms; log lines over the outage: \
         WARN {warn} ({per_minute:.0}/min), INFO {info}, ERROR {error}",
        outage.as_secs_f64(),
        (known.saturating_sub(killed)) as f64 / 1000.0
    );
    println!(
        "      {:<26} {:>9} {:>9}   {:>9} {:>9}   answers while down",
        "route", "p50 ms", "p99 ms", "known p50", "known p99"
    );
    let known_p = |route: Route| -> Option<(f64, f64)> {
        let all: Vec<f64> = window(route, killed).iter().map(|s| s.latency_ms).collect();
        let after: Vec<&Sample> = window(route, known);
        let latencies: Vec<f64> = after.iter().map(|s| s.latency_ms).collect();
        let (p50, p99) = p50_p99(&all).unwrap_or((f64::NAN, f64::NAN));
        let known_p = p50_p99(&latencies);
        let (k50, k99) = known_p.unwrap_or((f64::NAN, f64::NAN));
        let mut statuses: Vec<(u16, usize)> = Vec::new();
        for s in window(route, killed) {
            match statuses.iter_mut().find(|(status, _)| *status == s.status) {
                Some((_, n)) => *n += 1,
                None => statuses.push((s.status, 1)),
            }
        }
        statuses.sort_unstable();
        let statuses: Vec<String> = statuses.iter().map(|(s, n)| format!("{n}×{s}")).collect();
        println!(
            "      {:<26} {p50:>9.1} {p99:>9.1}   {k50:>9.1} {k99:>9.1}   {}",
            route.name(),
            statuses.join(" ")
        );
        known_p
    };
    let floor = known_p(Route::Floor);
    let cache = known_p(Route::Cache);
    let fail_closed = [known_p(Route::Idempotency), known_p(Route::KeyedLock)];
    m.latencies
        .extend(window(Route::Cache, known).iter().map(|s| s.latency_ms));

    match (cache, floor) {
        (Some((c50, c99)), Some((f50, f99))) => {
            if c50 > f50 + 1.0 {
                m.violation(format!(
                    "the fail-open cache's median {c50:.1} ms is over the floor's {f50:.1} ms + 1 ms"
                ));
            }
            if c99 > f99 + 10.0 {
                m.violation(format!(
                    "the fail-open cache's p99 {c99:.1} ms is over the floor's {f99:.1} ms + 10 ms"
                ));
            }
        }
        _ => m.violation("no cache or floor answers while Redis was down".into()),
    }
    let failed_cache = window(Route::Cache, killed)
        .iter()
        .filter(|s| s.status != 200)
        .count();
    if failed_cache > 0 {
        m.violation(format!(
            "{failed_cache} cache request(s) failed while Redis was down (it fails open)"
        ));
    }
    for (route, p) in [Route::Idempotency, Route::KeyedLock]
        .into_iter()
        .zip(fail_closed)
    {
        let after = window(route, known);
        if let Some((_, p99)) = p {
            if p99 > 10.0 {
                m.violation(format!("{}: 503s took {p99:.1} ms at p99", route.name()));
            }
        }
        let wrong = after
            .iter()
            .filter(|s| s.status != 503 || !s.retry_after.is_some_and(|r| (1..=5).contains(&r)))
            .count();
        if wrong > 0 {
            m.violation(format!(
                "{}: {wrong} answer(s) while down were not a 503 with a Retry-After of 1-5 s",
                route.name()
            ));
        }
    }

    if warn != 1 {
        m.violation(format!(
            "{warn} WARN line(s) over the outage, expected the breaker's one"
        ));
    }
    if error > 0 {
        let first = over_outage
            .iter()
            .find(|e| level_of(e) == "ERROR")
            .map_or("", |e| e.fields.as_str());
        m.violation(format!(
            "{error} ERROR line(s) over the outage, the first: {first}"
        ));
    }
    let back_lines = over_outage
        .iter()
        .filter(|e| level_of(e) == "INFO" && e.fields.contains("lock backend back"))
        .count();
    if back_lines != 1 {
        m.violation(format!(
            "{back_lines} \"back\" INFO line(s) after the outage, expected one"
        ));
    }
    let stored_again = samples
        .iter()
        .filter(|s| s.route == Route::Cache && s.sent >= back && s.cache_status.contains("stored"))
        .map(|s| s.sent)
        .min();
    match stored_again {
        Some(at) if at - back <= 10_000_000 => m.notes.push(format!(
            "cache storing again {:.1} s after Redis was back",
            (at - back) as f64 / 1e6
        )),
        Some(at) => m.violation(format!(
            "the cache stored again only {:.1} s after Redis was back",
            (at - back) as f64 / 1e6
        )),
        None => m.violation("the cache never stored again after Redis was back".into()),
    }
    m.notes.push(format!(
        "WARN {warn} ({per_minute:.0}/min over a {:.0} s outage), INFO {info}, ERROR {error}",
        outage.as_secs_f64()
    ));
    if let (Some((c50, c99)), Some((f50, f99))) = (cache, floor) {
        m.notes.push(format!(
            "cache p50/p99 {c50:.1}/{c99:.1} ms vs floor {f50:.1}/{f99:.1} ms once known"
        ));
    }
}
