//! `payments --framework axum|actix [payments-axum's flags]`: one instance of the payments
//! app on either framework, as `payments-axum` and `payments-actix` serve it (the same
//! routers); the cross-process tests of this package start one of each, since a test can
//! only start its own package's binaries.

use example_support::app;
use example_support::flags::{usage_error, Flags};
use example_support::payments::{PaymentsConfig, APP_FLAGS};

#[tokio::main]
async fn main() {
    let allowed: Vec<&str> = APP_FLAGS.iter().copied().chain(["framework"]).collect();
    let flags = Flags::of_process(&allowed);
    let framework = flags.get("framework").unwrap_or("axum");
    if !matches!(framework, "axum" | "actix") {
        usage_error(&format!("--framework is axum or actix, not {framework:?}"));
    }
    let config = PaymentsConfig::from_flags(&flags).unwrap_or_else(|e| usage_error(&e));
    let (service, port) = app::payment_service_of(&config).await;
    let listener = app::listen(port).await;
    let served = if framework == "axum" {
        payments_axum::serve(listener, service).await
    } else {
        match listener
            .into_std()
            .and_then(|listener| payments_actix::server(listener, service, 2))
        {
            Ok(server) => server.await,
            Err(e) => Err(e),
        }
    };
    if let Err(e) = served {
        usage_error(&format!("server failed: {e}"));
    }
}
