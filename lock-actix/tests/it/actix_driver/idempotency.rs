//! How the idempotency suite (`lock_testing::idempotency`) talks to actix-web: its
//! handler behind [`Idempotency`](lock_actix::Idempotency) in a test service (the scope read from the user header),
//! requests sent with `call`.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::{Method, StatusCode};
use actix_web::test::{self, TestRequest};
use actix_web::web::{self, Bytes};
use actix_web::{App, HttpRequest, HttpResponse};
use lock_actix::HeldClaim;
use lock_core::http::idempotency::IdempotencyRules;
use lock_core::idempotency::Idempotency;
use lock_testing::adapter_tests::idempotency_middleware;
use lock_testing::idempotency::{Answer, Call, Driver, Handler, Request, USER_HEADER};

/// The suite's driver for lock-actix.
pub struct ActixIdempotency;

/// A test service, its type erased (it has no name to give).
pub type SendFn = Rc<dyn Fn(Request) -> Pin<Box<dyn Future<Output = Answer>>>>;

impl Driver for ActixIdempotency {
    type App = SendFn;
    const NAME: &'static str = "actix";

    async fn app(idempotency: Idempotency, rules: IdempotencyRules, handler: Handler) -> SendFn {
        let user =
            |req: &ServiceRequest| Some(req.headers().get(USER_HEADER)?.to_str().ok()?.into());
        let middleware: lock_actix::Idempotency = idempotency_middleware(idempotency, rules, user);
        suite_app!(middleware, handler, handle)
    }

    fn send(app: &SendFn, request: Request) -> impl Future<Output = Answer> {
        app(request)
    }
}

/// The suites' application: `$handle` on every path behind `$middleware`, with the suite's
/// `$handler` as its data, as a [`SendFn`].
macro_rules! suite_app {
    ($middleware:expr, $handler:expr, $handle:expr) => {
        $crate::actix_driver::idempotency::send_fn(
            actix_web::App::new()
                .app_data(actix_web::web::Data::new($handler))
                .wrap($middleware)
                .route("/{path:.*}", actix_web::web::route().to($handle)),
        )
        .await
    };
}

pub(crate) use suite_app;

/// `app` as a test service, behind the [`SendFn`] the drivers hand the suites.
pub async fn send_fn<T, B>(app: App<T>) -> SendFn
where
    T: ServiceFactory<
            ServiceRequest,
            Config = (),
            Response = ServiceResponse<B>,
            Error = actix_web::Error,
            InitError = (),
        > + 'static,
    B: MessageBody + 'static,
{
    let service = Rc::new(test::init_service(app).await);
    Rc::new(move |request: Request| {
        let service = service.clone();
        Box::pin(async move { read(service.call(to_request(request)).await).await })
    })
}

/// The suite's request as an actix test request.
pub fn to_request(request: Request) -> actix_http::Request {
    let method = Method::from_bytes(request.method.as_bytes()).unwrap();
    let mut test = TestRequest::default()
        .method(method)
        .uri(&request.path)
        .set_payload(request.body);
    for (name, value) in request.headers {
        test = test.append_header((name, value));
    }
    test.to_request()
}

/// Status, headers and the whole body. An error is rendered as actix-web's dispatcher
/// renders it (the lost-claim 503 travels this way).
pub async fn read<B: MessageBody + 'static>(
    response: Result<ServiceResponse<B>, actix_web::Error>,
) -> Answer {
    let response = match response {
        Ok(response) => response.map_into_boxed_body(),
        Err(error) => ServiceResponse::new(
            TestRequest::default().to_http_request(),
            error.error_response(),
        ),
    };
    let headers = response.headers().iter().map(|(name, value)| {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        (name.to_string(), value)
    });
    let headers = headers.collect();
    let status = response.status().as_u16();
    let body = actix_web::body::to_bytes(response.into_body()).await;
    Answer {
        status,
        headers,
        body: body.map_err(|_| "body error").unwrap().to_vec(),
    }
}

/// The handler: the suite's handler's answer as an actix-web response.
pub async fn handle(
    handler: web::Data<Handler>,
    request: HttpRequest,
    claim: Option<HeldClaim>,
    body: Bytes,
) -> HttpResponse {
    let call = Call {
        method: request.method().to_string(),
        path: request.path().to_owned(),
        body: body.to_vec(),
        claim: claim.map(|claim| claim.0),
    };
    let reply = handler.answer(call).await;
    let mut response = HttpResponse::build(StatusCode::from_u16(reply.status).unwrap());
    for header in reply.headers {
        response.insert_header(header);
    }
    response.body(reply.body)
}
