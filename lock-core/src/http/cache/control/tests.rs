//! Cache-Control parsing, table-driven, and a garbage run.

use super::*;
use crate::test_input::garbage;

/// The set directives in a fixed order: flags by name, deltas as `name=N` or `name=?`.
fn summary(cc: CacheControl) -> String {
    let mut out = Vec::new();
    for (name, set) in [
        ("no-store", cc.no_store),
        ("no-cache", cc.no_cache),
        ("private", cc.private),
        ("public", cc.public),
        ("must-revalidate", cc.must_revalidate),
        ("proxy-revalidate", cc.proxy_revalidate),
        ("only-if-cached", cc.only_if_cached),
    ] {
        if set {
            out.push(name.to_owned());
        }
    }
    for (name, delta) in [
        ("max-age", cc.max_age),
        ("s-maxage", cc.s_maxage),
        ("swr", cc.stale_while_revalidate),
        ("sie", cc.stale_if_error),
    ] {
        match delta {
            DeltaSeconds::Absent => {}
            DeltaSeconds::Seconds(s) => out.push(format!("{name}={s}")),
            DeltaSeconds::Invalid => out.push(format!("{name}=?")),
        }
    }
    out.join(" ")
}

#[test]
fn directives_table() {
    let rows: &[(&[&str], &str)] = &[
        (&[], ""),
        (&[""], ""),
        (&["no-store"], "no-store"),
        (&["no-cache"], "no-cache"),
        (&["private"], "private"),
        (&["public"], "public"),
        (&["must-revalidate"], "must-revalidate"),
        (&["proxy-revalidate"], "proxy-revalidate"),
        (&["only-if-cached"], "only-if-cached"),
        (&["max-age=60"], "max-age=60"),
        (&["s-maxage=10"], "s-maxage=10"),
        (&["stale-while-revalidate=30"], "swr=30"),
        (&["stale-if-error=600"], "sie=600"),
        // Case, whitespace, empty members, several lines.
        (&["NO-STORE"], "no-store"),
        (&["Max-Age=5"], "max-age=5"),
        (&["  public ,\tmax-age=5  "], "public max-age=5"),
        (&[",,public,, ,"], "public"),
        (&["max-age = 7"], "max-age=7"),
        (&["public", "max-age=9"], "public max-age=9"),
        (&["max-age=9", "", "no-cache"], "no-cache max-age=9"),
        // Quoted values.
        (&["max-age=\"60\""], "max-age=60"),
        (&["max-age=\"6\\0\""], "max-age=60"),
        (&["max-age=\"\""], "max-age=?"),
        (&["max-age=\"60"], "max-age=?"),
        (&["max-age=\"60\"x"], "max-age=?"),
        (
            &["no-cache=\"set-cookie, x\", max-age=3"],
            "no-cache max-age=3",
        ),
        (&["private=\"a,b\", public"], "private public"),
        // Malformed numbers.
        (&["max-age"], "max-age=?"),
        (&["max-age="], "max-age=?"),
        (&["max-age=-1"], "max-age=?"),
        (&["max-age=1.5"], "max-age=?"),
        (&["max-age=+5"], "max-age=?"),
        (&["max-age=0x10"], "max-age=?"),
        (&["max-age=1 2"], "max-age=?"),
        (&["max-age=٣"], "max-age=?"),
        (&["stale-while-revalidate"], "swr=?"),
        (&["max-age=0"], "max-age=0"),
        (&["max-age=007"], "max-age=7"),
        // Huge numbers saturate at 2^31 (RFC 9111 §1.2.2).
        (&["max-age=2147483648"], "max-age=2147483648"),
        (&["max-age=2147483649"], "max-age=2147483648"),
        (
            &["s-maxage=99999999999999999999999999999999"],
            "s-maxage=2147483648",
        ),
        // Duplicates: equal values agree, different ones are invalid.
        (&["max-age=5, max-age=5"], "max-age=5"),
        (&["max-age=5", "max-age=6"], "max-age=?"),
        (&["max-age=5, max-age=x"], "max-age=?"),
        (&["max-age=x, max-age=5"], "max-age=?"),
        (&["no-store, no-store"], "no-store"),
        // Arguments on flags: restrictive ones still count, public does not.
        (&["no-store=1"], "no-store"),
        (&["must-revalidate=\"x\""], "must-revalidate"),
        (&["public=1"], ""),
        (&["public=\"\""], ""),
        // Unknown and broken members are ignored, the rest still parses.
        (&["immutable, max-age=1"], "max-age=1"),
        (&["x=\"a,max-age=1\", s-maxage=2"], "s-maxage=2"),
        (&["no store, public"], "public"),
        (&["=5, public"], "public"),
        (&["\"no-store\""], ""),
        (&["max-age=1;public"], "max-age=?"),
        (&["no-cache\u{e9}, private"], "private"),
        (&["max-age=5, \"unterminated, no-store"], "max-age=5"),
    ];
    assert!(rows.len() >= 30);
    for (lines, expected) in rows {
        assert_eq!(summary(CacheControl::parse(*lines)), *expected, "{lines:?}");
    }
}

#[test]
fn raw_bytes_that_are_not_utf8() {
    let cc = CacheControl::parse([b"max-age=\xff, no-store, \xfe\xfd".as_slice()]);
    assert_eq!(summary(cc), "no-store max-age=?");
}

#[test]
fn pragma() {
    for (lines, expected) in [
        (&["no-cache"][..], true),
        (&["No-Cache"], true),
        (&["x", " no-cache "], true),
        (&["nocache"], false),
        (&["no-cache=x"], false),
        (&[], false),
    ] {
        assert_eq!(pragma_no_cache(lines), expected, "{lines:?}");
    }
}

#[test]
fn never_panics_on_garbage() {
    let values = garbage(500);
    for pair in values.chunks(2) {
        let cc = CacheControl::parse(pair);
        for delta in [
            cc.max_age,
            cc.s_maxage,
            cc.stale_while_revalidate,
            cc.stale_if_error,
        ] {
            assert!(delta.seconds().is_none_or(|s| s <= DELTA_SECONDS_CAP));
        }
        let mentions = |v: &Vec<u8>| v.to_ascii_lowercase().windows(8).any(|w| w == b"no-cache");
        assert!(!pragma_no_cache(pair) || pair.iter().any(mentions));
    }
}
