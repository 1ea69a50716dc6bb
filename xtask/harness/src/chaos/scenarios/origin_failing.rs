//! Scenario 15, origin failing / uncacheable: two instances of a service behind the response
//! cache (each its own connections to the store and lock server), 200 concurrent cold `GET`s
//! of one path spread over both, the application taking 200 ms a call.
//!
//! - **Failing**: the application answers `503` with `Retry-After: 7`. Promise: one
//!   application call for the burst, every request answered with that same `503` and its
//!   `Retry-After` (the failure is shared with the waiters, not retried by each); a second
//!   burst within the negative TTL (1 s by default) calls nothing; one after it calls once.
//! - **Uncacheable**: the application answers `200` with `Cache-Control: private`. Every
//!   request must get its own response (200 calls per burst, as they must), but after the first
//!   answer the key is pass-through: a second burst goes straight to the application, none
//!   queueing behind a lease or another request's call (p99 under twice the application's
//!   time).
//!
//! The latency column is each request's time to its answer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::http::cache::HttpCache;

use super::Chaos;
use crate::chaos::cache_app::{self, Answered, Canned};
use crate::chaos::report::{p50_p99, Measured};
use crate::chaos::target::Target;

/// Requests per burst, spread over the two instances.
const BURST: usize = 200;
/// How long one application call takes.
const ORIGIN: Duration = Duration::from_millis(200);
/// The library's default negative TTL, which the scenario checks the window of.
const NEGATIVE_TTL: Duration = Duration::from_secs(1);

/// What the application answers.
#[derive(Clone, Copy)]
enum Answer {
    Failing,
    Private,
}

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    let mut m = Measured {
        latency_label: "answer",
        ..Measured::default()
    };
    for round in 0..cx.settings.rounds {
        eprintln!(
            "  [15 {}] round {}/{}",
            target.kind.name(),
            round + 1,
            cx.settings.rounds
        );
        if let Err(e) = one_round(cx, target, round, &mut m).await {
            m.violation(format!("round {round}: {e}"));
        }
    }
    m
}

async fn one_round(
    cx: &Chaos,
    target: &Target,
    round: u32,
    m: &mut Measured,
) -> Result<(), String> {
    let namespace = "chaos-cache";
    let instances = [
        cache_app::instance(target.kind, &target.url, namespace).await?,
        cache_app::instance(target.kind, &target.url, namespace).await?,
    ];
    let key = cx.key(15, target.kind, round);

    // The failing application.
    let calls = Arc::new(AtomicUsize::new(0));
    let path = format!("/{key}/failing");
    let first = burst(&instances, &path, Answer::Failing, &calls).await;
    let first_calls = calls.swap(0, Ordering::SeqCst);
    let again = burst(&instances, &path, Answer::Failing, &calls).await;
    let again_calls = calls.swap(0, Ordering::SeqCst);
    tokio::time::sleep(NEGATIVE_TTL + Duration::from_millis(200)).await;
    let after = burst(&instances, &path, Answer::Failing, &calls).await;
    let after_calls = calls.swap(0, Ordering::SeqCst);
    m.faults += 3;
    for answers in [&first, &again, &after] {
        m.latencies.extend(ms(answers));
    }
    let replayed = |answers: &[Answered]| {
        answers
            .iter()
            .filter(|a| a.status == 503 && a.retry_after.as_deref() == Some("7"))
            .count()
    };
    let (p50, p99) = p50_p99(&ms(&first)).unwrap_or_default();
    m.notes.push(format!(
        "failing application: {BURST} cold requests, {first_calls} application call(s), \
         {} answered its 503 with Retry-After (p50 {p50:.0} ms, p99 {p99:.0} ms); \
         again within the negative TTL: {again_calls} call(s); after it: {after_calls} call(s)",
        replayed(&first)
    ));
    eprintln!("    {}", m.notes.last().map_or("", String::as_str));
    note_statuses(m, "failing application", &first);
    if first_calls != 1 {
        m.violation(format!(
            "a failing application was called {first_calls} times for {BURST} cold requests, not once"
        ));
    }
    for (name, answers) in [("first", &first), ("second", &again), ("third", &after)] {
        let missing = BURST - replayed(answers);
        if missing > 0 {
            m.violation(format!(
                "{missing} of the {name} burst's answers were not the application's 503 with its Retry-After"
            ));
        }
    }
    if again_calls != 0 {
        m.violation(format!(
            "{again_calls} application call(s) within the negative TTL (a failure kept for it)"
        ));
    }
    if after_calls != 1 {
        m.violation(format!(
            "{after_calls} application call(s) once the negative TTL had passed, not one"
        ));
    }

    // The uncacheable application.
    let path = format!("/{key}/private");
    let first = burst(&instances, &path, Answer::Private, &calls).await;
    let first_calls = calls.swap(0, Ordering::SeqCst);
    let again = burst(&instances, &path, Answer::Private, &calls).await;
    let again_calls = calls.swap(0, Ordering::SeqCst);
    let (p50, p99) = p50_p99(&ms(&first)).unwrap_or_default();
    let (again_p50, again_p99) = p50_p99(&ms(&again)).unwrap_or_default();
    m.latencies.extend(ms(&first));
    m.latencies.extend(ms(&again));
    m.notes.push(format!(
        "uncacheable (private) answer: {first_calls} call(s) for {BURST} cold requests (p50 \
         {p50:.0} ms, p99 {p99:.0} ms); the next {BURST}: {again_calls} call(s), p50 \
         {again_p50:.0} ms, p99 {again_p99:.0} ms against a {} ms application",
        ORIGIN.as_millis()
    ));
    eprintln!("    {}", m.notes.last().map_or("", String::as_str));
    note_statuses(m, "uncacheable, second burst", &again);
    for (name, answers, calls) in [
        ("first", &first, first_calls),
        ("second", &again, again_calls),
    ] {
        let own = answers.iter().filter(|a| a.status == 200).count();
        if calls != BURST || own != BURST {
            m.violation(format!(
                "the {name} burst of uncacheable requests: {calls} calls and {own} answers of \
                 their own for {BURST} requests"
            ));
        }
    }
    if again_p99 >= 2.0 * ORIGIN.as_secs_f64() * 1e3 {
        m.violation(format!(
            "requests for a pass-through key waited for others: p99 {again_p99:.0} ms against a \
             {} ms application",
            ORIGIN.as_millis()
        ));
    }
    m.counts.sections += 5 * BURST as u64;
    Ok(())
}

/// `BURST` concurrent `GET path`, alternating over `instances`.
async fn burst(
    instances: &[HttpCache; 2],
    path: &str,
    answer: Answer,
    calls: &Arc<AtomicUsize>,
) -> Vec<Answered> {
    let tasks: Vec<_> = (0..BURST)
        .map(|n| {
            let (cache, path, calls) = (instances[n % 2].clone(), path.to_owned(), calls.clone());
            tokio::spawn(async move {
                cache_app::get(&cache, &path, move || async move {
                    calls.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(ORIGIN).await;
                    match answer {
                        Answer::Failing => Canned::new(
                            503,
                            &[("retry-after", "7"), ("content-type", "text/plain")],
                            "down",
                        ),
                        Answer::Private => {
                            Canned::new(200, &[("cache-control", "private, max-age=60")], "mine")
                        }
                    }
                })
                .await
            })
        })
        .collect();
    let mut answers = Vec::with_capacity(BURST);
    for task in tasks {
        match task.await {
            Ok(answered) => answers.push(answered),
            Err(e) => answers.push(Answered {
                status: 0,
                cache_status: format!("request task failed: {e}"),
                retry_after: None,
                latency: Duration::ZERO,
            }),
        }
    }
    answers
}

fn ms(answers: &[Answered]) -> Vec<f64> {
    answers
        .iter()
        .map(|a| a.latency.as_secs_f64() * 1e3)
        .collect()
}

/// A note with how many answers had each `Cache-Status` (without `ttl`).
fn note_statuses(m: &mut Measured, what: &str, answers: &[Answered]) {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for answer in answers {
        let status: Vec<&str> = answer
            .cache_status
            .split("; ")
            .filter(|p| !p.starts_with("ttl="))
            .collect();
        let status = format!("{} {}", answer.status, status.join("; "));
        match seen.iter_mut().find(|(s, _)| *s == status) {
            Some((_, n)) => *n += 1,
            None => seen.push((status, 1)),
        }
    }
    let list: Vec<String> = seen.iter().map(|(s, n)| format!("{n}× {s}")).collect();
    m.notes.push(format!("{what}: {}", list.join(", ")));
}
