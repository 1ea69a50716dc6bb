//! The axum app's tests, in-process on the memory backend: a cold product under 200
//! concurrent requests reaches the origin once, bad ids are 400 problems that never reach it,
//! a second request is a hit, and the cache's work is on `GET /metrics` (the checks of
//! `lock_harness::demo::stampede`, shared with the actix-web app).

use example_support::product::ProductService;

async fn serve(service: ProductService) -> String {
    stampede_axum::spawn(service).await.unwrap()
}

lock_harness::stampede_app_tests!(serve);
