//! The actix-web app's tests: the payments checks of `lock_harness` (replays, 422, 401, keys
//! per user, in-process and as the binary; `GET /metrics`), shared with the axum app.

use example_support::payments::PaymentService;

async fn serve(service: PaymentService) -> String {
    payments_actix::spawn(service, 1).unwrap()
}

lock_harness::payments_app_tests!(serve, env!("CARGO_BIN_EXE_payments-actix"));
