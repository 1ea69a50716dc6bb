//! What every middleware of this crate shares: the `Transform` that wraps the rest of the chain
//! in the middleware's service, and that service's `Service` impl, which hands each request to
//! the transform's `handle`. Written once, as [`middleware!`].

use std::future::Future;
use std::pin::Pin;

pub(crate) use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::Error;

/// The future of a middleware's answer (actix-web's futures are not `Send`).
pub(crate) type LocalBoxFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// The rest of the chain a middleware wraps: a service of `ServiceRequest`s answering
/// `ServiceResponse<B>` (the bound of each middleware's `handle`; the public impls spell it
/// out).
pub(crate) trait Chain<B>:
    Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static
{
}

impl<S, B> Chain<B> for S where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static
{
}

/// Declares `$middleware`, the service the `Transform` `$transform` wraps around the rest of
/// the chain (the chain in an `Rc`, a clone of the transform), and both impls: the middleware
/// answers with `ServiceResponse<$body<B>>`, made by the transform's
/// `fn handle<S: Chain<B>, B>(&self, &Rc<S>, ServiceRequest) -> LocalBoxFuture<..>`.
macro_rules! middleware {
    (
        $(#[$meta:meta])*
        pub struct $middleware:ident<S $(, $k:ident: $bound:path)?>
        for $transform:ty, answering $body:ident<B> where B: $($body_bound:tt)+
    ) => {
        $(#[$meta])*
        pub struct $middleware<S $(, $k)?> {
            service: std::rc::Rc<S>,
            transform: $transform,
        }

        impl<S, B: $($body_bound)+ $(, $k: $bound)?> $crate::transform::Transform<S, $crate::transform::ServiceRequest> for $transform
        where S: $crate::transform::Service<$crate::transform::ServiceRequest, Response = $crate::transform::ServiceResponse<B>, Error = actix_web::Error> + 'static,
        {
            type Transform = $middleware<S $(, $k)?>;
            type Response = $crate::transform::ServiceResponse<$body<B>>;
            type Error = actix_web::Error;
            type InitError = ();
            type Future = std::future::Ready<Result<Self::Transform, ()>>;

            fn new_transform(&self, service: S) -> Self::Future {
                let service = std::rc::Rc::new(service);
                std::future::ready(Ok($middleware { service, transform: self.clone() }))
            }
        }

        impl<S, B: $($body_bound)+ $(, $k: $bound)?> $crate::transform::Service<$crate::transform::ServiceRequest> for $middleware<S $(, $k)?>
        where S: $crate::transform::Service<$crate::transform::ServiceRequest, Response = $crate::transform::ServiceResponse<B>, Error = actix_web::Error> + 'static,
        {
            type Response = $crate::transform::ServiceResponse<$body<B>>;
            type Error = actix_web::Error;
            type Future = $crate::transform::LocalBoxFuture<Result<Self::Response, Self::Error>>;

            actix_web::dev::forward_ready!(service);

            fn call(&self, request: $crate::transform::ServiceRequest) -> Self::Future {
                self.transform.handle(&self.service, request)
            }
        }
    };
}

pub(crate) use middleware;
