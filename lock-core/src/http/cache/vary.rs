//! The `Vary` the response cache sends (RFC 9110 §12.5.5): every response to a request the
//! cache keys says which request headers (the rules' [`vary`](super::CacheRulesBuilder::vary)
//! names) select it, so caches further down the line (a CDN, the browser) keep one entry per
//! variant as this one does, and a `304` says what its `200` would have.
//!
//! The rules' names are merged with the response's own `Vary`: its members first, as
//! written, then the names it lacks (compared case-insensitively), in the rules' order, on
//! one line. `Vary: *` (the response varies on more than headers) stays `*`.

use super::headers::{lines, list_members};
use super::HeaderPairs;
use crate::http::PlainResponse;

/// The `Vary` to send on a response with `headers`, given the rules' `names`; `None` when the
/// response's own lines are to be sent as they are (no names, all present, or `*`).
pub(super) fn merged(headers: &(impl HeaderPairs + ?Sized), names: &[String]) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    let own = lines(headers, "vary");
    let members = list_members(&own);
    if members.contains(&b"*".as_slice()) {
        return None;
    }
    let missing: Vec<&str> = names
        .iter()
        .filter(|name| {
            !members
                .iter()
                .any(|m| m.eq_ignore_ascii_case(name.as_bytes()))
        })
        .map(String::as_str)
        .collect();
    if missing.is_empty() {
        return None;
    }
    let own = members.iter().map(|m| String::from_utf8_lossy(m));
    let all: Vec<String> = own
        .map(|m| m.into_owned())
        .chain(missing.iter().map(|&name| name.to_owned()))
        .collect();
    Some(all.join(", "))
}

/// `response` with its `Vary` [`merged`] with `names`: one line where its first `Vary` line
/// was, or last.
pub(super) fn apply(response: &mut PlainResponse, names: &[String]) {
    let Some(value) = merged(&response.headers, names) else {
        return;
    };
    let at = response
        .headers
        .iter()
        .position(|(name, _)| name.eq_ignore_ascii_case("vary"))
        .unwrap_or(response.headers.len());
    response
        .headers
        .retain(|(name, _)| !name.eq_ignore_ascii_case("vary"));
    response
        .headers
        .insert(at, ("vary".to_owned(), value.into_bytes()));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response's header lines.
    type Headers = &'static [(&'static str, &'static str)];

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|&n| n.to_owned()).collect()
    }

    #[test]
    fn the_rules_names_follow_the_responses_own() {
        let keyed = names(&["accept-language", "x-tenant"]);
        let cases: [(Headers, Option<&str>); 7] = [
            (&[], Some("accept-language, x-tenant")),
            (
                &[("Vary", "Accept-Encoding")],
                Some("Accept-Encoding, accept-language, x-tenant"),
            ),
            // Over several lines, empty members dropped, one line out.
            (
                &[("vary", "Accept-Encoding, "), ("VARY", "X-Tenant")],
                Some("Accept-Encoding, X-Tenant, accept-language"),
            ),
            // Already there, in any case: nothing to change.
            (&[("Vary", "X-Tenant, Accept-Language")], None),
            (&[("Vary", "*")], None),
            (&[("Vary", "accept-encoding, *")], None),
            (
                &[("content-type", "text/plain")],
                Some("accept-language, x-tenant"),
            ),
        ];
        for (headers, expected) in cases {
            assert_eq!(
                merged(&headers.to_vec(), &keyed).as_deref(),
                expected,
                "{headers:?}"
            );
        }
        assert_eq!(merged(&[("Vary", "Accept-Encoding")], &[]), None);
    }

    #[test]
    fn applied_in_place_of_the_first_line() {
        let keyed = names(&["accept-language"]);
        let mut response = PlainResponse::new(200, Vec::new(), Vec::new())
            .with_header("vary", "Accept-Encoding")
            .with_header("age", "1")
            .with_header("vary", "X-A");
        apply(&mut response, &keyed);
        let headers: Vec<(&str, &[u8])> = response
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_slice()))
            .collect();
        assert_eq!(
            headers,
            [
                ("vary", b"Accept-Encoding, X-A, accept-language".as_slice()),
                ("age", b"1".as_slice())
            ]
        );
        let mut plain = PlainResponse::new(200, Vec::new(), Vec::new()).with_header("age", "1");
        apply(&mut plain, &keyed);
        assert_eq!(plain.headers.last().unwrap().0, "vary");
        let mut star = PlainResponse::new(200, Vec::new(), Vec::new()).with_header("Vary", "*");
        apply(&mut star, &keyed);
        assert_eq!(star.headers, [("vary".to_owned(), b"*".to_vec())]);
    }
}
