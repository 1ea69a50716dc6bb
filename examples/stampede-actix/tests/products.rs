//! The actix-web app in-process on the memory backend: a cold product under 200 concurrent
//! requests reaches the origin once, bad ids are 400 problems that never reach it, and a
//! second request is a hit (the checks and tests of `lock_harness::stampede`, shared with the
//! axum app).

use example_support::product::ProductService;

async fn serve(service: ProductService) -> String {
    stampede_actix::spawn(service, 2).unwrap()
}

lock_harness::stampede_app_tests!(serve);
