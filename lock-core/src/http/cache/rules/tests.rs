//! The rules' defaults, the settings they refuse, the headers they replay.

use super::*;

#[test]
fn defaults_are_valid() {
    let rules = CacheRules::builder().build().unwrap();
    assert_eq!(rules.default_freshness(), None);
    assert!(DEFAULT_STATUSES.iter().all(|&s| rules.stores_status(s)));
    assert!(!rules.stores_status(206) && !rules.stores_status(500));
    assert_eq!(rules.max_body(), 1 << 20);
    assert_eq!(rules.on_backend_error(), OnBackendError::FailOpen);
    assert_eq!(rules.cache_name(), "lock-core");
    assert_eq!(rules.set_cookie(), SetCookie::Strip);
    assert_eq!(rules.negative_ttl(), Duration::from_secs(1));
    assert_eq!(rules.pass_through_ttl(), Duration::from_secs(30));
}

#[test]
fn invalid_settings_are_refused() {
    let b = CacheRules::builder;
    let rows: Vec<(CacheRulesBuilder, &str)> = vec![
        (b().statuses([]), "no status"),
        (b().statuses([200, 199]), "199"),
        (b().statuses([206]), "206"),
        (b().statuses([304]), "304"),
        (b().statuses([600]), "600"),
        (b().max_body(0), "positive"),
        (b().vary("accept language"), "not a header name"),
        (b().vary(""), "not a header name"),
        (b().never_replay("x:y"), "not a header name"),
        (b().vary("Cookie"), "credentials"),
        (b().vary("authorization"), "credentials"),
        (b().cache_name(""), "printable"),
        (b().cache_name("caf\u{e9}"), "printable"),
        (b().cache_name("x".repeat(65)), "printable"),
        (b().key_prefix("a\0"), "NUL"),
        (b().key_prefix("p".repeat(65)), "64 bytes"),
        (b().negative_ttl(MAX_WINDOW * 2), "negative TTL"),
        (b().pass_through_ttl(MAX_WINDOW * 2), "pass-through TTL"),
    ];
    for (builder, reason) in rows {
        match builder.build() {
            Err(LockError::InvalidConfig(message)) => {
                assert!(message.contains(reason), "{message} / {reason}");
            }
            other => panic!("{reason}: {other:?}"),
        }
    }
    let zero = b().default_freshness(Freshness::fresh_for(Duration::ZERO));
    assert!(matches!(
        zero.build(),
        Err(LockError::InvalidDuration { .. })
    ));
}

#[test]
fn replayed_headers() {
    let rules = CacheRules::builder()
        .never_replay("X-Debug")
        .build()
        .unwrap();
    for (name, replayed) in [
        ("content-type", true),
        ("ETag", true),
        ("Set-Cookie", false),
        ("set-cookie2", false),
        ("X-DEBUG", false),
        ("Keep-Alive", false),
        ("Proxy-Foo", false),
        ("TE", false),
        ("Trailer", false),
        ("Upgrade", false),
        ("Cache-Status", false),
    ] {
        assert_eq!(rules.replays(name), replayed, "{name}");
    }
    let replay = CacheRules::builder()
        .set_cookie(SetCookie::Replay)
        .build()
        .unwrap();
    assert!(replay.replays("Set-Cookie"));
}
