//! The state machine, on paused tokio time: what opens the breaker, what it refuses, its one
//! probe, its backoff, and what closes it.

use std::time::Duration;

use tokio::time::{advance, Instant};

use super::*;

const FIRST: Duration = Duration::from_millis(500);
const MAX: Duration = Duration::from_secs(5);

fn test_breaker() -> Breaker {
    Breaker::new(
        "test",
        BreakerOptions::new()
            .failures(3)
            .window(Duration::from_secs(10))
            .cool_down(FIRST, MAX)
            .probe_timeout(Duration::from_secs(10)),
    )
}

fn fail(breaker: &Breaker) {
    breaker
        .admit()
        .expect("admitted")
        .unavailable("Connection refused (os error 111)");
}

fn open_retry_after(breaker: &Breaker) -> Duration {
    match breaker.state() {
        BreakerState::Open { retry_after, .. } => retry_after,
        other => panic!("expected open, found {other:?}"),
    }
}

/// Refused at once: the error is `Unavailable` with the breaker's `CircuitOpen` as source.
fn assert_refused(breaker: &Breaker) -> CircuitOpen {
    let error = breaker.admit().expect_err("refused");
    assert!(error.is_unavailable(), "{error}");
    error.circuit_open().expect("a CircuitOpen source").clone()
}

#[tokio::test(start_paused = true)]
async fn three_failures_in_a_row_open_it_and_calls_then_fail_fast() {
    let breaker = test_breaker();
    fail(&breaker);
    fail(&breaker);
    assert_eq!(breaker.state(), BreakerState::Closed, "two are not enough");
    assert!(!breaker.admit().unwrap().is_probe());
    fail(&breaker);
    let retry_after = open_retry_after(&breaker);
    assert!(
        (FIRST.mul_f64(0.8)..=FIRST.mul_f64(1.2)).contains(&retry_after),
        "{retry_after:?}"
    );
    let refused = assert_refused(&breaker);
    assert_eq!(refused.backend(), "test");
    assert_eq!(refused.last_error(), "Connection refused (os error 111)");
    assert_eq!(refused.retry_after(), retry_after);
    assert_eq!(refused.retry_after_secs(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_answer_between_failures_or_a_stale_streak_starts_counting_again() {
    let breaker = test_breaker();
    fail(&breaker);
    fail(&breaker);
    breaker.admit().unwrap().answered();
    fail(&breaker);
    fail(&breaker);
    assert_eq!(breaker.state(), BreakerState::Closed, "the answer reset it");
    advance(Duration::from_secs(11)).await;
    fail(&breaker);
    fail(&breaker);
    assert_eq!(
        breaker.state(),
        BreakerState::Closed,
        "failures more than a window apart never add up"
    );
    fail(&breaker);
    assert!(matches!(breaker.state(), BreakerState::Open { .. }));
}

#[tokio::test(start_paused = true)]
async fn after_the_cool_down_exactly_one_probe_goes_and_its_answer_closes_it() {
    let breaker = test_breaker();
    for _ in 0..3 {
        fail(&breaker);
    }
    advance(open_retry_after(&breaker)).await;
    let probe = breaker.admit().expect("the probe");
    assert!(probe.is_probe());
    assert!(matches!(breaker.state(), BreakerState::HalfOpen { .. }));
    for _ in 0..10 {
        let refused = assert_refused(&breaker);
        assert_eq!(
            refused.retry_after(),
            Duration::ZERO,
            "a probe is under way"
        );
    }
    probe.answered();
    assert_eq!(breaker.state(), BreakerState::Closed);
    let next = breaker.admit().expect("closed");
    assert!(!next.is_probe());
    next.answered();
    fail(&breaker);
    fail(&breaker);
    assert_eq!(
        breaker.state(),
        BreakerState::Closed,
        "the streak started again"
    );
}

#[tokio::test(start_paused = true)]
async fn failed_probes_double_the_cool_down_up_to_the_cap() {
    let breaker = test_breaker();
    for _ in 0..3 {
        fail(&breaker);
    }
    let mut expected = FIRST;
    for _ in 0..6 {
        let wait = open_retry_after(&breaker);
        assert!(
            (expected.mul_f64(0.8)..=expected.mul_f64(1.2).min(MAX)).contains(&wait),
            "expected about {expected:?} (never past {MAX:?}), the cool-down is {wait:?}"
        );
        advance(wait - Duration::from_millis(1)).await;
        assert_refused(&breaker);
        advance(Duration::from_millis(1)).await;
        fail(&breaker); // the probe
        expected = (expected * 2).min(MAX);
    }
    assert!(matches!(breaker.state(), BreakerState::Open { .. }));
}

#[tokio::test(start_paused = true)]
async fn a_dropped_probe_lets_the_next_call_probe_and_a_hung_one_is_given_up_on() {
    let breaker = test_breaker();
    for _ in 0..3 {
        fail(&breaker);
    }
    advance(open_retry_after(&breaker)).await;
    drop(breaker.admit().expect("the probe")); // its caller was cancelled
    let probe = breaker.admit().expect("probing again at once");
    assert!(probe.is_probe());
    assert_refused(&breaker);
    advance(Duration::from_secs(10)).await;
    let second = breaker.admit().expect("the hung probe was given up on");
    assert!(second.is_probe());
    probe.unavailable("late"); // the given-up probe's late failure changes nothing
    assert!(matches!(breaker.state(), BreakerState::HalfOpen { .. }));
    second.answered();
    assert_eq!(breaker.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn answers_of_calls_sent_before_it_opened_do_not_close_it() {
    let breaker = test_breaker();
    let straggler = breaker.admit().unwrap();
    for _ in 0..3 {
        fail(&breaker);
    }
    straggler.answered();
    assert!(matches!(breaker.state(), BreakerState::Open { .. }));
}

#[tokio::test(start_paused = true)]
async fn admitted_waits_for_the_probe_or_for_another_probe_to_close_it() {
    let breaker = test_breaker();
    for _ in 0..3 {
        fail(&breaker);
    }
    let started = Instant::now();
    let due = open_retry_after(&breaker);
    let probe = breaker.admitted().await;
    assert!(probe.is_probe());
    // Not before the probe is due; the timer wheel rounds up to the next millisecond.
    let waited = started.elapsed();
    assert!(
        waited >= due && waited <= due + Duration::from_millis(1),
        "{waited:?}"
    );

    let waiting = tokio::spawn({
        let breaker = breaker.clone();
        async move {
            let admission = breaker.admitted().await;
            (admission.is_probe(), Instant::now())
        }
    });
    tokio::task::yield_now().await;
    advance(Duration::from_millis(100)).await;
    let closed_at = Instant::now();
    probe.answered();
    let (is_probe, admitted_at) = waiting.await.unwrap();
    assert!(!is_probe, "admitted by the close, not as a second probe");
    assert_eq!(admitted_at, closed_at);
}

#[tokio::test(start_paused = true)]
async fn without_fail_fast_it_only_watches() {
    let breaker = Breaker::new("test", BreakerOptions::new().fail_fast(false));
    for _ in 0..5 {
        fail(&breaker);
    }
    assert!(matches!(breaker.state(), BreakerState::Open { .. }));
    let admission = breaker.admit().expect("never refused");
    assert!(!admission.is_probe());
    admission.answered();
    assert_eq!(breaker.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_background_loop_waiting_to_probe_keeps_every_call_failing_fast() {
    let breaker = test_breaker();
    for _ in 0..3 {
        fail(&breaker);
    }
    let due = open_retry_after(&breaker);
    let background = tokio::spawn({
        let breaker = breaker.clone();
        async move {
            let probe = breaker.admitted().await;
            assert!(probe.is_probe());
            Instant::now()
        }
    });
    tokio::task::yield_now().await;
    advance(due).await;
    assert_refused(&breaker); // the background loop probes, not this call
    let probed_at = background.await.unwrap();
    assert!(probed_at.elapsed() <= Duration::from_millis(1));
    // Its probe was dropped unanswered (the loop ended): the next one may go at once, and
    // with no loop waiting, a call takes it.
    assert!(breaker.admit().expect("probing").is_probe());

    // A loop that lets the probe lapse for a probe timeout leaves it to the calls.
    let lapsed = test_breaker();
    for _ in 0..3 {
        fail(&lapsed);
    }
    let due = open_retry_after(&lapsed);
    let waiting = lapsed.clone();
    let stuck = tokio::spawn(async move {
        let admitted = std::pin::pin!(waiting.admitted());
        // Polled once, so it counts as waiting, then never again.
        assert!(poll_once(admitted).await.is_none());
        std::future::pending::<()>().await;
    });
    tokio::task::yield_now().await;
    advance(due).await;
    assert_refused(&lapsed);
    advance(Duration::from_secs(10)).await;
    assert!(lapsed.admit().expect("the loop let it lapse").is_probe());
    stuck.abort();
}

/// Polls `future` once.
async fn poll_once<F: std::future::Future + Unpin>(mut future: F) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut future).poll(cx) {
            std::task::Poll::Ready(output) => Some(output),
            std::task::Poll::Pending => None,
        })
    })
    .await
}
