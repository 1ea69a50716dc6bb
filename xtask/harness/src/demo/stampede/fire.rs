//! The stampede's load: `GET`s timed one by one, fired all at once (a burst) or at a steady
//! rate, each answer counted for the [progress line](crate::demo::progress).

use std::sync::Arc;
use std::time::Duration;

use http_body_util::Empty;
use tokio::sync::Barrier;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use super::cache_status::{outcome_of, CACHE_STATUS_HEADER};
use crate::demo::progress::Live;
use crate::shared::load::{exchange, HttpClient};

/// One timed `GET`.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The status (0 when the request failed before an answer).
    pub status: u16,
    /// How the response cache answered ([`outcome_of`] its `Cache-Status`), when it said.
    pub cache_status: Option<String>,
    /// The `content-type` header.
    pub content_type: Option<String>,
    /// The body (or the transport error).
    pub body: String,
    /// From sending the request to the last byte of the body.
    pub latency: Duration,
}

impl Sample {
    /// A 200 answer.
    #[must_use]
    pub fn ok(&self) -> bool {
        self.status == 200
    }
}

/// `GET url`, timed; a transport failure or a 30 s silence is a sample with status 0.
pub async fn get(client: &HttpClient, url: &str) -> Sample {
    let started = Instant::now();
    let answer = match hyper::Request::get(url).body(Empty::new()) {
        Ok(request) => exchange(client, request).await,
        Err(error) => Err(error.to_string()),
    };
    let latency = started.elapsed();
    match answer {
        Ok(response) => {
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_owned)
            };
            let cache_status = header(CACHE_STATUS_HEADER).map(|m| outcome_of(&m).to_owned());
            let content_type = header("content-type");
            Sample {
                status: response.status().as_u16(),
                cache_status,
                content_type,
                body: response.into_body(),
                latency,
            }
        }
        Err(body) => Sample {
            status: 0,
            cache_status: None,
            content_type: None,
            body,
            latency,
        },
    }
}

/// `GET`s every URL of `urls` at the same moment (one task each, released together) and
/// returns the samples in the order of `urls`.
pub async fn burst(client: &HttpClient, urls: Vec<String>, live: Arc<Live>) -> Vec<Sample> {
    let start = Arc::new(Barrier::new(urls.len()));
    let tasks: Vec<JoinHandle<Sample>> = urls
        .into_iter()
        .map(|url| {
            let (client, start, live) = (client.clone(), start.clone(), live.clone());
            tokio::spawn(async move {
                start.wait().await;
                let sample = get(&client, &url).await;
                live.answered();
                sample
            })
        })
        .collect();
    join(tasks).await
}

/// `GET`s `url(n)` for n = 0, 1, ... at `rate` per second for `duration`, each request in a
/// task of its own (a slow answer does not hold the next request back).
pub async fn steady(
    client: &HttpClient,
    url: impl Fn(u64) -> String,
    rate: u64,
    duration: Duration,
    live: Arc<Live>,
) -> Vec<Sample> {
    let total = (rate as f64 * duration.as_secs_f64()).round() as u64;
    let mut tasks = Vec::with_capacity(total as usize);
    let mut ticker = tokio::time::interval(Duration::from_millis(1));
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let started = Instant::now();
    let mut sent = 0;
    while sent < total {
        ticker.tick().await;
        let due = ((started.elapsed().as_secs_f64() * rate as f64) as u64).min(total);
        while sent < due {
            let (client, url, live) = (client.clone(), url(sent), live.clone());
            tasks.push(tokio::spawn(async move {
                let sample = get(&client, &url).await;
                live.answered();
                sample
            }));
            sent += 1;
        }
    }
    join(tasks).await
}

async fn join(tasks: Vec<JoinHandle<Sample>>) -> Vec<Sample> {
    let mut samples = Vec::with_capacity(tasks.len());
    for task in tasks {
        samples.push(task.await.expect("a request task panicked"));
    }
    samples
}
