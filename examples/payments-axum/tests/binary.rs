//! The `payments-axum` binary itself, started as a process on memory: it announces its
//! port, and its answers are the idempotent ones (replay, 422, 401, keys per user, 400s).

use std::path::PathBuf;

use lock_harness::payments::checks::binary_answers;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_idempotent_payments() {
    binary_answers(PathBuf::from(env!("CARGO_BIN_EXE_payments-axum")))
        .await
        .unwrap();
}
