//! The framework-neutral handler behind the response cache in every scenario.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, Notify, Semaphore};

use super::table::Row;

/// How many times an [`Origin`] ran, and with which methods. Clones count together.
#[derive(Debug, Clone, Default)]
pub struct Calls {
    count: Arc<AtomicUsize>,
    methods: Arc<Mutex<Vec<String>>>,
    made: Arc<Notify>,
}

impl Calls {
    /// Calls so far.
    #[must_use]
    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Resolves once there have been `n` calls (a call counts as it starts).
    pub async fn reached(&self, n: usize) {
        loop {
            // Created before the count is read, so a call counted after the read wakes it.
            let made = self.made.notified();
            if self.count() >= n {
                return;
            }
            made.await;
        }
    }

    /// The method of each call so far, in order.
    ///
    /// # Panics
    /// When a call panicked while recording its method.
    #[must_use]
    pub fn methods(&self) -> Vec<String> {
        self.methods.lock().unwrap().clone()
    }

    /// Counts a call; returns how many there were, this one included.
    fn record(&self, method: &str) -> usize {
        let count = self.count.fetch_add(1, Ordering::SeqCst) + 1;
        self.methods.lock().unwrap().push(method.to_owned());
        self.made.notify_waiters();
        count
    }
}

/// Holds a [`gated`](Origin::gated) origin's calls until the test lets them through, one per
/// [`open`](Self::open). Clones are the same gate; a new gate is closed.
#[derive(Debug, Clone)]
pub struct Gate(Arc<Semaphore>);

impl Gate {
    /// A gate that lets nothing through yet.
    #[must_use]
    pub fn closed() -> Self {
        Self(Arc::new(Semaphore::new(0)))
    }

    /// Lets `n` more calls through.
    pub fn open(&self, n: usize) {
        self.0.add_permits(n);
    }

    async fn pass(&self) {
        self.0
            .acquire()
            .await
            .expect("the gate is never closed")
            .forget();
    }
}

/// The bodies `GET /chunked` streams, one receiver per request, taken in order.
#[derive(Debug, Clone, Default)]
pub struct Feeds(Arc<Mutex<VecDeque<mpsc::Receiver<Vec<u8>>>>>);

impl Feeds {
    /// Queues a body for the next `GET /chunked`; it ends when the returned sender is dropped.
    ///
    /// # Panics
    /// When a request panicked while taking its body.
    #[must_use]
    pub fn push(&self) -> mpsc::Sender<Vec<u8>> {
        let (feed, chunks) = mpsc::channel(8);
        self.0.lock().unwrap().push_back(chunks);
        feed
    }
}

/// What an [`Origin`] answers; the adapter turns it into its framework's response.
#[derive(Debug)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Headers. A `content-length` among them is the one the application set itself.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: ReplyBody,
}

/// The body of a [`Reply`].
#[derive(Debug)]
pub enum ReplyBody {
    /// Known in full.
    Full(Vec<u8>),
    /// Of unknown length: chunks as they are sent, until the sender is dropped.
    Chunks(mpsc::Receiver<Vec<u8>>),
}

/// The application behind the response cache: answers every path and method, counting calls.
/// Cheap to clone; clones are the same application.
#[derive(Debug, Clone)]
pub struct Origin(Arc<Kind>);

#[derive(Debug)]
enum Kind {
    Table {
        rows: Vec<Row>,
        calls: Vec<AtomicUsize>,
    },
    Products {
        calls: Calls,
        cache_control: &'static str,
        delay: Duration,
        set_cookie: bool,
    },
    Large {
        calls: Calls,
        feeds: Feeds,
    },
    Flaky {
        calls: Calls,
        delay: Duration,
        failing: AtomicBool,
    },
    Varying {
        calls: Calls,
    },
    Gated {
        calls: Calls,
        gate: Gate,
    },
}

impl Origin {
    /// `GET /products/{id}`: counts the call, waits `delay`, answers `product {id}` with
    /// `cache_control` (and `Set-Cookie: session=abc` when `set_cookie`). `POST` answers
    /// `posted` without counting.
    #[must_use]
    pub fn products(
        calls: &Calls,
        cache_control: &'static str,
        delay: Duration,
        set_cookie: bool,
    ) -> Self {
        Self(Arc::new(Kind::Products {
            calls: calls.clone(),
            cache_control,
            delay,
            set_cookie,
        }))
    }

    /// `GET /length`: counts the call, answers 3000 bytes with their `Content-Length`;
    /// `GET /chunked`: answers the next of `feeds`, of unknown length. Both `max-age=60`.
    #[must_use]
    pub fn large(calls: &Calls, feeds: &Feeds) -> Self {
        Self(Arc::new(Kind::Large {
            calls: calls.clone(),
            feeds: feeds.clone(),
        }))
    }

    /// `GET /products/{id}`: counts the call, waits `delay`, answers `product {id}` with
    /// `Cache-Control: max-age=1, stale-if-error=60`; once [`fail`](Self::fail) is on,
    /// `503` with `Retry-After: 7` and the body `down` instead.
    #[must_use]
    pub fn flaky(calls: &Calls, delay: Duration) -> Self {
        Self(Arc::new(Kind::Flaky {
            calls: calls.clone(),
            delay,
            failing: AtomicBool::new(false),
        }))
    }

    /// `GET /{vary}/{id}`: counts the call, answers `{vary} {id}` with `max-age=60` and its own
    /// `Vary` as `vary` says: none for `plain`, `Accept-Encoding` for `encoding`,
    /// `Accept-Language` for `language`, `*` for `star`.
    #[must_use]
    pub fn varying(calls: &Calls) -> Self {
        Self(Arc::new(Kind::Varying {
            calls: calls.clone(),
        }))
    }

    /// `GET /products/{id}`: counts the call, waits until `gate` lets it through, answers
    /// `product {id} v{n}` (`n`: the call's number, from 1) with `Cache-Control: max-age=1,
    /// stale-while-revalidate=30`.
    #[must_use]
    pub fn gated(calls: &Calls, gate: &Gate) -> Self {
        Self(Arc::new(Kind::Gated {
            calls: calls.clone(),
            gate: gate.clone(),
        }))
    }

    /// Makes a [`flaky`](Self::flaky) origin fail from now on (or answer again).
    pub fn fail(&self, failing: bool) {
        if let Kind::Flaky { failing: now, .. } = &*self.0 {
            now.store(failing, Ordering::SeqCst);
        }
    }

    /// `GET /t/{n}`: answers row `n`'s status and headers with `row {n}`.
    pub(super) fn table(rows: Vec<Row>) -> Self {
        Self(Arc::new(Kind::Table {
            calls: rows.iter().map(|_| AtomicUsize::new(0)).collect(),
            rows,
        }))
    }

    /// The rows of a table origin.
    pub(super) fn rows(&self) -> &[Row] {
        match &*self.0 {
            Kind::Table { rows, .. } => rows,
            _ => &[],
        }
    }

    /// How many times row `n` of a table origin ran.
    pub(super) fn row_calls(&self, n: usize) -> usize {
        match &*self.0 {
            Kind::Table { calls, .. } => calls[n].load(Ordering::SeqCst),
            _ => 0,
        }
    }

    /// The answer to `method path`. `HEAD` is answered as `GET`; anything not described on
    /// the constructors is a 404.
    pub fn answer(&self, method: &str, path: &str) -> impl Future<Output = Reply> + Send + 'static {
        let origin = self.clone();
        let (method, path) = (method.to_owned(), path.to_owned());
        async move { origin.reply(&method, &path).await }
    }

    async fn reply(&self, method: &str, path: &str) -> Reply {
        let max_age = || ("cache-control", "max-age=60".to_owned());
        let full = |status, headers, body: Vec<u8>| Reply {
            status,
            headers,
            body: ReplyBody::Full(body),
        };
        let read = matches!(method, "GET" | "HEAD");
        match (&*self.0, path.rsplit_once('/')) {
            (Kind::Table { rows, calls }, Some(("/t", n))) if read => {
                let n: usize = n.parse().unwrap();
                calls[n].fetch_add(1, Ordering::SeqCst);
                let row = &rows[n];
                let headers = row.response.iter().map(|&(k, v)| (k, v.to_owned()));
                full(row.status, headers.collect(), format!("row {n}").into())
            }
            (Kind::Products { .. }, Some(("/products", _))) if method == "POST" => {
                full(200, Vec::new(), b"posted".to_vec())
            }
            (
                Kind::Products {
                    calls,
                    cache_control,
                    delay,
                    set_cookie,
                },
                Some(("/products", id)),
            ) if read => {
                calls.record(method);
                tokio::time::sleep(*delay).await;
                let mut headers = vec![("cache-control", (*cache_control).to_owned())];
                if *set_cookie {
                    headers.push(("set-cookie", "session=abc".to_owned()));
                }
                full(200, headers, format!("product {id}").into())
            }
            (
                Kind::Flaky {
                    calls,
                    delay,
                    failing,
                },
                Some(("/products", id)),
            ) if read => {
                calls.record(method);
                tokio::time::sleep(*delay).await;
                if failing.load(Ordering::SeqCst) {
                    let headers = vec![("retry-after", "7".to_owned())];
                    return full(503, headers, b"down".to_vec());
                }
                let cache_control = "max-age=1, stale-if-error=60".to_owned();
                full(
                    200,
                    vec![("cache-control", cache_control)],
                    format!("product {id}").into(),
                )
            }
            (Kind::Gated { calls, gate }, Some(("/products", id))) if read => {
                let n = calls.record(method);
                gate.pass().await;
                let cache_control = "max-age=1, stale-while-revalidate=30".to_owned();
                let body = format!("product {id} v{n}");
                full(200, vec![("cache-control", cache_control)], body.into())
            }
            (Kind::Varying { calls }, Some((vary, id))) if read => {
                let own = match vary {
                    "/plain" => None,
                    "/encoding" => Some("Accept-Encoding"),
                    "/language" => Some("Accept-Language"),
                    "/star" => Some("*"),
                    _ => return full(404, Vec::new(), b"not found".to_vec()),
                };
                calls.record(method);
                let mut headers = vec![max_age()];
                headers.extend(own.map(|own| ("vary", own.to_owned())));
                let body = format!("{} {id}", &vary[1..]);
                full(200, headers, body.into())
            }
            (Kind::Large { calls, .. }, Some(("", "length"))) if read => {
                calls.record(method);
                let headers = vec![max_age(), ("content-length", "3000".to_owned())];
                full(200, headers, vec![b'x'; 3000])
            }
            (Kind::Large { feeds, .. }, Some(("", "chunked"))) if read => {
                let chunks = feeds.0.lock().unwrap().pop_front().expect("a feed");
                Reply {
                    status: 200,
                    headers: vec![max_age()],
                    body: ReplyBody::Chunks(chunks),
                }
            }
            _ => full(404, Vec::new(), b"not found".to_vec()),
        }
    }
}
