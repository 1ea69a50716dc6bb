//! The response cache's answers and the cache primitive's calls as metrics (feature
//! `metrics`), read back from an in-memory recorder: a miss, a hit, a bypass and an
//! application error, each counted once under `layer="response_cache"`, and the primitive's
//! calls by result with the computation timed once.

use std::time::Duration;

use lock_core::cache::metrics::{CACHE_COMPUTE_SECONDS, CACHE_REQUESTS_TOTAL};
use lock_core::cache::{Cache, Freshness};
use lock_core::http::cache::{
    BodyFailed, ForwardAs, HeaderPairs, HttpCache, OriginResponse, Plan, RequestParts, Served,
};
use lock_core::http::metrics::HTTP_RESPONSES_TOTAL;

use crate::metrics_support::{counter, histogram_samples, local_recorder};

/// The application's response: a 200 with a one-chunk text body.
struct Text(Option<&'static str>);

impl HeaderPairs for Text {
    fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
        each("content-type", b"text/plain");
    }
}

impl OriginResponse for Text {
    fn status(&self) -> u16 {
        200
    }

    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, BodyFailed> {
        Ok(self.0.take().map(|text| text.as_bytes().to_vec()))
    }
}

/// Serves `request` through `http` with an application that answers `Ok(Text)` or fails;
/// returns what the cache said to send (`None` for a bypass).
async fn get(http: &HttpCache, request: &RequestParts, fails: bool) -> Option<Served<Text, ()>> {
    let Plan::Cache(call) = http.plan(request) else {
        return None;
    };
    let origin = move |_: ForwardAs| async move {
        if fails {
            Err(())
        } else {
            Ok(Text(Some("hi")))
        }
    };
    Some(call.serve(origin).await)
}

#[tokio::test]
async fn the_response_cache_counts_its_answers() {
    let (snapshotter, _recording) = local_recorder();
    let http = HttpCache::builder(Cache::memory("metrics").unwrap())
        .default_freshness(Freshness::fresh_for(Duration::from_secs(30)))
        .build()
        .unwrap();
    let hello = RequestParts::get("/hello");

    let step = Duration::from_secs(5);
    let miss = tokio::time::timeout(step, get(&http, &hello, false)).await;
    assert!(matches!(miss.unwrap(), Some(Served::Origin(_))), "a miss");
    let hit = tokio::time::timeout(step, get(&http, &hello, false)).await;
    assert!(matches!(hit.unwrap(), Some(Served::Answer(_))), "a hit");
    let post = RequestParts::new("POST", "/hello");
    assert!(get(&http, &post, false).await.is_none(), "a bypass");
    let boom = tokio::time::timeout(step, get(&http, &RequestParts::get("/boom"), true)).await;
    assert!(matches!(boom.unwrap(), Some(Served::Error(()))), "an error");

    let metrics = snapshotter.snapshot().into_vec();
    let count = |labels: &[(&str, &str)]| counter(&metrics, HTTP_RESPONSES_TOTAL, labels);
    let layer = ("layer", "response_cache");
    assert_eq!(count(&[layer, ("status", "200"), ("outcome", "miss")]), 1);
    assert_eq!(count(&[layer, ("status", "200"), ("outcome", "hit")]), 1);
    assert_eq!(count(&[layer, ("outcome", "bypass")]), 1);
    assert_eq!(count(&[layer, ("outcome", "origin_error")]), 1);
    assert_eq!(count(&[layer]), 4, "each answer counted once");

    let calls = |result: &str| counter(&metrics, CACHE_REQUESTS_TOTAL, &[("result", result)]);
    assert_eq!(calls("computed"), 1);
    assert_eq!(calls("hit"), 1);
    assert_eq!(calls("compute_failed"), 1);
    assert_eq!(counter(&metrics, CACHE_REQUESTS_TOTAL, &[]), 3);
    assert_eq!(histogram_samples(&metrics, CACHE_COMPUTE_SECONDS), 1);
}
