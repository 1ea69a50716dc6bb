//! The idempotency layer's tracing span: one per handled request, its `outcome` recorded.
//! A test binary of its own: a subscriber set for one thread would race the callsite and level
//! caches other tests' threads fill meanwhile.

#[path = "it/axum_driver/mod.rs"]
mod axum_driver;

use std::sync::{Arc, Mutex};

use axum_driver::idempotency::AxumIdempotency;
use lock_core::http::idempotency::IdempotencyRules;
use lock_core::idempotency::Idempotency;
use lock_testing::idempotency::{send, Driver, Handler, Request};

#[tokio::test]
async fn the_span_records_each_outcome() {
    let recorder = Recorder::default();
    let _default = tracing::dispatcher::set_default(&tracing::Dispatch::new(recorder.clone()));
    let handler = Handler::new();
    let idempotency = Idempotency::memory("span").unwrap();
    let app = AxumIdempotency::app(idempotency, IdempotencyRules::new(), handler).await;
    let pay = || Request::post("/pay").key("span-1").body("1");
    send::<AxumIdempotency>(&app, pay()).await;
    send::<AxumIdempotency>(&app, pay()).await;
    send::<AxumIdempotency>(&app, pay().body("2")).await;
    send::<AxumIdempotency>(&app, Request::post("/pay")).await;
    send::<AxumIdempotency>(&app, Request::post("/status/500").key("span-2")).await;
    send::<AxumIdempotency>(&app, Request::new("GET", "/pay")).await;
    assert_eq!(
        recorder.outcomes(),
        [
            "executed",
            "replayed",
            "key_reused",
            "rejected",
            "not_stored"
        ],
        "one span per handled request, none for a request passed on"
    );
}

/// A subscriber keeping the `outcome` recorded in each `idempotency` span, in order (for
/// one thread: `Span::current` is the last span entered).
#[derive(Clone, Default)]
struct Recorder {
    outcomes: Arc<Mutex<Vec<String>>>,
    spans: Arc<Mutex<Vec<&'static tracing::Metadata<'static>>>>,
    entered: Arc<Mutex<Vec<tracing::span::Id>>>,
}

impl Recorder {
    fn outcomes(&self) -> Vec<String> {
        self.outcomes.lock().unwrap().clone()
    }
}

struct Outcome<'a>(&'a Mutex<Vec<String>>);

impl tracing::field::Visit for Outcome<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "outcome" {
            self.0.lock().unwrap().push(value.to_owned());
        }
    }

    fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
}

impl tracing::Subscriber for Recorder {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut spans = self.spans.lock().unwrap();
        spans.push(span.metadata());
        tracing::span::Id::from_u64(spans.len() as u64)
    }

    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        values.record(&mut Outcome(&self.outcomes));
    }

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, _: &tracing::Event<'_>) {}

    fn enter(&self, span: &tracing::span::Id) {
        self.entered.lock().unwrap().push(span.clone());
    }

    fn exit(&self, _: &tracing::span::Id) {
        self.entered.lock().unwrap().pop();
    }

    fn current_span(&self) -> tracing_core::span::Current {
        match self.entered.lock().unwrap().last() {
            Some(id) => {
                let metadata = self.spans.lock().unwrap()[id.into_u64() as usize - 1];
                tracing_core::span::Current::new(id.clone(), metadata)
            }
            None => tracing_core::span::Current::none(),
        }
    }
}
