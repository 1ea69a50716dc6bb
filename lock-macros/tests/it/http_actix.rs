//! `#[distributed_lock]` on actix-web handlers served over HTTP: keys rendered from
//! `web::Path` tuples (`{path.0}`) and destructured `web::Json`, busy answered with 409.

use std::time::Duration;

use actix_web::{http::StatusCode, post, web, ResponseError};
use lock_core::{distributed_lock, LockClient, LockError, LockOwner};

use crate::support;

#[derive(serde::Deserialize)]
struct Restock {
    qty: u32,
}

/// The app's error: a busy lock is 409, anything else from the lock 503.
#[derive(Debug)]
struct HttpError(LockError);

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl ResponseError for HttpError {
    fn status_code(&self) -> StatusCode {
        if self.0.is_busy() {
            StatusCode::CONFLICT
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        }
    }
}

impl From<LockError> for HttpError {
    fn from(error: LockError) -> Self {
        Self(error)
    }
}

#[post("/shops/{shop}/stock/{sku}")]
#[distributed_lock(
    key = "stock:{path.0}:{path.1}",
    name = "actix",
    client = locks.get_ref(),
    on_busy = "reject",
    fence = fence
)]
async fn restock(
    locks: web::Data<LockClient>,
    path: web::Path<(String, u32)>,
    web::Json(restock): web::Json<Restock>,
) -> Result<String, HttpError> {
    // actix-web 4's `Path` keeps its field private, so it is not destructured in the signature.
    let (shop, sku) = path.into_inner();
    Ok(format!("{shop}:{sku}:{}:{fence}", restock.qty))
}

/// Serves `restock` on a loopback port from its own thread (actix runs its own runtime);
/// returns the address and the handle that stops it.
fn serve(locks: LockClient) -> (std::net::SocketAddr, actix_web::dev::ServerHandle) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (handle_tx, handle_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            let locks = web::Data::new(locks);
            let server = actix_web::HttpServer::new(move || {
                actix_web::App::new()
                    .app_data(locks.clone())
                    .service(restock)
            })
            .workers(1)
            .listen(listener)
            .unwrap()
            .run();
            handle_tx.send(server.handle()).unwrap();
            server.await
        })
    });
    let handle = handle_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the server started");
    (addr, handle)
}

#[tokio::test]
async fn handlers_lock_on_keys_rendered_from_extractors() {
    tokio::time::timeout(Duration::from_secs(20), async {
        let rig = support::memory();
        let (addr, server) = serve(rig.client.clone());

        let body = r#"{"qty": 5}"#;
        let (status, reply) = support::http(addr, "POST", "/shops/north/stock/7", body).await;
        assert_eq!(status, 200, "{reply}");
        let fence: u64 = reply.strip_prefix("north:7:5:").unwrap().parse().unwrap();

        let held = rig
            .client
            .lock("actix:stock:north:7")
            .owner(&LockOwner::new())
            .await
            .unwrap();
        let (status, reply) = support::http(addr, "POST", "/shops/north/stock/7", body).await;
        assert_eq!(status, 409, "{reply}");
        assert!(reply.contains("\"actix:stock:north:7\""), "{reply}");
        let (status, _) = support::http(addr, "POST", "/shops/north/stock/8", body).await;
        assert_eq!(status, 200);
        held.release().await.unwrap();

        let (status, reply) = support::http(addr, "POST", "/shops/north/stock/7", body).await;
        assert_eq!(status, 200, "{reply}");
        let later: u64 = reply.strip_prefix("north:7:5:").unwrap().parse().unwrap();
        assert!(later > fence);
        server.stop(true).await;
    })
    .await
    .expect("timed out");
}
