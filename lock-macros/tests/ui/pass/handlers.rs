//! axum and actix-web handler signatures: extractors destructured in the signature, the
//! client taken from state, and the futures the frameworks require (axum: `Send`).

use lock_core::{distributed_lock, LockClient, LockError};

#[derive(serde::Deserialize)]
struct Order {
    id: u64,
}

#[derive(Debug)]
struct AppError(LockError);

impl From<LockError> for AppError {
    fn from(error: LockError) -> Self {
        Self(error)
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl axum::response::IntoResponse for AppError {
    fn into_response(self) -> axum::response::Response {
        (axum::http::StatusCode::CONFLICT, self.0.to_string()).into_response()
    }
}

impl actix_web::ResponseError for AppError {}

mod with_axum {
    use axum::extract::{Json, Path, State};

    use super::*;

    #[derive(Clone)]
    pub struct App {
        pub locks: LockClient,
    }

    #[distributed_lock(key = "order:{order.id}:{shop}:{sku}", client = app.locks, wait = "3s")]
    pub async fn checkout(
        State(app): State<App>,
        Path((shop, sku)): Path<(String, u32)>,
        Json(order): Json<Order>,
    ) -> Result<Json<u64>, AppError> {
        Ok(Json(order.id + u64::from(sku) + shop.len() as u64))
    }

    pub fn router(locks: LockClient) -> axum::Router {
        axum::Router::new()
            .route("/{shop}/{sku}", axum::routing::post(checkout))
            .with_state(App { locks })
    }
}

mod with_actix {
    use actix_web::{post, web, HttpResponse};

    use super::*;

    #[post("/{shop}/{sku}")]
    #[distributed_lock(key = "order:{order.id}:{path.0}:{path.1}", client = locks.get_ref())]
    pub async fn checkout(
        locks: web::Data<LockClient>,
        path: web::Path<(String, u32)>,
        web::Json(order): web::Json<Order>,
    ) -> Result<HttpResponse, AppError> {
        Ok(HttpResponse::Ok().body(format!("{} {}", order.id, path.0)))
    }

    // The other attribute order works too.
    #[distributed_lock(key = "order:{order.id}", client = locks.get_ref(), on_busy = "reject")]
    #[post("/orders")]
    pub async fn create(
        locks: web::Data<LockClient>,
        order: web::Json<Order>,
    ) -> Result<HttpResponse, AppError> {
        Ok(HttpResponse::Created().finish())
    }

    pub fn configure(config: &mut web::ServiceConfig) {
        config.service(checkout).service(create);
    }
}

fn main() {
    let locks = LockClient::new(lock_core::MemoryBackend::new());
    let _: axum::Router = with_axum::router(locks);
    let _ = actix_web::App::new().configure(with_actix::configure);
}
