//! The checks the stampede apps' tests share, over HTTP: a cold product under concurrent
//! requests reaches the origin once, bad ids are 400 problems, a second request is a hit, the
//! cache's work is on `GET /metrics`; [`stampede_app_tests!`](crate::stampede_app_tests) makes
//! them an app's tests.

use std::sync::Arc;

use example_support::product::{BAD_INPUT, MAX_ID_LEN};
use lock_core::http::PROBLEM_JSON;

use super::fire::{burst, get};
use crate::demo::inventory::unique;
use crate::demo::scrape::assert_page_after;
use crate::shared::load;

/// `GET /stats` from `base`, as JSON.
pub async fn stats(base: &str) -> Result<serde_json::Value, String> {
    let reply = get(&load::client(1), &format!("{base}/stats")).await;
    if !reply.ok() {
        return Err(format!("GET /stats: {} {}", reply.status, reply.body));
    }
    serde_json::from_str(&reply.body).map_err(|e| format!("GET /stats: {e}"))
}

/// The origin's calls for product `id`, as `GET /stats` on `base` reports them.
pub async fn origin_calls(base: &str, id: &str) -> Result<u64, String> {
    Ok(stats(base).await?["origin"]["products"][id]["calls"]
        .as_u64()
        .unwrap_or(0))
}

/// `clients` concurrent requests for one cold product over `targets`: every one answered
/// 200 with the same product, exactly one `computed`, the others `collapsed` (or `hit`, for
/// any that arrived after the value was stored), and the origin called once.
pub async fn cold_key_collapses(targets: &[String], clients: usize) -> Result<(), String> {
    let id = unique("cold");
    let urls = (0..clients)
        .map(|n| format!("{}/products/{id}", targets[n % targets.len()]))
        .collect();
    let samples = burst(&load::client(clients), urls, Arc::default()).await;
    if let Some(bad) = samples.iter().find(|s| !s.ok()) {
        return Err(format!("a request failed: {} {}", bad.status, bad.body));
    }
    let count = |status: &str| {
        samples
            .iter()
            .filter(|s| s.cache_status.as_deref() == Some(status))
            .count()
    };
    let (computed, collapsed, hit) = (count("computed"), count("collapsed"), count("hit"));
    if computed != 1 || computed + collapsed + hit != clients {
        return Err(format!(
            "{computed} computed, {collapsed} collapsed, {hit} hit of {clients}; want 1 computed"
        ));
    }
    if samples.iter().any(|s| s.body != samples[0].body) {
        return Err("the requests were not all handed the same product".into());
    }
    let calls = origin_calls(&targets[0], &id).await?;
    if calls != 1 {
        return Err(format!("the origin was called {calls} times, not once"));
    }
    Ok(())
}

/// Ids and query strings the service refuses, each a 400 `application/problem+json` of type
/// [`BAD_INPUT`] that never reaches the origin.
pub async fn bad_ids_are_refused(base: &str) -> Result<(), String> {
    let before = stats(base).await?["origin"]["calls"].as_u64();
    let long = "a".repeat(MAX_ID_LEN + 1);
    let client = load::client(1);
    for path in [
        "/products/a_b".to_owned(),
        "/products/a.b".to_owned(),
        "/products/caf%C3%A9".to_owned(),
        "/products/a%2Fb".to_owned(),
        "/products/%41".to_owned(),
        "/products/a%20b".to_owned(),
        format!("/products/{long}"),
        "/products/1?fresh=1".to_owned(),
        "/stats?x".to_owned(),
    ] {
        let reply = get(&client, &format!("{base}{path}")).await;
        let json: serde_json::Value = serde_json::from_str(&reply.body).unwrap_or_default();
        if reply.status != 400
            || reply.content_type.as_deref() != Some(PROBLEM_JSON)
            || json["type"] != BAD_INPUT
        {
            return Err(format!(
                "GET {path}: {} {:?} {}; want a 400 problem",
                reply.status, reply.content_type, reply.body
            ));
        }
    }
    let after = stats(base).await?["origin"]["calls"].as_u64();
    if before != after {
        return Err(format!(
            "bad input reached the origin: {before:?} → {after:?} calls"
        ));
    }
    Ok(())
}

/// A product requested twice from `base`: `computed`, then `hit` with the same body.
pub async fn second_request_hits(base: &str) -> Result<(), String> {
    let url = format!("{base}/products/{}", unique("twice"));
    let client = load::client(1);
    let (first, second) = (get(&client, &url).await, get(&client, &url).await);
    let statuses = (
        first.cache_status.as_deref(),
        second.cache_status.as_deref(),
    );
    if (first.status, second.status) != (200, 200) || statuses != (Some("computed"), Some("hit")) {
        return Err(format!(
            "{} {:?}, then {} {:?}; want 200 computed, then 200 hit",
            first.status, statuses.0, second.status, statuses.1
        ));
    }
    if first.body != second.body || first.content_type.as_deref() != Some("application/json") {
        return Err(format!("{} then {}", first.body, second.body));
    }
    Ok(())
}

/// The app at `base` (on memory) after one cold product: the lock's acquisition, the cache
/// call and the layer's answer are on `GET /metrics`. Panics otherwise (a test's body).
pub async fn metrics_show_the_computed_product(base: &str) {
    let product = async {
        let product = load::send(&load::client(1), "GET", base, "/products/m-1", None).await;
        (product.status, product.body)
    };
    assert_page_after(
        base,
        product,
        200,
        &[
            (
                "lock_acquire_total",
                &[("backend", "memory"), ("outcome", "acquired")],
            ),
            ("lock_cache_requests_total", &[("result", "computed")]),
            (
                "lock_http_responses_total",
                &[("layer", "response_cache"), ("outcome", "miss")],
            ),
        ],
    )
    .await;
}
