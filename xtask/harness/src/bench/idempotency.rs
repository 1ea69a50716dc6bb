//! The idempotency layer's costs (`cargo xtask bench --backend redis`), in the units the
//! issue sets, measured in one run on one Redis:
//!
//! - a **first request** (a new key) through the layer against the same handler without it,
//!   the difference counted in raw Redis round trips (a `GET` of the stored response's bytes
//!   on its own connection);
//! - a **replay** (a completed key) through the layer against that raw `GET`, and against the
//!   same handler behind a hand-written Redis-`GET` layer (the response cache bench's floor),
//!   which adds the router and the response to the raw round trip;
//! - where a replay's time goes: a raw `EVALSHA` of a script that reads the bytes and returns
//!   them (the server's script cost over the `GET`), `Idempotency::completed` (lock-core's
//!   plain read of the record) and `Idempotency::begin` on the completed key (the replay
//!   without HTTP: the claim script and the lock client around it).
//!
//! Each sample is one `POST /pay` through an axum `Router`, in process (`oneshot`), body read
//! whole, or one call of the step measured; the kinds of sample are interleaved so drift hits
//! them alike.

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use axum::routing::post;
use axum::Router;
use lock_core::idempotency::{Begin, Fingerprint, Idempotency, InFlight};
use lock_core::results::StoredResponse;
use lock_tower::IdempotencyLayer;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::bench::floor::Summary;
use crate::bench::middleware::{connect, send, PlainGetLayer};
use crate::micros;

/// The handler every stack wraps: a payment receipt of 128 bytes, status 201.
async fn pay() -> (axum::http::StatusCode, Vec<u8>) {
    (axum::http::StatusCode::CREATED, vec![b'r'; 128])
}

const BODY: &str = r#"{"from":"acct-a","to":"acct-b","cents":100}"#;

/// Measures, prints and returns the figures for the report.
pub async fn run(url: &str, iterations: usize) -> Value {
    let (backend, store, mut redis) = connect(url).await;
    let idempotency = Idempotency::builder(store, backend)
        .namespace(format!("bench-idem-{}", std::process::id()))
        .build()
        .expect("idempotency");
    let core = idempotency.clone();
    let layered = Router::new().route("/pay", post(pay)).layer(
        IdempotencyLayer::builder(idempotency)
            // One client, the bench: every request in one scope.
            .shared_scope()
            .build()
            .expect("layer"),
    );
    let bare = Router::new().route("/pay", post(pay));
    let plain = Router::new()
        .route("/pay", post(pay))
        .layer(PlainGetLayer::new(
            redis.clone(),
            format!("bench-idem-plain-{}:", std::process::id()),
        ));

    // The replayed key, completed once; the raw floor reads bytes of the same size.
    let replayed_key = "replayed";
    assert_eq!(call(&layered, Some(replayed_key)).await, 201);
    call(&plain, None).await;
    let raw_key = format!("bench-idem-raw-{}", std::process::id());
    let stored_size = 128 + 200;
    let _: () = redis::cmd("SET")
        .arg(&raw_key)
        .arg(vec![b'x'; stored_size])
        .query_async(&mut redis)
        .await
        .expect("SET");

    // A replay through lock-core alone (no HTTP): the same script and record decoding, without
    // the layer's request and response handling; and lock-core's plain read of the record.
    let fingerprint = Fingerprint::builder("POST", "/pay")
        .body(BODY.as_bytes())
        .finish();
    let core_key = "core-replayed";
    let Begin::Run(claim) = core
        .begin("bench", core_key, fingerprint, InFlight::Conflict)
        .await
        .expect("claim")
    else {
        panic!("a new key runs");
    };
    claim
        .complete(StoredResponse {
            status: 201,
            headers: vec![(
                "content-type".to_owned(),
                b"application/octet-stream".to_vec(),
            )],
            body: vec![b'r'; 128],
            initial_age: Duration::ZERO,
            fresh: Duration::ZERO,
        })
        .await
        .expect("complete");

    // The script floor: a raw EVALSHA of a script that reads the stored bytes and returns
    // them, with arguments the size of a claim's (an owner token, an in-flight record).
    let script = redis::Script::new(
        "local r = redis.call('GET', KEYS[1]) if r then return {2, 0, r} end return 1",
    );
    let _: redis::Value = script
        .key(&raw_key)
        .invoke_async(&mut redis)
        .await
        .expect("SCRIPT LOAD");
    let sha = script.get_hash().to_owned();

    let mut samples: [Vec<Duration>; 8] = Default::default();
    for i in 0..iterations {
        let start = Instant::now();
        assert_eq!(call(&layered, Some(&format!("first-{i}"))).await, 201);
        samples[0].push(start.elapsed());
        let start = Instant::now();
        call(&bare, None).await;
        samples[1].push(start.elapsed());
        let start = Instant::now();
        assert_eq!(call(&layered, Some(replayed_key)).await, 201);
        samples[2].push(start.elapsed());
        let start = Instant::now();
        let _: Vec<u8> = redis::cmd("GET")
            .arg(&raw_key)
            .query_async(&mut redis)
            .await
            .expect("GET");
        samples[3].push(start.elapsed());
        let start = Instant::now();
        call(&plain, None).await;
        samples[4].push(start.elapsed());
        let start = Instant::now();
        let begun = core
            .begin("bench", core_key, fingerprint, InFlight::Conflict)
            .await
            .expect("replay");
        assert!(matches!(begun, Begin::Replay(_)));
        samples[5].push(start.elapsed());
        let start = Instant::now();
        let read = core.completed("bench", core_key).await.expect("read");
        assert!(read.is_some());
        samples[6].push(start.elapsed());
        let start = Instant::now();
        let _: redis::Value = redis::cmd("EVALSHA")
            .arg(&sha)
            .arg(1)
            .arg(&raw_key)
            .arg("0123456789abcdef0123456789abcdef")
            .arg(vec![b'i'; 120])
            .query_async(&mut redis)
            .await
            .expect("EVALSHA");
        samples[7].push(start.elapsed());
    }
    let [first, bare, replay, raw_get, plain_layer, core_replay, core_read, raw_eval] =
        samples.map(|mut s| Summary::of(&mut s));
    let round_trip = raw_get.mean.as_secs_f64();
    let extra_round_trips = (first.mean.as_secs_f64() - bare.mean.as_secs_f64()) / round_trip;
    let replay_ratio = replay.mean.as_secs_f64() / round_trip;
    let replay_vs_layer = replay.mean.as_secs_f64() / plain_layer.mean.as_secs_f64();
    let line = |name: &str, s: &Summary| {
        println!(
            "  {name:<38}mean {:>10}  p50 {:>10}  p99 {:>10}",
            micros(s.mean),
            micros(s.p50),
            micros(s.p99)
        );
    };
    println!("\nidempotency layer (redis), POST /pay");
    line("first request (new key)", &first);
    line("  the handler without the layer", &bare);
    line("replay (completed key)", &replay);
    line("  floor: raw GET of the stored bytes", &raw_get);
    line("  hand-written GET layer", &plain_layer);
    println!("  where a replay's time goes (diagnostic):");
    line("  raw EVALSHA reading the bytes", &raw_eval);
    line("  Idempotency::completed (a GET)", &core_read);
    line("  Idempotency::begin, a replay", &core_replay);
    println!(
        "  first request: {extra_round_trips:.2} raw round trips over the bare handler; \
         replay: {replay_ratio:.2}× the raw GET, {replay_vs_layer:.2}× the hand-written GET layer (means)"
    );
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    json!({
        "first_us": { "mean": us(first.mean), "p99": us(first.p99) },
        "bare_us": { "mean": us(bare.mean), "p99": us(bare.p99) },
        "replay_us": { "mean": us(replay.mean), "p99": us(replay.p99) },
        "raw_get_us": { "mean": us(raw_get.mean), "p99": us(raw_get.p99) },
        "plain_get_layer_us": { "mean": us(plain_layer.mean), "p99": us(plain_layer.p99) },
        "core_replay_us": { "mean": us(core_replay.mean), "p99": us(core_replay.p99) },
        "core_read_us": { "mean": us(core_read.mean), "p99": us(core_read.p99) },
        "raw_evalsha_us": { "mean": us(raw_eval.mean), "p99": us(raw_eval.p99) },
        "first_extra_round_trips": extra_round_trips,
        "replay_ratio_raw_get": replay_ratio,
        "replay_ratio_get_layer": replay_vs_layer,
    })
}

/// One `POST /pay` through `app` (with `Idempotency-Key: key` when given), body read whole;
/// returns the status.
async fn call(app: &Router, key: Option<&str>) -> u16 {
    let mut request = Request::post("/pay").header("content-type", "application/json");
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    let (head, body) = send(app, request.body(Body::from(BODY)).expect("request")).await;
    assert!(!body.is_empty());
    head.status.as_u16()
}
