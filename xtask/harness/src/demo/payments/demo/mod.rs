//! The idempotency scenario behind `cargo xtask demo idempotency`: payments instances (the
//! axum and actix-web apps, sharing one backend) under the retries and duplicates clients
//! really send, in three phases:
//!
//! 1. **duplicates**: every one of K keys is sent D times at once, spread over the instances
//!    (a client that timed out and retried, a double click). One request per key runs; the
//!    others get its receipt replayed, or a 409 while it runs, which the client retries after
//!    `Retry-After` and then gets the replay.
//! 2. **retries**: every key again, R times, after it completed: all replays, the handler
//!    does not run.
//! 3. **reused keys**: every fifth key with another amount: 422, nothing paid.
//!
//! The verdicts: the handler ran once per key; the ledger holds one payment per key and the
//! money moved is the sum of the K payments; every 201 of a key is the same receipt; no other
//! status; the layer's counters agree. Starting the instances is the caller's part (the
//! demo binary links both apps); this module needs their URLs, their [`PaymentService`]s (for
//! the handler's runs) and the ledger they share.

mod fire;
mod report;

use std::collections::BTreeMap;
use std::sync::Arc;

use example_support::payments::{Ledger, Payment, PaymentService};
use tokio::sync::Semaphore;

pub use self::fire::{fire, Request, Sent};
pub use self::report::{print_report, table_header, table_row, PhaseRow, Verdict};
use super::client::client;
use crate::demo::inventory::unique;
pub use crate::demo::progress::{Live, ProgressLine};

/// How many users the keys are spread over (each key belongs to one).
const USERS: usize = 8;

/// Every `REUSED`-th key is reused with another body in phase 3.
const REUSED: usize = 5;

/// Running instances and what the demo sends them.
#[derive(Clone, Debug)]
pub struct Demo {
    /// The instances' base URLs, used in turn.
    pub targets: Vec<String>,
    /// The instances (their handler's runs and counters).
    pub services: Vec<PaymentService>,
    /// The ledger they record in.
    pub ledger: Ledger,
    /// K: distinct idempotency keys (payments).
    pub keys: usize,
    /// D: copies of each key sent at once in phase 1.
    pub duplicates: usize,
    /// R: copies of each key sent again in phase 2.
    pub retries: usize,
    /// C: requests in flight at most.
    pub clients: usize,
    /// Draw a live progress line on stderr.
    pub progress: bool,
}

/// What the demo saw.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// One row per phase.
    pub phases: Vec<PhaseRow>,
    /// The promises and whether they held.
    pub verdicts: Vec<Verdict>,
    /// The first few unexpected answers.
    pub samples: Vec<String>,
}

impl Outcome {
    /// Whether every verdict passed.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(|v| v.passed)
    }

    /// Prints the table and the verdicts.
    pub fn print(&self) {
        print_report(&self.phases, &self.verdicts, &self.samples);
    }
}

/// Key `k`'s user, key and payment.
fn payment(run: &str, k: usize) -> (String, String, Payment) {
    let account = |n: usize| format!("acct-{n}");
    (
        format!("user-{}", k % USERS),
        format!("{run}-{k}"),
        Payment {
            from: account(k % 5),
            to: account(5 + k % 5),
            cents: 100 + (k as u64 * 7_919) % 9_900,
        },
    )
}

impl Demo {
    fn executions(&self) -> u64 {
        self.services.iter().map(PaymentService::executions).sum()
    }

    /// Runs the three phases and judges them.
    pub async fn run(&self) -> Result<Outcome, String> {
        let run = unique("pay");
        let client = client(self.clients);
        let slots = Arc::new(Semaphore::new(self.clients.max(1)));
        let n = self.targets.len();
        let payments: Vec<(String, String, Payment)> =
            (0..self.keys).map(|k| payment(&run, k)).collect();
        let request = |k: usize, copy: usize, body: String| {
            let (user, key, _) = &payments[k];
            Request {
                target: self.targets[(k + copy) % n].clone(),
                user: user.clone(),
                key: key.clone(),
                body,
            }
        };
        let phase = |name: &'static str, requests: Vec<Request>| {
            let client = client.clone();
            let slots = slots.clone();
            async move {
                let live = Arc::new(Live::default());
                let services = self.services.clone();
                let line = ProgressLine::start(
                    self.progress,
                    name,
                    live.clone(),
                    "handler runs",
                    move || services.iter().map(PaymentService::executions).sum(),
                );
                let before = self.executions();
                let sent = fire(&client, requests, &slots, &live).await;
                line.finish();
                let mut row = PhaseRow::new(name, &sent);
                row.ran = self.executions() - before;
                let effects = self.ledger.effects().await.map_err(|e| e.to_string())?;
                row.ledger = effects.len() as u64;
                row.moved = effects.iter().map(|e| e.cents).sum();
                Ok::<_, String>((row, sent))
            }
        };

        let first = (0..self.keys)
            .flat_map(|k| (0..self.duplicates).map(move |copy| (k, copy)))
            .map(|(k, copy)| request(k, copy, payments[k].2.to_json()))
            .collect();
        let (duplicates, first) = phase("duplicates", first).await?;
        let again = (0..self.keys)
            .flat_map(|k| (0..self.retries).map(move |copy| (k, copy + 1)))
            .map(|(k, copy)| request(k, copy, payments[k].2.to_json()))
            .collect();
        let (retries, again) = phase("retries", again).await?;
        let reused = (0..self.keys)
            .filter(|k| k % REUSED == 0)
            .map(|k| {
                let mut other = payments[k].2.clone();
                other.cents += 1;
                request(k, 1, other.to_json())
            })
            .collect();
        let (mismatches, reused) = phase("reused keys", reused).await?;

        let mut judge = Judge::default();
        judge.receipts(&first, &again);
        judge.reused(&reused);
        let phases = vec![duplicates, retries, mismatches];
        let verdicts = self.verdicts(&phases, &payments, &judge).await?;
        Ok(Outcome {
            phases,
            verdicts,
            samples: judge.samples,
        })
    }

    async fn verdicts(
        &self,
        phases: &[PhaseRow],
        payments: &[(String, String, Payment)],
        judge: &Judge,
    ) -> Result<Vec<Verdict>, String> {
        let total = PhaseRow::total(phases);
        let keys = self.keys as u64;
        let effects = self.ledger.effects().await.map_err(|e| e.to_string())?;
        let mut per_key: BTreeMap<(&str, &str), (u64, u64)> = BTreeMap::new();
        for effect in &effects {
            let entry = per_key.entry((&effect.scope, &effect.key)).or_default();
            entry.0 += 1;
            entry.1 += effect.cents;
        }
        let each_once = payments.iter().all(|(user, key, payment)| {
            per_key.get(&(user.as_str(), key.as_str())) == Some(&(1, payment.cents))
        });
        let expected: u64 = payments.iter().map(|(_, _, p)| p.cents).sum();
        let stats = self
            .services
            .iter()
            .map(PaymentService::idempotency_stats)
            .fold([0u64; 4], |sum, s| {
                [
                    sum[0] + s.executed,
                    sum[1] + s.replayed,
                    sum[2] + s.in_flight,
                    sum[3] + s.mismatched,
                ]
            });
        let reused = payments.len().div_ceil(REUSED) as u64;
        Ok(vec![
            Verdict::new(
                total.ran == keys && total.originals == keys,
                format!(
                    "handler executions: {} for {keys} distinct keys ({} original 201s)",
                    total.ran, total.originals
                ),
            ),
            Verdict::new(
                effects.len() as u64 == keys && each_once,
                format!(
                    "ledger: {} payments for {keys} keys{}",
                    effects.len(),
                    if each_once {
                        ", one per key, of its amount"
                    } else {
                        ", NOT one per key"
                    }
                ),
            ),
            Verdict::new(
                total.moved == expected,
                format!(
                    "money moved: {} ¢, the sum of the {keys} distinct payments is {expected} ¢",
                    total.moved
                ),
            ),
            Verdict::new(
                judge.receipts_ok,
                format!(
                    "duplicates: {} replays, each its key's original receipt; {} × 409, retried",
                    total.replays, total.conflicts
                ),
            ),
            Verdict::new(
                judge.reused_ok && total.mismatches == reused,
                format!(
                    "reused keys: {} × 422 for {reused} keys sent with another amount",
                    total.mismatches
                ),
            ),
            Verdict::new(total.other == 0, format!("other statuses: {}", total.other)),
            Verdict::new(
                stats == [keys, total.replays, total.conflicts, total.mismatches],
                format!(
                    "the layers' counters: executed {}, replayed {}, in flight {}, mismatched {}",
                    stats[0], stats[1], stats[2], stats[3]
                ),
            ),
        ])
    }
}

/// The per-key checks of the answers.
#[derive(Debug)]
struct Judge {
    receipts_ok: bool,
    reused_ok: bool,
    samples: Vec<String>,
}

impl Default for Judge {
    fn default() -> Self {
        Self {
            receipts_ok: true,
            reused_ok: true,
            samples: Vec::new(),
        }
    }
}

impl Judge {
    fn sample(&mut self, text: String) {
        if self.samples.len() < 5 {
            self.samples.push(text);
        }
    }

    /// Phases 1 and 2: per key, one original 201, and every 201 its body; the last answer of
    /// every request a 201 (a client that gave up on 409s fails this), phase 2 all replays.
    fn receipts(&mut self, first: &[Sent], again: &[Sent]) {
        let mut originals: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
        for sent in first.iter().chain(again) {
            let id = (sent.request.user.as_str(), sent.request.key.as_str());
            let entry = originals.entry(id).or_default();
            for answer in sent.answers.iter().filter(|a| a.original()) {
                entry.push(&answer.body);
            }
        }
        for sent in first.iter().chain(again) {
            let id = (sent.request.user.as_str(), sent.request.key.as_str());
            let last = sent.last();
            let problem = match originals[&id][..] {
                [original] if last.status == 201 && last.body == original => None,
                [_] => Some(format!("{} {}", last.status, last.body)),
                ref many => Some(format!("{} original answers", many.len())),
            };
            if let Some(problem) = problem {
                self.receipts_ok = false;
                self.sample(format!("key {}/{}: {problem}", id.0, id.1));
            }
        }
        for sent in again {
            if !sent.answers.iter().all(|a| a.status == 201 && a.replayed) {
                self.receipts_ok = false;
                self.sample(format!(
                    "key {}: a retry after completion was not a replay: {}",
                    sent.request.key,
                    sent.last().status
                ));
            }
        }
    }

    /// Phase 3: every answer a 422.
    fn reused(&mut self, reused: &[Sent]) {
        for sent in reused {
            let last = sent.last();
            if sent.answers.len() != 1 || last.status != 422 {
                self.reused_ok = false;
                self.sample(format!(
                    "key {} reused: {} {}",
                    sent.request.key, last.status, last.body
                ));
            }
        }
    }
}
