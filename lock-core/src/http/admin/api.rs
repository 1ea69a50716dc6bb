//! The console's JSON API: what the page reads (`/api/session`, `/api/keys`, `/api/key`,
//! `/api/audit`) and the one thing it changes (`POST /api/release`).

use super::super::{
    decode_query_component, problem_body, PlainResponse, RequestHead, PROBLEM_JSON,
};
use super::access::same;
use super::console::{AdminConsole, AdminRequest};
use crate::backend::{ListCursor, Primitive};
use crate::json_text::json_string;
use crate::operator::{json, LockAdmin};
use crate::{LockError, OwnerToken};

/// A JSON answer.
fn ok(body: String) -> PlainResponse {
    PlainResponse::new(200, Vec::new(), body.into_bytes())
        .with_header("content-type", "application/json")
        .with_header("cache-control", "no-store")
}

/// A problem answer (RFC 9457) of `status`.
pub(super) fn problem(status: u16, kind: &str, detail: &str) -> PlainResponse {
    let body = problem_body(&format!("urn:lock-admin:{kind}"), kind, status, detail, &[]);
    PlainResponse::new(status, Vec::new(), body)
        .with_header("content-type", PROBLEM_JSON)
        .with_header("cache-control", "no-store")
}

/// The answer for a failed call: bad input 400, a refused release 409, an unsupported one
/// 501, a store that is down 503, the rest 500.
fn failed(error: &LockError) -> PlainResponse {
    let (status, kind) = match error {
        LockError::ForceReleaseRefused { .. } => (409, "refused"),
        LockError::Unsupported { .. } => (501, "unsupported"),
        e if e.is_invalid_input()
            || matches!(
                e,
                LockError::InvalidKey { .. } | LockError::InvalidDuration { .. }
            ) =>
        {
            (400, "invalid")
        }
        e if e.is_unavailable() || e.is_timeout() => (503, "unavailable"),
        _ => (500, "failed"),
    };
    problem(status, kind, &error.to_string())
}

/// The value of `name` in a query string or form body (`a=1&b=2`), percent-decoded; `None`
/// when absent or badly encoded.
pub(super) fn query_field(query: Option<&str>, name: &str) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (n, v) = pair.split_once('=').unwrap_or((pair, ""));
        (n == name)
            .then(|| decode_query_component(v).ok())
            .flatten()
    })
}

/// A field of a form body (`application/x-www-form-urlencoded`).
pub(super) fn form_field(body: &[u8], name: &str) -> Option<String> {
    query_field(std::str::from_utf8(body).ok(), name)
}

/// Whether a state-changing request comes from the console's own origin. A browser that sends
/// `Sec-Fetch-Site` says so itself (`same-origin`, or `none`: typed by the user); without it,
/// `Origin`, when sent, must name the `Host` the request went to (`null`, an opaque origin,
/// never does). A client that sends neither (a script with the bearer token) is not a page
/// another site could have made send it.
pub(super) fn same_origin(head: &dyn RequestHead) -> bool {
    if let Some(site) = head.header("sec-fetch-site") {
        return site == b"same-origin" || site == b"none";
    }
    match (head.header("origin"), head.header("host")) {
        (Some(origin), Some(host)) => {
            let origin = std::str::from_utf8(origin).unwrap_or("");
            let origin_host = origin.split_once("://").map_or("", |(_, h)| h);
            origin_host.as_bytes() == host
        }
        (Some(_), None) => false,
        _ => true,
    }
}

/// The view a request names (`view=`, the lock namespace the session lists; the client's
/// keys without it), as an admin with the console's audit retention; 404 for no such view.
fn admin(console: &AdminConsole, view: Option<String>) -> Result<LockAdmin, PlainResponse> {
    let views = &console.inner.views;
    let found = match view {
        None => views.first(),
        Some(id) => views.iter().find(|v| v.id == id),
    };
    let Some(found) = found else {
        return Err(problem(404, "not-found", "no such view"));
    };
    Ok(match console.inner.retention {
        // Within the bounds: the builder took it there.
        Some(retention) => found
            .admin
            .clone()
            .audit_retention(retention)
            .unwrap_or_else(|_| found.admin.clone()),
        None => found.admin.clone(),
    })
}

/// Whether `name`, as `admin` names it, is a key of another of the console's views: a client
/// without a namespace names every key, so its listing and audit meet the cache's and the
/// idempotency store's, which are shown in their own views.
fn of_another_view(console: &AdminConsole, admin: &LockAdmin, name: &str) -> bool {
    admin.namespace().is_empty()
        && console.inner.views.iter().any(|v| {
            !v.id.is_empty()
                && name
                    .strip_prefix(v.id.as_str())
                    .is_some_and(|rest| rest.starts_with(':'))
        })
}

/// `GET /api/session`: who the page speaks for, whether it may release, its CSRF token, its
/// refresh period and its views (`[{"id", "title"}]`, the client's keys first).
pub(super) fn session(console: &AdminConsole, operator: &str) -> PlainResponse {
    let views: Vec<String> = console
        .inner
        .views
        .iter()
        .map(|v| {
            format!(
                "{{\"id\":{},\"title\":{}}}",
                json_string(&v.id),
                json_string(&v.title)
            )
        })
        .collect();
    ok(format!(
        "{{\"operator\":{},\"namespace\":{},\"backend\":{},\"force_release\":{},\"csrf\":{},\"refresh_ms\":{},\"views\":[{}]}}",
        json_string(operator),
        json_string(console.inner.client.namespace()),
        json_string(console.inner.client.capabilities().backend),
        console.inner.force_release,
        json_string(&console.csrf_token(operator)),
        console.inner.refresh.as_millis(),
        views.join(","),
    ))
}

/// `GET /api/keys?view=&prefix=&cursor=&limit=`: one page of the keys held or waited on.
pub(super) async fn keys(console: &AdminConsole, query: Option<&str>) -> PlainResponse {
    let prefix = query_field(query, "prefix").unwrap_or_default();
    let cursor = query_field(query, "cursor").map(ListCursor::new);
    let limit = match query_field(query, "limit").map(|l| l.parse::<usize>()) {
        None => 100,
        Some(Ok(limit)) => limit,
        Some(Err(_)) => return problem(400, "invalid", "limit is not a number"),
    };
    let admin = match admin(console, query_field(query, "view")) {
        Ok(admin) => admin,
        Err(answer) => return answer,
    };
    match admin.list(&prefix, cursor.as_ref(), limit).await {
        Ok(mut page) => {
            page.keys
                .retain(|k| !of_another_view(console, &admin, &k.key));
            ok(json::page(&page))
        }
        Err(error) => failed(&error),
    }
}

fn primitive_of(query: Option<&str>) -> Result<Primitive, PlainResponse> {
    match query_field(query, "primitive") {
        None => Ok(Primitive::Lock),
        Some(name) => name.parse().map_err(|e: LockError| failed(&e)),
    }
}

/// `GET /api/key?view=&key=&primitive=`: one key.
pub(super) async fn key(console: &AdminConsole, query: Option<&str>) -> PlainResponse {
    let Some(key) = query_field(query, "key") else {
        return problem(400, "invalid", "key is missing");
    };
    let primitive = match primitive_of(query) {
        Ok(primitive) => primitive,
        Err(answer) => return answer,
    };
    let admin = match admin(console, query_field(query, "view")) {
        Ok(admin) => admin,
        Err(answer) => return answer,
    };
    match admin.inspect_primitive(primitive, &key).await {
        Ok(seen) => ok(json::inspection(&seen)),
        Err(error) => failed(&error),
    }
}

/// `GET /api/audit?view=&key=&limit=`: the audit records kept, newest first.
pub(super) async fn audit(console: &AdminConsole, query: Option<&str>) -> PlainResponse {
    let key = query_field(query, "key").filter(|k| !k.is_empty());
    let limit = match query_field(query, "limit").map(|l| l.parse::<usize>()) {
        None => 50,
        Some(Ok(limit)) => limit,
        Some(Err(_)) => return problem(400, "invalid", "limit is not a number"),
    };
    let admin = match admin(console, query_field(query, "view")) {
        Ok(admin) => admin,
        Err(answer) => return answer,
    };
    match admin.audit(key.as_deref(), limit).await {
        Ok(mut records) => {
            records.retain(|r| !of_another_view(console, &admin, &r.key));
            ok(json::records(&records))
        }
        Err(error) => failed(&error),
    }
}

/// `POST /api/release` (form: `view`, `key`, `primitive`, `owner`, `reason`; header
/// `x-csrf-token`):
/// a forced release, when the console allows it.
pub(super) async fn release(
    console: &AdminConsole,
    request: &AdminRequest<'_>,
    operator: &str,
) -> PlainResponse {
    if !console.inner.force_release {
        return problem(403, "read-only", "this console does not release locks");
    }
    let token = request.head.header("x-csrf-token").unwrap_or_default();
    if !same(token, console.csrf_token(operator).as_bytes()) || !same_origin(request.head) {
        return problem(
            403,
            "csrf",
            "the request did not come from this console's page",
        );
    }
    let field = |name| form_field(request.body, name);
    let Some(key) = field("key") else {
        return problem(400, "invalid", "key is missing");
    };
    let reason = field("reason").unwrap_or_default();
    let primitive = match field("primitive") {
        None => Primitive::Lock,
        Some(name) => match name.parse() {
            Ok(primitive) => primitive,
            Err(error) => return failed(&error),
        },
    };
    let owner = match field("owner").filter(|o| !o.is_empty()) {
        None => None,
        Some(hex) => match OwnerToken::from_hex(&hex) {
            Some(owner) => Some(owner),
            None => return problem(400, "invalid", "owner is not 32 hex digits"),
        },
    };
    let admin = match admin(console, field("view")) {
        Ok(admin) => admin,
        Err(answer) => return answer,
    };
    match admin
        .force_release_holder(primitive, &key, owner, &reason, operator)
        .await
    {
        Ok(record) => ok(json::record(&record)),
        Err(error) => failed(&error),
    }
}
