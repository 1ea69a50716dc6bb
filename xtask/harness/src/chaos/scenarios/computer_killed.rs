//! Scenario 16, computer killed: two instances of a service behind the response cache, each a
//! process of its own (`chaos cache-worker`). A asks for a cold path; its application takes
//! 4 s. B asks for the same path while A computes, then once every 250 ms. A is killed
//! (SIGKILL) half a second after B's first request. Promise: B takes the computation over and
//! a response is stored within 5 s of the kill (B sees `stored`, or a `hit`), with at most 2
//! application calls in all (A's and the takeover's); nobody computes without storing while a
//! dead computer's lease lingers.
//!
//! The latency column is the time from the kill to the first stored response.

use std::time::Duration;

use tokio::time::sleep;

use super::{ms_between, Chaos, START};
use crate::chaos::cache_worker::counter_key;
use crate::chaos::process::Worker;
use crate::chaos::report::Measured;
use crate::chaos::target::Target;
use crate::chaos::worker::wall_us;

/// How long the application takes.
const ORIGIN: Duration = Duration::from_secs(4);
/// The promise: a stored response this soon after the kill.
const STORED_WITHIN: Duration = Duration::from_secs(5);
/// How long B keeps asking before it gives up (longer than any lease the old code held).
const GIVE_UP: Duration = Duration::from_secs(60);

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    let mut m = Measured {
        latency_label: "kill→stored",
        ..Measured::default()
    };
    for round in 0..cx.settings.rounds {
        eprintln!(
            "  [16 {}] round {}/{}",
            target.kind.name(),
            round + 1,
            cx.settings.rounds
        );
        let path = format!("/{}/cold", cx.key(16, target.kind, round));
        if let Err(e) = one_round(cx, target, &path, &mut m).await {
            m.violation(format!("round {round}: {e}"));
        }
        clear(&cx.resource_url, &path).await.ok();
    }
    m
}

async fn one_round(
    cx: &Chaos,
    target: &Target,
    path: &str,
    m: &mut Measured,
) -> Result<(), String> {
    let worker = |label: &str, extra: &[&str]| {
        let mut args: Vec<String> = [
            "--backend",
            target.kind.name(),
            "--url",
            &target.url,
            "--counter-url",
            &cx.resource_url,
            "--path",
            path,
            "--origin-ms",
            &ORIGIN.as_millis().to_string(),
            "--give-up-ms",
            &GIVE_UP.as_millis().to_string(),
        ]
        .map(str::to_owned)
        .to_vec();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        eprintln!("    starting {label}");
        Worker::spawn_command(&cx.exe, "cache-worker", &args)
    };
    let mut a = worker("A (the computer)", &["--once"])?;
    a.wait_for("computing", START).await?;
    let mut b = worker("B (the survivor)", &[])?;
    b.wait_for("sent", START).await?;
    // B's first request is queued behind A's lease by now.
    sleep(Duration::from_millis(500)).await;
    a.signal("KILL")?;
    let killed = wall_us();
    m.faults += 1;
    a.finish(START).await?;
    let stored = b.wait_for("stored", GIVE_UP + START).await;
    b.wait_for("done", GIVE_UP + START).await?;
    let answers = b.all("answer");
    b.finish(START).await?;
    m.counts.sections += 1 + answers.len() as u64;
    let calls = calls(&cx.resource_url, path).await?;
    let computed_unstored = answers
        .iter()
        .filter(|a| a.fields.contains("fwd-status=200") && !a.fields.contains("; stored"))
        .count();
    let gap = match &stored {
        Ok(stored) => ms_between(killed, stored.at),
        Err(_) => f64::INFINITY,
    };
    if gap.is_finite() {
        m.latencies.push(gap);
    }
    let note = format!(
        "computer killed: a stored response {} after the kill; {calls} application call(s) in \
         all; {} of B's {} answers computed without storing",
        if gap.is_finite() {
            format!("{:.1} s", gap / 1e3)
        } else {
            "never".to_owned()
        },
        computed_unstored,
        answers.len()
    );
    eprintln!("    {note}");
    m.notes.push(note);
    if gap > STORED_WITHIN.as_secs_f64() * 1e3 {
        m.violation(format!(
            "no response stored within {STORED_WITHIN:?} of the computer's kill ({})",
            if gap.is_finite() {
                format!("{:.1} s", gap / 1e3)
            } else {
                "none at all".to_owned()
            }
        ));
    }
    if calls > 2 {
        m.violation(format!(
            "{calls} application calls for one cold path whose computer was killed (at most 2)"
        ));
    }
    Ok(())
}

/// The application calls counted for `path` in the resource Redis at `url`.
async fn calls(url: &str, path: &str) -> Result<i64, String> {
    let mut connection = redis::Client::open(url)
        .map_err(|e| e.to_string())?
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| e.to_string())?;
    let calls: Option<i64> = redis::cmd("GET")
        .arg(counter_key(path))
        .query_async(&mut connection)
        .await
        .map_err(|e| e.to_string())?;
    Ok(calls.unwrap_or(0))
}

async fn clear(url: &str, path: &str) -> Result<(), String> {
    let mut connection = redis::Client::open(url)
        .map_err(|e| e.to_string())?
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| e.to_string())?;
    redis::cmd("DEL")
        .arg(counter_key(path))
        .query_async::<i64>(&mut connection)
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}
