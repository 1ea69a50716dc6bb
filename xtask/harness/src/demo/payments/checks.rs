//! The payments checks the apps' tests share: the idempotency answers in one process, 1,000
//! identical requests across two processes, and a process killed while its handler runs.
//!
//! Each returns `Err` with what went wrong; each is bounded in time ([`LIMIT`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use example_support::payments::{Effect, Ledger, Payment, Receipt, BAD_INPUT, STATS_PATH};
use serde_json::Value;
use tokio::sync::Barrier;
use tokio::time::{timeout, Instant};

use super::client::{client, get, post_payment, PaymentClient, Posted};
use super::AppProcess;
use crate::demo::inventory::unique;
use crate::demo::scrape::assert_page_after;

/// How long any one check may take.
pub const LIMIT: Duration = Duration::from_secs(120);

/// How to start one app process: its binary and the arguments before the shared ones
/// (`--framework axum`, say).
#[derive(Clone, Debug)]
pub struct AppCommand {
    /// The binary.
    pub binary: PathBuf,
    /// Its first arguments.
    pub args: Vec<String>,
}

impl AppCommand {
    /// Starts it with `args` after its own.
    pub async fn launch(&self, args: &[String]) -> Result<AppProcess, String> {
        let all: Vec<String> = self.args.iter().chain(args).cloned().collect();
        AppProcess::launch(&self.binary, &all).await
    }
}

/// A payment body.
#[must_use]
pub fn body(from: &str, to: &str, cents: u64) -> String {
    Payment {
        from: from.into(),
        to: to.into(),
        cents,
    }
    .to_json()
}

fn receipt(posted: &Posted) -> Result<Receipt, String> {
    serde_json::from_str(&posted.body)
        .map_err(|e| format!("not a receipt ({e}): {} {}", posted.status, posted.body))
}

fn expect(posted: &Posted, status: u16, replayed: bool, what: &str) -> Result<(), String> {
    if posted.status == status && posted.replayed == replayed {
        Ok(())
    } else {
        Err(format!(
            "{what}: expected {status}{}, got {}{}: {}",
            if replayed { " (replayed)" } else { "" },
            posted.status,
            if posted.replayed { " (replayed)" } else { "" },
            posted.body
        ))
    }
}

fn problem(posted: &Posted, status: u16, what: &str) -> Result<(), String> {
    expect(posted, status, false, what)?;
    if posted.content_type.as_deref() != Some("application/problem+json") {
        return Err(format!(
            "{what}: a {status} must be application/problem+json, got {:?}",
            posted.content_type
        ));
    }
    Ok(())
}

/// The handler runs of every instance at `targets`, summed from their `GET /stats`.
pub async fn executions(client: &PaymentClient, targets: &[String]) -> Result<u64, String> {
    let mut total = 0;
    for target in targets {
        let stats = get(client, &format!("{target}{STATS_PATH}")).await;
        let json: Value = serde_json::from_str(&stats.body)
            .map_err(|e| format!("GET {target}/stats: {e}: {}", stats.body))?;
        total += json["handler"]["executions"]
            .as_u64()
            .ok_or_else(|| format!("GET {target}/stats has no handler.executions: {json}"))?;
    }
    Ok(total)
}

/// The idempotency answers, on instances (`targets`, used in turn: a duplicate sent to
/// another instance than the first) sharing `ledger`'s backend:
/// - a duplicate of a completed payment is replayed (201, `Idempotent-Replayed: true`, the
///   same receipt) and moves no money;
/// - the key reused with another body is 422;
/// - no `Authorization` is 401, before the layer (the handler does not run);
/// - user B sending user A's key with A's body gets a payment of their own, not A's receipt;
/// - no key is 400 and a bad body is a 400 problem (kept and replayed like any 4xx).
///
/// With a `ledger` (`None`: the ledger is in another process's memory), one payment each is
/// recorded for alice's key and bob's.
pub async fn idempotent_answers(targets: &[String], ledger: Option<&Ledger>) -> Result<(), String> {
    timeout(LIMIT, answers(targets, ledger))
        .await
        .map_err(|_| "the checks did not finish in time".to_owned())?
}

/// An app's `binary` itself, started as a process on memory (no handler delay): it announces
/// its port, and its answers are the [`idempotent_answers`].
pub async fn binary_answers(binary: PathBuf) -> Result<(), String> {
    let app = AppCommand {
        binary,
        args: Vec::new(),
    };
    let process = app.launch(&["--handler-ms".into(), "0".into()]).await?;
    idempotent_answers(std::slice::from_ref(&process.base), None).await
}

/// The app at `base` (on memory) after one payment: its lock acquisition and the idempotency
/// layer's 201 are on `GET /metrics`. Panics otherwise (a test's body).
pub async fn metrics_show_the_payment(base: &str) {
    let paid = body("acct-a", "acct-b", 100);
    let posted = async {
        let posted = post_payment(&client(1), base, Some("alice"), Some("m-1"), &paid).await;
        (posted.status, posted.body)
    };
    let executed = [
        ("layer", "idempotency"),
        ("status", "201"),
        ("outcome", "executed"),
    ];
    assert_page_after(
        base,
        posted,
        201,
        &[
            (
                "lock_acquire_total",
                &[("backend", "memory"), ("outcome", "acquired")],
            ),
            ("lock_http_responses_total", &executed),
        ],
    )
    .await;
}

async fn answers(targets: &[String], ledger: Option<&Ledger>) -> Result<(), String> {
    let client = client(4);
    let at = |n: usize| targets[n % targets.len()].as_str();
    let key = unique("key");
    let paid = body("acct-a", "acct-b", 100);
    let before = executions(&client, targets).await?;

    let first = post_payment(&client, at(0), Some("alice"), Some(&key), &paid).await;
    expect(&first, 201, false, "the first payment")?;
    let original = receipt(&first)?;
    if (original.cents, original.from.as_str()) != (100, "acct-a") {
        return Err(format!(
            "the receipt does not match the payment: {original:?}"
        ));
    }
    for n in 0..targets.len().max(2) {
        let again = post_payment(&client, at(n), Some("alice"), Some(&key), &paid).await;
        expect(&again, 201, true, "a duplicate")?;
        if again.body != first.body {
            return Err(format!(
                "a replay differs: {} vs {}",
                again.body, first.body
            ));
        }
    }
    let other = body("acct-a", "acct-b", 999);
    let reused = post_payment(&client, at(1), Some("alice"), Some(&key), &other).await;
    problem(&reused, 422, "the key reused with another body")?;
    let anonymous = post_payment(&client, at(0), None, Some(&key), &paid).await;
    problem(&anonymous, 401, "no Authorization")?;
    let bob = post_payment(&client, at(1), Some("bob"), Some(&key), &paid).await;
    expect(&bob, 201, false, "bob with alice's key")?;
    let bobs = receipt(&bob)?;
    if bobs.payment_id == original.payment_id {
        return Err(format!("bob was handed alice's payment: {}", bob.body));
    }
    let keyless = post_payment(&client, at(0), Some("alice"), None, &paid).await;
    problem(&keyless, 400, "no Idempotency-Key")?;
    let bad_key = unique("bad");
    let bad = post_payment(&client, at(0), Some("alice"), Some(&bad_key), "{\"cents\":").await;
    problem(&bad, 400, "a bad body")?;
    if !bad.body.contains(BAD_INPUT) {
        return Err(format!("the 400 is not the handler's: {}", bad.body));
    }
    let bad_again =
        post_payment(&client, at(1), Some("alice"), Some(&bad_key), "{\"cents\":").await;
    expect(&bad_again, 400, true, "the bad body again")?;

    let ran = executions(&client, targets).await? - before;
    if ran != 3 {
        return Err(format!(
            "the handler ran {ran} times for alice's payment, bob's and the bad body, not 3"
        ));
    }
    let Some(ledger) = ledger else {
        return Ok(());
    };
    let alices = effects(ledger, "alice", &key).await?;
    let bobs_rows = effects(ledger, "bob", &key).await?;
    if alices.len() != 1 || bobs_rows.len() != 1 || alices[0].fence != original.fence {
        return Err(format!(
            "the ledger holds {alices:?} for alice's key and {bobs_rows:?} for bob's"
        ));
    }
    Ok(())
}

async fn effects(ledger: &Ledger, user: &str, key: &str) -> Result<Vec<Effect>, String> {
    ledger
        .effects_of(user, key)
        .await
        .map_err(|e| e.to_string())
}

/// `requests` identical payments (one user, one key, one body) sent at once, spread over
/// `targets` (the app processes): the handler runs once in all of them (their `/stats`), every
/// answer is the original 201, a replay of it (same body) or a 409 problem, and the ledger
/// holds one payment for the key. A last request to each target, after all have answered, is
/// a replay.
pub async fn concurrent_duplicates(
    targets: &[String],
    ledger: &Ledger,
    requests: usize,
) -> Result<(), String> {
    timeout(LIMIT, duplicates(targets, ledger, requests))
        .await
        .map_err(|_| "the duplicates did not finish in time".to_owned())?
}

async fn duplicates(targets: &[String], ledger: &Ledger, requests: usize) -> Result<(), String> {
    let client = client(requests);
    let key = unique("dup");
    let paid = body("acct-a", "acct-b", 4_200);
    let before = executions(&client, targets).await?;
    let start = Arc::new(Barrier::new(requests));
    let tasks: Vec<_> = (0..requests)
        .map(|n| {
            let (client, start, key, paid) =
                (client.clone(), start.clone(), key.clone(), paid.clone());
            let target = targets[n % targets.len()].clone();
            tokio::spawn(async move {
                start.wait().await;
                post_payment(&client, &target, Some("alice"), Some(&key), &paid).await
            })
        })
        .collect();
    let mut answers = Vec::with_capacity(requests);
    for task in tasks {
        answers.push(task.await.map_err(|e| e.to_string())?);
    }
    for target in targets {
        answers.push(post_payment(&client, target, Some("alice"), Some(&key), &paid).await);
    }
    let originals: Vec<&Posted> = answers.iter().filter(|a| a.original()).collect();
    let [original] = originals[..] else {
        return Err(format!(
            "{} answers were an original 201, not one",
            originals.len()
        ));
    };
    let (mut replays, mut conflicts) = (0, 0);
    for answer in &answers {
        match (answer.status, answer.replayed) {
            (201, _) if answer.body == original.body => replays += u64::from(answer.replayed),
            (409, false) => {
                problem(answer, 409, "a duplicate in flight")?;
                conflicts += 1;
            }
            _ => {
                return Err(format!(
                    "an answer is neither the original, a replay of it nor a 409: {} {}{} (the \
                     original: {})",
                    answer.status,
                    if answer.replayed { "(replayed) " } else { "" },
                    answer.body,
                    original.body
                ))
            }
        }
    }
    let ran = executions(&client, targets).await? - before;
    let rows = effects(ledger, "alice", &key).await?;
    eprintln!(
        "{requests} identical payments over {} instances: 1 original, {replays} replays, \
         {conflicts} × 409; the handler ran {ran} time(s); {} ledger row(s)",
        targets.len(),
        rows.len()
    );
    if ran != 1 {
        return Err(format!("the handler ran {ran} times, not once"));
    }
    if rows.len() != 1 || rows[0].fence != receipt(original)?.fence {
        return Err(format!(
            "the ledger holds {rows:?} for the key, not the one payment"
        ));
    }
    Ok(())
}

/// A process killed while its handler runs (after it has claimed: it announces the claim on
/// stdout), and the client's retry against another process once the claim's lease has run
/// out: the handler runs again there, under a newer fence, and the ledger holds exactly one
/// payment for the key, the retry's (the killed handler had not got to its effect).
///
/// `doomed` and `survivor` are started with `shared` (backend, URLs, namespace); `doomed`
/// also with `--announce --handler-ms 60000` and `survivor` with `--handler-ms 20`, both with
/// a lease of `lease`.
pub async fn killed_mid_request(
    doomed: &AppCommand,
    survivor: &AppCommand,
    shared: &[String],
    ledger: &Ledger,
    lease: Duration,
) -> Result<(), String> {
    let check = async {
        let with = |extra: &[&str]| -> Vec<String> {
            let lease_ms = lease.as_millis().to_string();
            shared
                .iter()
                .cloned()
                .chain(["--lease-ms".to_owned(), lease_ms])
                .chain(extra.iter().map(|s| (*s).to_owned()))
                .collect()
        };
        let mut first = doomed
            .launch(&with(&["--announce", "--handler-ms", "60000"]))
            .await?;
        let second = survivor.launch(&with(&["--handler-ms", "20"])).await?;
        let client = client(2);
        let key = unique("killed");
        let paid = body("acct-a", "acct-b", 700);

        let pending = {
            let (client, base, key, paid) = (
                client.clone(),
                first.base.clone(),
                key.clone(),
                paid.clone(),
            );
            tokio::spawn(async move {
                post_payment(&client, &base, Some("alice"), Some(&key), &paid).await
            })
        };
        // The handler announces its claim once it runs: kill the process then, mid-handler.
        let line = first.next_line(Duration::from_secs(30)).await?;
        let expected = format!("handling alice {key} fence ");
        let killed_fence: u64 = line
            .strip_prefix(&expected)
            .and_then(|fence| fence.parse().ok())
            .ok_or_else(|| format!("unexpected line from the app: {line:?}"))?;
        first.kill().await?;
        let lost = pending.await.map_err(|e| e.to_string())?;
        if lost.status != 0 {
            return Err(format!(
                "the killed process answered: {} {}",
                lost.status, lost.body
            ));
        }
        let rows = effects(ledger, "alice", &key).await?;
        if !rows.is_empty() {
            return Err(format!("the killed handler recorded a payment: {rows:?}"));
        }

        // The client retries on the other process; while the dead claim's lease lasts the key
        // is in flight (409, as the protocol says), then the retry runs.
        let started = Instant::now();
        let mut conflicts = 0;
        let retried = loop {
            let retry = post_payment(&client, &second.base, Some("alice"), Some(&key), &paid).await;
            if retry.status != 409 {
                break retry;
            }
            conflicts += 1;
            if started.elapsed() > lease * 10 + Duration::from_secs(10) {
                return Err(format!(
                    "still 409 {:?} after the lease of {lease:?} ran out",
                    started.elapsed()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        expect(&retried, 201, false, "the retry after the lease")?;
        let paid_receipt = receipt(&retried)?;
        if paid_receipt.fence <= killed_fence {
            return Err(format!(
                "the retry ran under fence {}, not newer than the killed claim's {killed_fence}",
                paid_receipt.fence
            ));
        }
        let replay = post_payment(&client, &second.base, Some("alice"), Some(&key), &paid).await;
        expect(&replay, 201, true, "a duplicate of the retry")?;
        let ran = executions(&client, std::slice::from_ref(&second.base)).await?;
        let rows = effects(ledger, "alice", &key).await?;
        eprintln!(
            "killed under fence {killed_fence}; the retry got {conflicts} × 409 over {:?}, then ran \
             under fence {}; ledger rows: {}",
            started.elapsed(),
            paid_receipt.fence,
            rows.len()
        );
        if ran != 1 {
            return Err(format!("the survivor's handler ran {ran} times, not once"));
        }
        match &rows[..] {
            [row] if row.fence == paid_receipt.fence && row.cents == 700 => Ok(()),
            _ => Err(format!(
                "the ledger holds {rows:?}, not the retry's one payment"
            )),
        }
    };
    timeout(LIMIT, check)
        .await
        .map_err(|_| "the check did not finish in time".to_owned())?
}
