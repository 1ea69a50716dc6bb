//! The payments apps' HTTP client side: `POST /payments` as a client sends it (user, key,
//! body), timed, with what the answer said.

use std::time::Duration;

use bytes::Bytes;
use example_support::payments::PAYMENTS_PATH;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::time::Instant;

/// The header a replayed answer carries (`true`).
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// An HTTP/1 client with a connection pool, for requests with bodies.
pub type PaymentClient = Client<HttpConnector, Full<Bytes>>;

/// A client keeping up to `pool` idle connections per instance.
#[must_use]
pub fn client(pool: usize) -> PaymentClient {
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(pool)
        .build_http()
}

/// One answered request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Posted {
    /// The status (0 when the request failed before an answer).
    pub status: u16,
    /// Whether the answer carried `Idempotent-Replayed: true`.
    pub replayed: bool,
    /// The `content-type` header.
    pub content_type: Option<String>,
    /// The body (or the transport error).
    pub body: String,
    /// From sending to the last byte of the body.
    pub latency: Duration,
}

impl Posted {
    /// A 201 that is not a replay: the handler ran for this request.
    #[must_use]
    pub fn original(&self) -> bool {
        self.status == 201 && !self.replayed
    }
}

/// `POST {base}/payments` with `Authorization: Bearer <user>` and `Idempotency-Key: <key>`
/// when given; a transport failure or 30 s without an answer is status 0.
pub async fn post_payment(
    client: &PaymentClient,
    base: &str,
    user: Option<&str>,
    key: Option<&str>,
    body: &str,
) -> Posted {
    let mut request = hyper::Request::post(format!("{base}{PAYMENTS_PATH}"))
        .header("content-type", "application/json");
    if let Some(user) = user {
        request = request.header("authorization", format!("Bearer {user}"));
    }
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    send(
        client,
        request.body(Full::new(Bytes::from(body.to_owned()))),
    )
    .await
}

/// `GET url`, the body as text; status 0 on a transport failure.
pub async fn get(client: &PaymentClient, url: &str) -> Posted {
    send(
        client,
        hyper::Request::get(url).body(Full::new(Bytes::new())),
    )
    .await
}

async fn send(
    client: &PaymentClient,
    request: Result<hyper::Request<Full<Bytes>>, hyper::http::Error>,
) -> Posted {
    let started = Instant::now();
    let failed = |body: String, latency| Posted {
        status: 0,
        replayed: false,
        content_type: None,
        body,
        latency,
    };
    let request = match request {
        Ok(request) => request,
        Err(error) => return failed(error.to_string(), Duration::ZERO),
    };
    let answer = async {
        let response = client.request(request).await.map_err(|e| e.to_string())?;
        let (head, body) = response.into_parts();
        let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
        Ok::<_, String>((head, body))
    };
    match tokio::time::timeout(Duration::from_secs(30), answer).await {
        Ok(Ok((head, body))) => {
            let header = |name: &str| {
                head.headers
                    .get(name)
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_owned)
            };
            Posted {
                status: head.status.as_u16(),
                replayed: header(IDEMPOTENT_REPLAYED).as_deref() == Some("true"),
                content_type: header("content-type"),
                body: String::from_utf8_lossy(&body).into_owned(),
                latency: started.elapsed(),
            }
        }
        Ok(Err(error)) => failed(error, started.elapsed()),
        Err(_) => failed("timed out after 30 s".into(), started.elapsed()),
    }
}
