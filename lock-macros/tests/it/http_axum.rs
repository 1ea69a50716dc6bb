//! `#[distributed_lock]` on axum handlers served over HTTP: keys rendered from `State`,
//! `Path` and `Json` extractors, busy answered with 409.

use std::time::Duration;

use axum::extract::{Json, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use lock_core::{distributed_lock, LockClient, LockError, LockOwner};

use crate::support;

#[derive(Clone)]
struct App {
    locks: LockClient,
}

#[derive(serde::Deserialize)]
struct Order {
    id: u64,
    qty: u32,
}

/// The app's error: a busy lock is 409, anything else from the lock 503.
struct HttpError(LockError);

impl From<LockError> for HttpError {
    fn from(error: LockError) -> Self {
        Self(error)
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let status = if self.0.is_busy() {
            StatusCode::CONFLICT
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        (status, self.0.to_string()).into_response()
    }
}

#[distributed_lock(
    key = "shop:{shop}:order:{order.id}",
    name = "axum",
    client = app.locks,
    on_busy = "reject",
    fence = fence
)]
async fn checkout(
    State(app): State<App>,
    Path(shop): Path<String>,
    Json(order): Json<Order>,
) -> Result<String, HttpError> {
    Ok(format!("{shop}:{}:{}:{fence}", order.id, order.qty))
}

#[tokio::test]
async fn handlers_lock_on_keys_rendered_from_extractors() {
    tokio::time::timeout(Duration::from_secs(20), async {
        let rig = support::memory();
        let app = axum::Router::new()
            .route("/shops/{shop}/checkout", axum::routing::post(checkout))
            .with_state(App {
                locks: rig.client.clone(),
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move { axum::serve(listener, app).await });

        let order = r#"{"id": 42, "qty": 2}"#;
        let (status, body) = support::http(addr, "POST", "/shops/north/checkout", order).await;
        assert_eq!(status, 200, "{body}");
        let fence: u64 = body.strip_prefix("north:42:2:").unwrap().parse().unwrap();

        // Another owner holds exactly the key the handler renders: 409 naming it.
        let held = rig
            .client
            .lock("axum:shop:north:order:42")
            .owner(&LockOwner::new())
            .await
            .unwrap();
        let (status, body) = support::http(addr, "POST", "/shops/north/checkout", order).await;
        assert_eq!(status, 409, "{body}");
        assert!(body.contains("\"axum:shop:north:order:42\""), "{body}");
        // Other shops and orders are other keys.
        let (status, _) = support::http(addr, "POST", "/shops/south/checkout", order).await;
        assert_eq!(status, 200);
        let (status, _) = support::http(
            addr,
            "POST",
            "/shops/north/checkout",
            r#"{"id": 43, "qty": 1}"#,
        )
        .await;
        assert_eq!(status, 200);
        held.release().await.unwrap();

        let (status, body) = support::http(addr, "POST", "/shops/north/checkout", order).await;
        assert_eq!(status, 200, "{body}");
        let later: u64 = body.strip_prefix("north:42:2:").unwrap().parse().unwrap();
        assert!(later > fence);
        server.abort();
    })
    .await
    .expect("timed out");
}
