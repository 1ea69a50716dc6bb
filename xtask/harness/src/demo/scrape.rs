//! The example apps' `GET /metrics` as their tests read it: the page, and whether a sample is
//! on it.
//!
//! ```no_run
//! use lock_harness::demo::scrape::{has_sample, scrape};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let page = scrape("http://127.0.0.1:8080").await.unwrap();
//! assert!(has_sample(&page, "lock_acquire_total", &[("outcome", "acquired")]));
//! # }
//! ```

use std::future::Future;
use std::time::Duration;

use example_support::prometheus::{CONTENT_TYPE, PATH};
use tokio::time::timeout;

use crate::shared::load::{client, exchange};

/// `GET {base}/metrics` (`base`: `http://127.0.0.1:port`), for the apps' tests: the page, or
/// why there is none (transport error, not 200, not the text format; within 30 s).
pub async fn scrape(base: &str) -> Result<String, String> {
    let request = hyper::Request::get(format!("{base}{PATH}"))
        .body(http_body_util::Empty::new())
        .map_err(|error| error.to_string())?;
    let response = exchange(&client(1), request).await?;
    let content_type = response.headers().get("content-type").cloned();
    if response.status() != 200
        || content_type.as_ref().map(|v| v.as_bytes()) != Some(CONTENT_TYPE.as_bytes())
    {
        return Err(format!(
            "GET {PATH}: {} {content_type:?}: {}",
            response.status(),
            response.body()
        ));
    }
    Ok(response.into_body())
}

/// Whether `page` (the text format) has a sample of `name` with every one of `labels` and a
/// value above zero.
///
/// ```
/// let page = "# TYPE lock_acquire_total counter\nlock_acquire_total{backend=\"memory\",outcome=\"acquired\"} 3\n";
/// let acquired = [("backend", "memory"), ("outcome", "acquired")];
/// assert!(lock_harness::demo::scrape::has_sample(page, "lock_acquire_total", &acquired));
/// assert!(!lock_harness::demo::scrape::has_sample(page, "lock_acquire_total", &[("outcome", "busy")]));
/// ```
#[must_use]
pub fn has_sample(page: &str, name: &str, labels: &[(&str, &str)]) -> bool {
    page.lines().any(|line| {
        let Some((series, value)) = line.rsplit_once(' ') else {
            return false;
        };
        let Some(rest) = series.strip_prefix(name) else {
            return false;
        };
        (rest.is_empty() || rest.starts_with('{'))
            && labels
                .iter()
                .all(|(label, value)| rest.contains(&format!("{label}=\"{value}\"")))
            && value.parse::<f64>().is_ok_and(|value| value > 0.0)
    })
}

/// A series a page must have a sample of: the metric's name and some of its labels.
pub type Series<'a> = (&'a str, &'a [(&'a str, &'a str)]);

/// What the apps' metrics tests check: `exchange` (one request to the app at `base`, giving its
/// status and body) answers `status`, then the app's page has a sample (above zero) of every
/// one of `series`. Panics with the page otherwise; the exchange and the scrape together are
/// bounded by 30 s.
///
/// ```no_run
/// use lock_harness::shared::load::{client, send};
/// use lock_harness::demo::scrape::assert_page_after;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let base = "http://127.0.0.1:8080";
/// let bought = async {
///     let reply = send(&client(1), "POST", base, "/buy/sku-1", Some("order-1")).await;
///     (reply.status, reply.body)
/// };
/// assert_page_after(base, bought, 200, &[("lock_acquire_total", &[("outcome", "acquired")])]).await;
/// # }
/// ```
pub async fn assert_page_after<F>(base: &str, exchange: F, status: u16, series: &[Series<'_>])
where
    F: Future<Output = (u16, String)>,
{
    let ((answered, body), page) = timeout(Duration::from_secs(30), async {
        let answer = exchange.await;
        (answer, scrape(base).await)
    })
    .await
    .expect("the request and the scrape answered within 30 s");
    assert_eq!(answered, status, "{body}");
    let page = page.unwrap();
    for (name, labels) in series {
        assert!(
            has_sample(&page, name, labels),
            "no {name} {labels:?} in\n{page}"
        );
    }
}
