//! The admin console, framework-free (the adapters only translate): who gets in, what it
//! changes, and that client-made keys and labels come out escaped.

use std::time::Duration;

use lock_core::http::admin::{AdminConsole, AdminRequest, TokenAuth};
use lock_core::http::{PlainResponse, RequestHead};
use lock_core::{HolderLabel, LockClient, LostReason, MemoryBackend};

use crate::conformance::eventually;
use crate::conformance::operator::computing;

const TOKEN: &str = "a-token-for-the-tests";

/// A request as a browser or a script sends it.
#[derive(Clone, Default)]
struct Req {
    method: &'static str,
    path: String,
    query: Option<String>,
    headers: Vec<(&'static str, String)>,
}

impl RequestHead for Req {
    fn method(&self) -> &str {
        self.method
    }
    fn path(&self) -> &str {
        &self.path
    }
    fn query(&self) -> Option<&str> {
        self.query.as_deref()
    }
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_bytes())
    }
}

fn get(sub: &str, query: Option<&str>) -> Req {
    Req {
        method: "GET",
        path: format!("/admin{sub}"),
        query: query.map(str::to_owned),
        headers: vec![("authorization", format!("Bearer {TOKEN}"))],
    }
}

async fn send(console: &AdminConsole, req: &Req, body: &str) -> (u16, String, PlainResponse) {
    let sub = req.path.strip_prefix("/admin").unwrap().to_owned();
    let answer = console
        .handle(AdminRequest::new(req, "/admin", &sub, body.as_bytes()))
        .await;
    (
        answer.status,
        String::from_utf8_lossy(&answer.body).into_owned(),
        answer,
    )
}

fn console(locks: &LockClient, release: bool) -> AdminConsole {
    let builder = AdminConsole::builder(locks.clone(), TokenAuth::new(TOKEN).unwrap());
    if release {
        builder.allow_force_release().build()
    } else {
        builder.build()
    }
}

/// A form body's value, percent-encoded.
fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn csrf(console: &AdminConsole) -> String {
    let (_, body, _) = send(console, &get("/api/session", None), "").await;
    let start = body.find("\"csrf\":\"").unwrap() + 8;
    body[start..start + 64].to_owned()
}

fn release_req(csrf: Option<&str>, origin: Option<&str>) -> Req {
    let mut req = get("/api/release", None);
    req.method = "POST";
    req.headers
        .push(("content-type", "application/x-www-form-urlencoded".into()));
    req.headers.push(("host", "shop.example".into()));
    if let Some(csrf) = csrf {
        req.headers.push(("x-csrf-token", csrf.into()));
    }
    if let Some(origin) = origin {
        req.headers.push(("origin", origin.into()));
    }
    req
}

#[tokio::test]
async fn without_credentials_nothing_is_shown_or_changed() {
    let locks = LockClient::new(MemoryBackend::new());
    let held = locks.lock("order:42").await.unwrap();
    let console = console(&locks, true);
    for (method, sub) in [
        ("GET", "/api/keys"),
        ("GET", "/api/session"),
        ("POST", "/api/release"),
    ] {
        let mut req = get(sub, None);
        req.method = method;
        req.headers.clear();
        let (status, body, _) = send(&console, &req, "key=order%3A42&reason=x").await;
        assert_eq!(status, 401, "{method} {sub}: {body}");
        assert!(!body.contains("order:42"));
        req.headers
            .push(("authorization", "Bearer not-the-token-at-all".into()));
        assert_eq!(send(&console, &req, "key=order%3A42&reason=x").await.0, 401);
    }
    // The page asks for the token instead.
    let mut page = get("/", None);
    page.headers.clear();
    let (status, body, _) = send(&console, &page, "").await;
    assert_eq!(status, 401);
    assert!(body.contains("name=\"token\""));
    assert!(!held.is_lost());
    let forbidden = AdminConsole::builder(locks.clone(), |_: &dyn RequestHead| {
        lock_core::http::admin::Access::Forbidden
    })
    .allow_force_release()
    .build();
    assert_eq!(send(&forbidden, &get("/api/keys", None), "").await.0, 403);
    assert!(!held.is_lost());
}

#[tokio::test]
async fn hostile_keys_and_labels_come_out_escaped() {
    let label = HolderLabel::empty()
        .with("note", "\"quoted\" <img src=x onerror=alert(1)>")
        .unwrap();
    let locks = LockClient::builder(MemoryBackend::new())
        .label(label)
        .build()
        .unwrap();
    let long = format!("<script>alert('k')</script>{}", "x".repeat(470));
    let keys = [
        "<b>bold</b>".to_owned(),
        "quote\"and'apostrophe".to_owned(),
        "ctl\u{1}\u{1b}[31m\nline".to_owned(),
        long.clone(),
    ];
    let mut guards = Vec::new();
    for key in &keys {
        guards.push(locks.lock(key).await.unwrap());
    }
    let console = console(&locks, false);
    let (status, body, answer) = send(&console, &get("/api/keys", Some("limit=10")), "").await;
    assert_eq!(status, 200);
    assert_eq!(
        answer.header("content-type"),
        Some(&b"application/json"[..])
    );
    for raw in ["<", ">", "\u{1}", "\u{1b}", "\n"] {
        assert!(!body.contains(raw), "{raw:?} unescaped in {body}");
    }
    assert!(body.contains(r#"quote\"and'apostrophe"#));
    assert!(body.contains(r#"\"quoted\" \u003cimg src=x onerror=alert(1)\u003e"#));
    assert!(body.contains(r"ctl\u0001\u001b[31m\nline"));
    assert_eq!(body.matches("\"status\":\"held\"").count(), 4, "{body}");
    // The page itself carries no data: its script builds the tables with textContent, under
    // a policy that runs no other script.
    let (_, page, answer) = send(&console, &get("/", None), "").await;
    assert!(!page.contains("script>alert"));
    let policy = String::from_utf8_lossy(answer.header("content-security-policy").unwrap());
    assert!(policy.contains("script-src 'self'") && policy.contains("default-src 'none'"));
    let (_, script, _) = send(&console, &get("/admin.js", None), "").await;
    assert!(!script.contains("innerHTML"));
    // One key, by name: the 500-byte one.
    let query = format!("key={}", enc(&long));
    let (status, one, _) = send(&console, &get("/api/key", Some(&query)), "").await;
    assert_eq!(status, 200, "{one}");
    assert!(one.contains(r"\u003cscript\u003ealert('k')\u003c/script\u003e"));
}

#[tokio::test]
async fn a_read_only_console_releases_nothing() {
    let locks = LockClient::new(MemoryBackend::new());
    let held = locks.lock("order:42").await.unwrap();
    let console = console(&locks, false);
    let token = csrf(&console).await;
    let req = release_req(Some(&token), Some("https://shop.example"));
    let (status, body, _) = send(&console, &req, "key=order%3A42&reason=stuck").await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("read-only"));
    assert!(!held.is_lost());
    assert!(locks.admin().audit(None, 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_release_needs_the_csrf_token_and_the_same_origin() {
    let locks = LockClient::new(MemoryBackend::new());
    let held = locks.lock("order:42").await.unwrap();
    let console = console(&locks, true);
    let token = csrf(&console).await;
    let form = "key=order%3A42&reason=stuck%20since%20the%20deploy";
    for req in [
        release_req(None, None),
        release_req(Some("0000"), None),
        release_req(Some(&token), Some("https://evil.example")),
    ] {
        let (status, body, _) = send(&console, &req, form).await;
        assert_eq!(status, 403, "{body}");
        assert!(!held.is_lost());
    }
    let mut cross_site = release_req(Some(&token), None);
    cross_site
        .headers
        .push(("sec-fetch-site", "cross-site".into()));
    assert_eq!(send(&console, &cross_site, form).await.0, 403);
    // Bad input is a 400, a free key a 409; neither changes anything.
    let req = release_req(Some(&token), Some("https://shop.example"));
    assert_eq!(send(&console, &req, "key=order%3A42&reason=").await.0, 400);
    assert_eq!(
        send(&console, &req, "key=order%3A42&reason=x&owner=zz")
            .await
            .0,
        400
    );
    assert_eq!(send(&console, &req, "key=free-one&reason=x").await.0, 409);
    assert!(!held.is_lost());
    let (status, body, _) = send(&console, &req, form).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""operator":"admin","reason":"stuck since the deploy""#));
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(2), held.lost())
            .await
            .unwrap(),
        LostReason::Revoked {
            operator: "admin".into(),
            reason: "stuck since the deploy".into()
        }
    );
    let (_, audit, _) = send(&console, &get("/api/audit", None), "").await;
    assert!(audit.contains("stuck since the deploy"));
}

#[tokio::test]
async fn a_login_sets_a_cookie_that_opens_the_console() {
    let locks = LockClient::new(MemoryBackend::new());
    let console = console(&locks, false);
    let mut login = get("/login", None);
    login.method = "POST";
    login.headers.clear();
    let (status, body, _) = send(&console, &login, "token=wrong").await;
    assert_eq!(status, 401);
    assert!(body.contains("not right"));
    // A browser's form POST under the page's policy: `Sec-Fetch-Site` says same-origin even
    // where `Origin` is opaque; another site's is refused.
    let mut cross = login.clone();
    cross.headers.push(("sec-fetch-site", "cross-site".into()));
    assert_eq!(
        send(&console, &cross, &format!("token={TOKEN}")).await.0,
        403
    );
    let mut opaque = login.clone();
    opaque.headers.push(("origin", "null".into()));
    opaque.headers.push(("host", "shop.example".into()));
    assert_eq!(
        send(&console, &opaque, &format!("token={TOKEN}")).await.0,
        403
    );
    login.headers.push(("origin", "null".into()));
    login.headers.push(("sec-fetch-site", "same-origin".into()));
    let (status, _, answer) = send(&console, &login, &format!("token={TOKEN}")).await;
    assert_eq!(status, 303);
    let cookie = String::from_utf8_lossy(answer.header("set-cookie").unwrap()).into_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    assert!(!cookie.contains(TOKEN), "the cookie holds the token itself");
    let value = cookie.split(';').next().unwrap().to_owned();
    let mut session = get("/api/session", None);
    session.headers = vec![("cookie", value)];
    let (status, body, _) = send(&console, &session, "").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"force_release\":false"));
    // Unknown routes and methods are typed answers, not 500s.
    assert_eq!(send(&console, &get("/nope", None), "").await.0, 404);
    let mut wrong = get("/api/keys", None);
    wrong.method = "DELETE";
    assert_eq!(send(&console, &wrong, "").await.0, 405);
    assert_eq!(
        send(&console, &get("/api/keys", Some("limit=x")), "")
            .await
            .0,
        400
    );
    assert_eq!(send(&console, &get("/api/key", None), "").await.0, 400);
}

/// Beside the client's locks, the console shows a cache's computations in flight and an
/// idempotency store's requests in flight, each with the label of the instance running it, and
/// a latch's count; a stuck request's claim is released from its view like a lock.
#[tokio::test]
async fn computations_requests_and_latches_in_flight_are_shown() {
    use lock_core::cache::Cache;
    use lock_core::idempotency::{Begin, Fingerprint, Idempotency, InFlight};
    use lock_core::memory::MemoryResultStore;

    let backend = MemoryBackend::new();
    let worker = HolderLabel::from_process().with("who", "worker-7").unwrap();
    let locks = LockClient::builder(backend.clone())
        .namespace("shop")
        .build()
        .unwrap();
    let products = Cache::builder(MemoryResultStore::new(), backend.clone())
        .namespace("products")
        .label(worker.clone())
        .build()
        .unwrap();
    let payments = Idempotency::builder(MemoryResultStore::new(), backend.clone())
        .namespace("payments")
        .label(worker)
        .build()
        .unwrap();
    let console = AdminConsole::builder(locks.clone(), TokenAuth::new(TOKEN).unwrap())
        .cache(&products)
        .idempotency(&payments)
        .allow_force_release()
        .build();

    let (_, session, _) = send(&console, &get("/api/session", None), "").await;
    assert!(
        session.contains(r#""views":[{"id":"shop","title":"Locks held and waited on"},{"id":"cache.products","title":"Cache computations in flight: products"},{"id":"idem.payments","title":"Idempotent requests in flight: payments"}]"#),
        "{session}"
    );

    // A computation that runs until told to finish.
    let (finish, computation) = computing(&products, "product:1");
    let fingerprint = Fingerprint::builder("POST", "/payments")
        .body(b"100")
        .finish();
    let Begin::Run(claim) = payments
        .begin("alice", "k1", fingerprint, InFlight::Conflict)
        .await
        .unwrap()
    else {
        panic!("the first request runs");
    };
    let latch = locks.latch("warm-up");
    assert!(latch.try_set_count(3).await.unwrap());

    let in_flight = get("/api/keys", Some("view=cache.products"));
    eventually("the computation is listed", || async {
        let (status, body, _) = send(&console, &in_flight, "").await;
        assert_eq!(status, 200, "{body}");
        body.contains(r#""key":"product:1""#)
    })
    .await;
    let (_, computations, _) = send(&console, &in_flight, "").await;
    assert!(
        computations.contains(r#""key":"product:1","status":"held""#),
        "{computations}"
    );
    assert!(
        computations.contains(r#""who":"worker-7""#),
        "{computations}"
    );

    let (_, requests, _) = send(&console, &get("/api/keys", Some("view=idem.payments")), "").await;
    assert!(
        requests.contains(r#""key":"5:alice:k1","status":"held""#),
        "{requests}"
    );
    assert!(requests.contains(r#""who":"worker-7""#), "{requests}");

    let (_, keys, _) = send(&console, &get("/api/keys", None), "").await;
    assert!(
        keys.contains(r#""primitive":"latch","key":"warm-up","status":"counting""#),
        "{keys}"
    );
    assert!(keys.contains(r#""latch":{"count":3,"#), "{keys}");
    assert!(
        !keys.contains("product:1") && !keys.contains("alice"),
        "views are apart: {keys}"
    );
    let (status, _, _) = send(&console, &get("/api/keys", Some("view=nope")), "").await;
    assert_eq!(status, 404);

    // The stuck request's claim, released from its view.
    let token = csrf(&console).await;
    let req = release_req(Some(&token), Some("https://shop.example"));
    let form = format!("view=idem.payments&key={}&reason=stuck", enc("5:alice:k1"));
    let (status, body, _) = send(&console, &req, &form).await;
    assert_eq!(status, 200, "{body}");
    assert!(matches!(
        tokio::time::timeout(Duration::from_secs(2), claim.lost())
            .await
            .unwrap(),
        LostReason::Revoked { .. }
    ));
    let (_, audit, _) = send(&console, &get("/api/audit", Some("view=idem.payments")), "").await;
    assert!(audit.contains(r#""key":"5:alice:k1""#), "{audit}");
    let (_, audit, _) = send(&console, &get("/api/audit", None), "").await;
    assert_eq!(audit, "[]", "the locks' own trail is apart");

    finish.send(()).unwrap();
    computation.await.unwrap();
    // The lease is given back once the value is stored (in the background).
    eventually("the computation is no longer listed", || async {
        !send(&console, &in_flight, "").await.1.contains("product:1")
    })
    .await;
}

/// A console on a client without a namespace (which names every key) leaves the cache's keys
/// to the cache's view, in its listing and its audit trail alike.
#[tokio::test]
async fn a_client_without_namespace_leaves_the_other_views_keys_to_them() {
    use lock_core::cache::Cache;
    use lock_core::memory::MemoryResultStore;

    let backend = MemoryBackend::new();
    let locks = LockClient::new(backend.clone());
    let products = Cache::builder(MemoryResultStore::new(), backend.clone())
        .namespace("products")
        .build()
        .unwrap();
    let console = AdminConsole::builder(locks.clone(), TokenAuth::new(TOKEN).unwrap())
        .cache(&products)
        .build();
    // A lease in the cache's namespace, as a computation holds it, and one of the client's.
    let cache_admin = products.admin();
    let in_cache = LockClient::builder(backend.clone())
        .namespace(cache_admin.namespace())
        .build()
        .unwrap();
    let computation = in_cache.lock("product:1").await.unwrap();
    let _order = locks.lock("order:1").await.unwrap();
    cache_admin
        .force_release("product:1", "stuck", "ops")
        .await
        .unwrap();
    drop(computation);
    let _again = in_cache.lock("product:1").await.unwrap();

    let (_, keys, _) = send(&console, &get("/api/keys", None), "").await;
    assert!(keys.contains(r#""key":"order:1""#), "{keys}");
    assert!(!keys.contains("product:1"), "{keys}");
    let (_, cached, _) = send(&console, &get("/api/keys", Some("view=cache.products")), "").await;
    assert!(cached.contains(r#""key":"product:1""#), "{cached}");
    let (_, audit, _) = send(&console, &get("/api/audit", None), "").await;
    assert_eq!(audit, "[]");
    let (_, audit, _) = send(
        &console,
        &get("/api/audit", Some("view=cache.products")),
        "",
    )
    .await;
    assert!(audit.contains(r#""key":"product:1""#), "{audit}");
}
