//! The `payments-actix` binary itself, started as a process on memory: it announces its
//! port, and its answers are the idempotent ones (replay, 422, 401, keys per user, 400s).

use std::path::PathBuf;

use lock_harness::payments::checks::{idempotent_answers, AppCommand};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_idempotent_payments() {
    let app = AppCommand {
        binary: PathBuf::from(env!("CARGO_BIN_EXE_payments-actix")),
        args: Vec::new(),
    };
    let process = app
        .launch(&["--handler-ms".into(), "0".into()])
        .await
        .unwrap();
    idempotent_answers(std::slice::from_ref(&process.base), None)
        .await
        .unwrap();
}
