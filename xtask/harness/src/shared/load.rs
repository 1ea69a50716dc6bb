//! The flash-sale load generator: B buyers of one SKU, spread over the app instances, with a
//! bounded number of requests in flight, counted live so tests can act mid-run.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use lock_core::http::RejectionKind;
use tokio::sync::Notify;
use tokio::time::Instant;

use example_support::shop::OUT_OF_STOCK;

/// An HTTP/1 client with a connection pool.
pub type HttpClient = Client<HttpConnector, Empty<Bytes>>;

/// A client for the apps (keeps up to `pool` idle connections per instance).
#[must_use]
pub fn client(pool: usize) -> HttpClient {
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(pool)
        .build_http()
}

/// One answered request.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The status (0 when the request failed before an answer).
    pub status: u16,
    /// The body (or the transport error).
    pub body: String,
}

/// What a client makes of an answer to `POST /buy/...`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyKind {
    /// 200.
    Sold {
        /// An earlier sale to the same order id.
        duplicate: bool,
    },
    /// 409 out of stock.
    OutOfStock,
    /// 409 or 429 from the keyed-lock middleware.
    Busy,
    /// Anything else (5xx, refusals, no answer).
    Error,
}

/// Classifies an answer, and reads the lock hold time (µs) the lock strategy reports.
#[must_use]
pub fn classify(status: u16, body: &str) -> (ReplyKind, Option<u64>) {
    let json: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let held = match &json["held_us"] {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.parse().ok(),
        _ => None,
    };
    let kind = match (status, json["type"].as_str()) {
        (200, _) => ReplyKind::Sold {
            duplicate: json["duplicate"].as_bool().unwrap_or(false),
        },
        (409, Some(OUT_OF_STOCK)) => ReplyKind::OutOfStock,
        (409 | 429, Some(t)) if t == RejectionKind::Busy.type_uri() => ReplyKind::Busy,
        _ => ReplyKind::Error,
    };
    (kind, held)
}

/// Sends `method path` to `base` (`http://127.0.0.1:port`) with an `Order-Id` when given.
pub async fn send(
    client: &HttpClient,
    method: &str,
    base: &str,
    path: &str,
    order: Option<&str>,
) -> Reply {
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(format!("{base}{path}"));
    if let Some(order) = order {
        request = request.header("order-id", order);
    }
    let Ok(request) = request.body(Empty::new()) else {
        return Reply {
            status: 0,
            body: "bad request".into(),
        };
    };
    match exchange(client, request).await {
        Ok(response) => Reply {
            status: response.status().as_u16(),
            body: response.into_body(),
        },
        Err(error) => Reply {
            status: 0,
            body: error,
        },
    }
}

/// Sends `request` and reads the whole answer, its body as text, within 30 s; `Err` holds
/// the transport error or the timeout.
pub async fn exchange(
    client: &HttpClient,
    request: hyper::Request<Empty<Bytes>>,
) -> Result<hyper::Response<String>, String> {
    let answer = async {
        let response = client.request(request).await.map_err(|e| e.to_string())?;
        let (head, body) = response.into_parts();
        let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
        let body = String::from_utf8_lossy(&body).into_owned();
        Ok(hyper::Response::from_parts(head, body))
    };
    tokio::time::timeout(Duration::from_secs(30), answer)
        .await
        .unwrap_or_else(|_| Err("timed out after 30 s".into()))
}

/// What to fire.
#[derive(Clone, Debug)]
pub struct Load {
    /// The app instances (`http://127.0.0.1:port`), used round-robin.
    pub targets: Vec<String>,
    /// The SKU every buyer wants.
    pub sku: String,
    /// How many buyers (one request each).
    pub buyers: u64,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// Order ids are `{run}-{n}`.
    pub run: String,
    /// Draw a progress bar on stderr.
    pub progress: bool,
}

/// Live counters of a run.
#[derive(Debug, Default)]
pub struct Progress {
    done: AtomicU64,
    sold: AtomicU64,
    failed: AtomicU64,
    changed: Notify,
}

impl Progress {
    /// Requests answered (or failed) so far.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::SeqCst)
    }

    /// 200 answers so far.
    pub fn sold(&self) -> u64 {
        self.sold.load(Ordering::SeqCst)
    }

    /// 5xx answers and transport failures so far.
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::SeqCst)
    }

    /// Resolves once `condition` holds (checked after every answer).
    pub async fn wait_for(&self, condition: impl Fn(&Self) -> bool) {
        loop {
            let changed = self.changed.notified();
            if condition(self) {
                return;
            }
            changed.await;
        }
    }
}

/// Everything a run saw.
#[derive(Debug, Default)]
pub struct Report {
    /// 200 answers.
    pub sold: u64,
    /// 200 answers that were duplicates of an earlier sale.
    pub duplicates: u64,
    /// 409 out of stock.
    pub out_of_stock: u64,
    /// 409/429 busy.
    pub busy: u64,
    /// Everything else: 5xx, other statuses, transport failures.
    pub errors: u64,
    /// Count per status (0: no answer).
    pub statuses: BTreeMap<u16, u64>,
    /// Order ids answered 200.
    pub sold_orders: Vec<String>,
    /// Order ids answered with an error (the sale may or may not be recorded).
    pub failed_orders: Vec<String>,
    /// Lock hold times reported by the lock strategy, in µs.
    pub held_us: Vec<u64>,
    /// Each request's time from sending to its answer, in µs.
    pub latency_us: Vec<u64>,
    /// The first few error bodies, and the first of each status, for the report.
    pub error_samples: Vec<String>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl Report {
    /// Requests per second over the run.
    #[must_use]
    pub fn rate(&self) -> f64 {
        let total = self.sold + self.out_of_stock + self.busy + self.errors;
        total as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The 99th percentile of the requests' times (zero without requests).
    #[must_use]
    pub fn p99(&self) -> Duration {
        let mut sorted = self.latency_us.clone();
        sorted.sort_unstable();
        let at = (sorted.len() * 99).div_ceil(100).saturating_sub(1);
        Duration::from_micros(sorted.get(at).copied().unwrap_or(0))
    }

    /// The mean lock hold time, if the strategy reported any.
    #[must_use]
    pub fn mean_hold(&self) -> Option<Duration> {
        (!self.held_us.is_empty()).then(|| {
            Duration::from_micros(self.held_us.iter().sum::<u64>() / self.held_us.len() as u64)
        })
    }

    fn record(&mut self, order: String, reply: &Reply) {
        *self.statuses.entry(reply.status).or_default() += 1;
        let (kind, held) = classify(reply.status, &reply.body);
        if let Some(held) = held {
            self.held_us.push(held);
        }
        match kind {
            ReplyKind::Sold { duplicate } => {
                self.sold += 1;
                self.duplicates += u64::from(duplicate);
                self.sold_orders.push(order);
            }
            ReplyKind::OutOfStock => self.out_of_stock += 1,
            ReplyKind::Busy => self.busy += 1,
            ReplyKind::Error => {
                self.errors += 1;
                // The first three, and the first of each other status (a rare transport
                // failure, status 0, says what it was).
                let prefix = format!("{}: ", reply.status);
                let new_status = !self.error_samples.iter().any(|s| s.starts_with(&prefix));
                if self.error_samples.len() < 3 || new_status {
                    self.error_samples.push(format!("{prefix}{}", reply.body));
                }
                self.failed_orders.push(order);
            }
        }
    }
}

/// Fires `load`; `progress` counts live. Returns when every buyer has an answer.
pub async fn fire(load: &Load, progress: Arc<Progress>) -> Report {
    let client = client(load.concurrency);
    let next = Arc::new(AtomicU64::new(0));
    let report = Arc::new(Mutex::new(Report::default()));
    let started = Instant::now();
    let bar = load
        .progress
        .then(|| tokio::spawn(draw(progress.clone(), load.buyers)));
    let workers: Vec<_> = (0..load.concurrency.max(1))
        .map(|_| {
            let (client, next, report, progress) = (
                client.clone(),
                next.clone(),
                report.clone(),
                progress.clone(),
            );
            let load = load.clone();
            tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n >= load.buyers {
                        break;
                    }
                    let order = format!("{}-{n}", load.run);
                    let base = &load.targets[n as usize % load.targets.len()];
                    let path = format!("/buy/{}", load.sku);
                    let sent = Instant::now();
                    let reply = send(&client, "POST", base, &path, Some(&order)).await;
                    let took = u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX);
                    if reply.status == 200 {
                        progress.sold.fetch_add(1, Ordering::SeqCst);
                    } else if reply.status == 0 || reply.status >= 500 {
                        progress.failed.fetch_add(1, Ordering::SeqCst);
                    }
                    {
                        let mut report = report.lock().unwrap_or_else(PoisonError::into_inner);
                        report.latency_us.push(took);
                        report.record(order, &reply);
                    }
                    progress.done.fetch_add(1, Ordering::SeqCst);
                    progress.changed.notify_waiters();
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.expect("load worker panicked");
    }
    if let Some(bar) = bar {
        bar.abort();
        eprintln!("\r{}", bar_line(load.buyers, load.buyers));
    }
    let mut report = std::mem::take(&mut *report.lock().unwrap_or_else(PoisonError::into_inner));
    report.elapsed = started.elapsed();
    report
}

fn bar_line(done: u64, total: u64) -> String {
    const WIDTH: u64 = 40;
    let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH) as usize;
    format!(
        "  [{}{}] {done}/{total}",
        "#".repeat(filled),
        ".".repeat(WIDTH as usize - filled)
    )
}

async fn draw(progress: Arc<Progress>, total: u64) {
    let terminal = std::io::stderr().is_terminal();
    let mut last_tenth = 0;
    loop {
        let done = progress.done();
        if terminal {
            eprint!("\r{}", bar_line(done, total));
            std::io::stderr().flush().ok();
        } else if done * 10 / total.max(1) > last_tenth {
            // Not a terminal (CI logs): one line per tenth instead of redrawing.
            last_tenth = done * 10 / total.max(1);
            eprintln!("{}", bar_line(done, total));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
