//! A tracing subscriber that keeps what an operator reads at the default level: lock-core's
//! INFO, WARN and ERROR events (level and message), for tests and chaos scenarios that count
//! log lines.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// lock-core's INFO-and-above events as they happen: kept for [`take`](Self::take), and
/// handed to a sink as well when one is given (a process that prints them, say). Install it
/// once per process (it is a global subscriber, hence the `&'static`).
///
/// ```
/// use lock_testing::LogLines;
///
/// let lines: &'static LogLines = Box::leak(Box::new(LogLines::new()));
/// tracing::subscriber::with_default(lines, || {
///     tracing::warn!(target: "lock_core::example", "lock backend down");
///     tracing::debug!(target: "lock_core::example", "not an operator's line");
///     tracing::warn!(target: "another_crate", "not lock-core's");
/// });
/// assert_eq!(lines.take(), [(tracing::Level::WARN, "lock backend down".to_owned())]);
/// ```
#[derive(Debug, Default)]
pub struct LogLines {
    seen: Mutex<Vec<(Level, String)>>,
    sink: Option<fn(Level, &str)>,
    next_span: AtomicU64,
}

impl LogLines {
    /// Keeps the lines for [`take`](Self::take).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Also hands each line to `sink` as it comes (its message on one line).
    #[must_use]
    pub fn with_sink(sink: fn(Level, &str)) -> Self {
        Self {
            sink: Some(sink),
            ..Self::default()
        }
    }

    /// The lines kept since the last call.
    pub fn take(&self) -> Vec<(Level, String)> {
        std::mem::take(&mut *crate::sync_lock(&self.seen))
    }
}

/// The `message` field of an event.
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for &'static LogLines {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= Level::INFO && metadata.target().starts_with("lock_core")
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.next_span.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut message = Message(String::new());
        event.record(&mut message);
        let level = *event.metadata().level();
        let line = message.0.replace('\n', " ");
        if let Some(sink) = self.sink {
            sink(level, &line);
        }
        crate::sync_lock(&self.seen).push((level, line));
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}
