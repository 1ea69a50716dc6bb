//! The response cache's answers and the cache primitive's calls as metrics (feature
//! `metrics`), read back from an in-memory recorder: a miss, a hit, a bypass and an
//! application error, each counted once under `layer="response_cache"`, and the primitive's
//! calls by result with the computation timed once.

use std::time::Duration;

use lock_core::cache::{Cache, Freshness};
use lock_core::http::cache::{
    BodyFailed, ForwardAs, HeaderPairs, HttpCache, OriginResponse, Plan, RequestParts, Served,
};
use lock_core::metrics::{CACHE_COMPUTE_SECONDS, CACHE_REQUESTS_TOTAL};
use lock_core::metrics::{HTTP_RESPONSES_TOTAL, NO_STATUS};

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
    let Plan::Bypass(bypass) = http.plan(&post) else {
        panic!("a POST passes the cache by");
    };
    bypass.record(Some(201)); // the adapter hands the application's status
    let boom = tokio::time::timeout(step, get(&http, &RequestParts::get("/boom"), true)).await;
    assert!(matches!(boom.unwrap(), Some(Served::Error(()))), "an error");

    let metrics = snapshotter.snapshot().into_vec();
    let count = |labels: &[(&str, &str)]| counter(&metrics, HTTP_RESPONSES_TOTAL, labels);
    let layer = ("layer", "response_cache");
    assert_eq!(count(&[layer, ("status", "200"), ("outcome", "miss")]), 1);
    assert_eq!(count(&[layer, ("status", "200"), ("outcome", "hit")]), 1);
    assert_eq!(count(&[layer, ("status", "201"), ("outcome", "bypass")]), 1);
    let none = ("status", NO_STATUS);
    assert_eq!(count(&[layer, none, ("outcome", "origin_error")]), 1);
    assert_eq!(count(&[layer]), 4, "each answer counted once");

    let calls = |result: &str| {
        let labels = [("cache", "metrics"), ("result", result)];
        counter(&metrics, CACHE_REQUESTS_TOTAL, &labels)
    };
    assert_eq!(calls("computed"), 1);
    assert_eq!(calls("hit"), 1);
    assert_eq!(calls("compute_failed"), 1);
    assert_eq!(counter(&metrics, CACHE_REQUESTS_TOTAL, &[]), 3);
    assert_eq!(histogram_samples(&metrics, CACHE_COMPUTE_SECONDS), 1);
}

/// Two caches are told apart by their `cache` label (their namespace), and the locks of
/// their computations by the lock metrics' `namespace` (`cache.<namespace>`).
#[tokio::test]
async fn two_caches_are_told_apart() {
    let (snapshotter, _recording) = local_recorder();
    for (namespace, calls) in [("prices", 1), ("stock", 2)] {
        let cache = Cache::memory(namespace).unwrap();
        for _ in 0..calls {
            let value = cache
                .entry("k")
                .fresh_for(Duration::from_secs(30))
                .try_get_with(|| async { Ok::<_, std::io::Error>(b"v".to_vec()) })
                .await
                .unwrap();
            assert_eq!(value.value, b"v");
        }
    }
    let metrics = snapshotter.snapshot().into_vec();
    let calls = |cache: &str| counter(&metrics, CACHE_REQUESTS_TOTAL, &[("cache", cache)]);
    assert_eq!((calls("prices"), calls("stock")), (1, 2));
    let computed = |cache: &str| {
        let labels = [("cache", cache)];
        crate::metrics_support::histogram_samples_with(&metrics, CACHE_COMPUTE_SECONDS, &labels)
    };
    assert_eq!((computed("prices"), computed("stock")), (1, 1));
    let lock = |namespace: &str| {
        let labels = [("namespace", namespace), ("outcome", "acquired")];
        counter(&metrics, lock_core::metrics::ACQUIRE_TOTAL, &labels)
    };
    assert_eq!((lock("cache.prices"), lock("cache.stock")), (1, 1));
}
