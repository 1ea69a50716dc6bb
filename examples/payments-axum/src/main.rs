//! `payments-axum --port P [--backend memory|redis|postgres] [--redis-url URL]
//! [--postgres-url URL] [--namespace NS] [--name NAME] [--handler-ms D] [--lease-ms L]
//! [--announce]`: serves `POST /payments` behind the idempotency layer and `GET /stats`;
//! prints `listening on http://127.0.0.1:P` once it accepts connections (`--port 0` picks a
//! free port).
//! With `--admin-token TOKEN` (or `ADMIN_TOKEN`; at least 16 bytes), the operator's admin
//! console is served at `/admin/` behind that token.

use example_support::app;
use example_support::flags::usage_error;

#[tokio::main]
async fn main() {
    let (service, port) = app::payment_service().await;
    let listener = app::listen(port).await;
    payments_axum::serve(listener, service)
        .await
        .unwrap_or_else(|e| usage_error(&format!("server failed: {e}")));
}
