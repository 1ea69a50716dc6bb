//! Response decisions, table-driven, and a garbage run over the whole flow.

use super::*;
use crate::http::cache::RequestParts;
use crate::test_input::garbage;
use crate::MAX_KEY_LEN;

fn summary(decision: &ResponseDecision) -> String {
    match decision {
        ResponseDecision::Store(s) => format!(
            "fresh={} swr={} sie={} age={}",
            s.freshness.fresh.as_secs(),
            s.freshness.stale_while_revalidate.as_secs(),
            s.freshness.stale_if_error.as_secs(),
            s.initial_age.as_secs()
        ),
        ResponseDecision::DontStore(reason) => format!("{reason:?}"),
    }
}

/// `"name: value | name: value"` as header pairs; `cc` is short for `cache-control`.
fn pairs(headers: &str) -> Vec<(&str, &str)> {
    headers
        .split(" | ")
        .filter(|h| !h.is_empty())
        .map(|h| h.split_once(": ").expect("name: value"))
        .map(|(n, v)| (if n == "cc" { "cache-control" } else { n }, v))
        .collect()
}

/// The rows of `text`, one a line: `setup status headers => decision`.
fn table(text: &str) -> Vec<(&str, u16, &str, &str)> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(|line| {
            let (given, expected) = line
                .split_once(" => ")
                .expect("setup status headers => decision");
            let (who, rest) = given.split_once(' ').expect("a setup and a status");
            let rest = rest.trim_start();
            let (status, headers) = rest.split_once(' ').unwrap_or((rest, ""));
            (
                who,
                status.parse().expect("a status"),
                headers.trim(),
                expected,
            )
        })
        .collect()
}

#[test]
fn decisions_table() {
    let plain = CacheRules::default();
    let defaults = CacheRules::builder()
        .default_freshness(
            Freshness::fresh_for(Duration::from_secs(30))
                .stale_while_revalidate(Duration::from_secs(60))
                .stale_if_error(Duration::from_secs(300)),
        )
        .vary("accept")
        .max_body(100)
        .build()
        .unwrap();
    let no_cookies = CacheRules::builder()
        .set_cookie(SetCookie::DontStore)
        .build()
        .unwrap();
    let get = RequestParts::get("/");
    let setups = [
        ("plain", &plain, get.clone()),
        ("bypass", &plain, RequestParts::new("DELETE", "/")),
        (
            "auth",
            &plain,
            get.clone().with_header("Authorization", "Basic x"),
        ),
        ("dflt", &defaults, get.clone()),
        (
            "cookie",
            &defaults,
            get.clone().with_header("Cookie", "a=1"),
        ),
        ("nocookie", &no_cookies, get),
    ];
    // A row a line: the setup, the status, the response's headers (as in `pairs`, maybe none)
    // and, after `=>`, the decision (as in `summary`).
    let rows = table(
        r#"
        plain    200 => NoFreshness
        plain    200 cc: max-age=60 => fresh=60 swr=0 sie=0 age=0
        bypass   200 cc: max-age=60 => Bypassed
        plain    500 cc: max-age=60 => Status(500)
        plain    302 cc: public, max-age=60 => Status(302)
        plain    200 cc: max-age=60, no-store => NoStore
        plain    200 Cache-Control: private | cc: max-age=9 => Private
        plain    200 cc: private="x", public, max-age=9 => Private
        plain    200 cc: no-cache, max-age=9 => NoCache
        plain    200 cc: max-age=0 => AlreadyStale
        plain    200 cc: max-age=60 | age: 60 => AlreadyStale
        plain    200 cc: max-age=60 | Age: 10 => fresh=50 swr=0 sie=0 age=10
        plain    200 cc: max-age=60 | age: ten => fresh=60 swr=0 sie=0 age=0
        plain    200 cc: max-age=60 | age: 5, 7 => fresh=55 swr=0 sie=0 age=5
        plain    200 cc: max-age=soon => InvalidFreshness
        plain    200 cc: max-age=5 | cc: max-age=6 => InvalidFreshness
        plain    200 cc: s-maxage=10, max-age=60 => fresh=10 swr=0 sie=0 age=0
        plain    200 cc: s-maxage=x, max-age=60 => InvalidFreshness
        plain    200 cc: max-age=99999999999 => fresh=31536000 swr=0 sie=0 age=0
        plain    200 expires: Thu, 01 Jan 2099 00:00:00 GMT => Expires
        plain    200 expires: 0 | cc: max-age=5 => fresh=5 swr=0 sie=0 age=0
        plain    200 cc: max-age=5 | vary: * => VaryStar
        plain    200 cc: max-age=5 | Vary: Accept => VaryNotKeyed("accept")
        dflt     200 Vary: ACCEPT, ,accept => fresh=30 swr=60 sie=300 age=0
        dflt     200 Vary: accept, x => VaryNotKeyed("x")
        dflt     200 content-length: 101 => TooLarge { limit: 100 }
        dflt     200 content-length: 100, 100 => fresh=30 swr=60 sie=300 age=0
        dflt     200 content-length: 5 | content-length: 6 => BadContentLength
        dflt     200 content-length: -1 => BadContentLength
        dflt     200 content-length: 99999999999999999999999 => BadContentLength
        plain    200 cc: max-age=60, stale-while-revalidate=30, stale-if-error=9 => fresh=60 swr=30 sie=9 age=0
        plain    200 cc: max-age=60, stale-while-revalidate=30, must-revalidate => fresh=60 swr=0 sie=0 age=0
        plain    200 cc: max-age=60, stale-if-error=30, proxy-revalidate => fresh=60 swr=0 sie=0 age=0
        plain    200 cc: max-age=60, stale-if-error=-3 => fresh=60 swr=0 sie=0 age=0
        dflt     200 cache-control: max-age=10 => fresh=10 swr=60 sie=300 age=0
        dflt     200 cc: max-age=10, stale-while-revalidate=x => fresh=10 swr=0 sie=300 age=0
        dflt     200 cc: s-maxage=10 => fresh=10 swr=0 sie=0 age=0
        dflt     200 cc: s-maxage=10, stale-while-revalidate=5 => fresh=10 swr=5 sie=0 age=0
        dflt     404 => fresh=30 swr=60 sie=300 age=0
        dflt     200 age: 40 => AlreadyStale
        dflt     200 expires: -1 => Expires
        cookie   200 => Personal
        dflt     200 set-cookie: a=1 => Personal
        cookie   200 cache-control: max-age=10 => fresh=10 swr=60 sie=300 age=0
        nocookie 200 cc: max-age=10 | Set-Cookie: a=1 => SetCookie
        auth     200 cc: max-age=60 => Authorization
        auth     200 cc: public, max-age=60 => fresh=60 swr=0 sie=0 age=0
        auth     200 cc: s-maxage=60 => fresh=60 swr=0 sie=0 age=0
        auth     200 cc: must-revalidate, max-age=60, stale-if-error=5 => fresh=60 swr=0 sie=0 age=0
        auth     200 cc: public=1, max-age=60 => Authorization
        "#,
    );
    assert!(rows.len() >= 30);
    for (who, status, headers, expected) in &rows {
        let (_, rules, request) = setups.iter().find(|(name, ..)| name == who).unwrap();
        let decision = rules.decide_request(request);
        let response = rules.decide_response(*status, &pairs(headers), &decision);
        assert_eq!(summary(&response), *expected, "{who} {status} {headers}");
    }
}

#[test]
fn stored_headers_leave_out_what_is_never_replayed() {
    let headers = [
        ("Content-Type", "text/plain"),
        ("Connection", "close, X-Hop"),
        ("x-hop", "1"),
        ("Keep-Alive", "timeout=5"),
        ("Transfer-Encoding", "chunked"),
        ("Proxy-Authenticate", "Basic"),
        ("Set-Cookie", "a=1"),
        ("Age", "3"),
        ("Cache-Status", "up; hit"),
        ("ETag", "\"v1\""),
        ("cache-control", "max-age=10"),
        ("Link", "</a>"),
        ("link", "</b>"),
    ];
    let stored = |rules: &CacheRules| match rules.decide_response(
        200,
        &headers,
        &rules.decide_request(&RequestParts::get("/")),
    ) {
        ResponseDecision::Store(store) => store
            .headers
            .iter()
            .map(|(n, v)| format!("{n}: {}", String::from_utf8_lossy(v)))
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    let expected = [
        "content-type: text/plain",
        "etag: \"v1\"",
        "cache-control: max-age=10",
        "link: </a>",
        "link: </b>",
    ];
    assert_eq!(stored(&CacheRules::default()), expected);
    let replay = CacheRules::builder()
        .set_cookie(SetCookie::Replay)
        .build()
        .unwrap();
    assert!(stored(&replay).contains(&"set-cookie: a=1".to_owned()));
}

#[test]
fn negative_ttl_and_beta_come_from_the_defaults() {
    let rules = CacheRules::builder()
        .default_freshness(
            Freshness::fresh_for(Duration::from_secs(1))
                .negative_ttl(Duration::from_secs(4))
                .early_refresh(1.0),
        )
        .build()
        .unwrap();
    let request = rules.decide_request(&RequestParts::get("/"));
    let ResponseDecision::Store(store) =
        rules.decide_response(200, &[("cache-control", "max-age=9")], &request)
    else {
        panic!("stored");
    };
    assert_eq!(store.freshness.negative, Duration::from_secs(4));
    assert!((store.freshness.early_refresh_beta - 1.0).abs() < f64::EPSILON);
}

#[test]
fn never_panics_on_garbage() {
    let rules = CacheRules::builder()
        .default_freshness(Freshness::fresh_for(Duration::from_secs(5)))
        .vary("accept")
        .vary("x-a")
        .build()
        .unwrap();
    let names = [
        "cache-control",
        "pragma",
        "vary",
        "age",
        "content-length",
        "accept",
        "x-a",
        "expires",
        "connection",
        "set-cookie",
        "authorization",
        "range",
    ];
    let values = garbage(600);
    for (i, chunk) in values.chunks(3).enumerate() {
        let pick = |k: usize| names[(i * 7 + k * 5) % names.len()];
        let path = String::from_utf8_lossy(&chunk[0]).into_owned();
        let mut request = RequestParts::get(path).with_query(String::from_utf8_lossy(&chunk[1]));
        let mut response = Vec::new();
        for (k, value) in chunk.iter().enumerate() {
            request = request.with_header(pick(k), value);
            response.push((pick(k + 1), value.clone()));
        }
        let decision = rules.decide_request(&request);
        if let Some(key) = decision.key() {
            assert!(key.as_str().len() <= MAX_KEY_LEN && !key.as_str().contains('\0'));
        }
        for status in [200, 404, 500] {
            if let ResponseDecision::Store(store) =
                rules.decide_response(status, &response, &decision)
            {
                assert!(store.freshness.validate().is_ok());
            }
        }
    }
}
