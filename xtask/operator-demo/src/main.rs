//! `cargo xtask demo operator [--redis-url URL]`: the operator's 3 a.m., end to end, on Redis.
//!
//! 1. starts the flash-sale app (`flash-sale-axum`, its binary) on Redis in a namespace of
//!    this run, with its admin console mounted (`--admin-token`);
//! 2. holds `order:42` in that namespace with a lock client of its own, labelled
//!    `who=holder`, and queues three waiters behind it (`who=first`, `second`, `third`);
//! 3. reads the app's admin API (`GET /admin/api/key?key=order:42`, bearer token): the holder
//!    and the three waiters in order (and 401 without the token);
//! 4. runs `lockctl show`, `lockctl release --reason`, `lockctl audit` as subprocesses, and
//!    checks what follows: the holder's `lost()` says revoked (by whom, why), the first waiter
//!    gets the lock with a larger fencing token, a fenced resource refuses the old holder,
//!    the audit record is kept (lockctl and the admin API show it), and once the queue has
//!    gone through, `lockctl show` says free (exit 3).
//!
//! One `PASS`/`FAIL` line per step, with what it saw; exit status 1 after the first FAIL.
//! `--app PATH` and `--lockctl PATH` name the binaries (xtask builds them first).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use example_support::backend::redis_url;
use example_support::flags::{usage_error, Flags};
use lock_core::{
    FencingToken, HolderLabel, LockClient, LockGuard, LostReason, OwnerToken, RedisBackend,
};
use lock_harness::demo::admin::get;
use lock_harness::demo::inventory::unique;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

const FLAGS: &[&str] = &["redis-url", "app", "lockctl"];
const KEY: &str = "order:42";
/// `KEY` in a query string.
const KEY_QUERY: &str = "order%3A42";
const WAITERS: [&str; 3] = ["first", "second", "third"];
const REASON: &str = "stuck since the 03:00 deploy (operator demo)";
const OPERATOR: &str = "oncall@operator-demo";

/// A step's outcome: what it saw, or why it failed.
type Step = Result<String, String>;

/// A step failed (its line says why); the later steps need it, so the run ends.
struct Failed;

/// Prints the step's line.
fn report(name: &str, step: Step) -> Result<String, Failed> {
    match step {
        Ok(seen) => {
            println!("PASS  {name}: {seen}");
            Ok(seen)
        }
        Err(why) => {
            println!("FAIL  {name}: {why}");
            Err(Failed)
        }
    }
}

fn check(ok: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(why())
    }
}

/// What a `lockctl` run printed and how it ended.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn shown(&self) -> String {
        format!(
            "exit {}; stdout {:?}; stderr {:?}",
            self.code, self.stdout, self.stderr
        )
    }
}

struct Demo {
    lockctl: PathBuf,
    url: String,
    namespace: String,
}

impl Demo {
    /// Runs `lockctl --url URL --namespace NS args...` (30 s at most), echoing the command
    /// and indenting what it printed.
    async fn lockctl(&self, args: &[&str]) -> Result<Run, String> {
        println!(
            "      $ lockctl --url {} --namespace {} {}",
            self.url,
            self.namespace,
            args.iter()
                .map(|a| if a.contains(' ') {
                    format!("{a:?}")
                } else {
                    (*a).to_owned()
                })
                .collect::<Vec<_>>()
                .join(" ")
        );
        let output = tokio::time::timeout(
            Duration::from_secs(30),
            Command::new(&self.lockctl)
                .arg("--url")
                .arg(&self.url)
                .arg("--namespace")
                .arg(&self.namespace)
                .args(args)
                .kill_on_drop(true)
                .output(),
        )
        .await
        .map_err(|_| "lockctl did not finish within 30 s".to_owned())?
        .map_err(|e| format!("cannot run {}: {e}", self.lockctl.display()))?;
        let run = Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        for line in run.stdout.lines().chain(run.stderr.lines()) {
            println!("      | {line}");
        }
        Ok(run)
    }

    /// A lock client of this demo on the app's Redis and namespace, labelled `who=<who>`.
    async fn client(&self, who: &str) -> Result<LockClient, String> {
        let label = HolderLabel::from_process()
            .service("operator-demo", env!("CARGO_PKG_VERSION"))
            .and_then(|l| l.with("who", who))
            .map_err(|e| e.to_string())?;
        let backend = RedisBackend::connect(&self.url)
            .await
            .map_err(|e| format!("cannot reach Redis at {}: {e}", self.url))?;
        LockClient::builder(backend)
            .namespace(self.namespace.clone())
            .label(label)
            .build()
            .map_err(|e| e.to_string())
    }
}

/// Starts the app and waits (60 s at most) for its `listening on http://...` line; its
/// base URL. The process is killed when the child is dropped.
async fn start_app(app: &PathBuf, args: &[&str]) -> Result<(Child, String), String> {
    let mut child = Command::new(app)
        .args(args)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", app.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .map_err(|_| "the app did not listen within 60 s".to_owned())?
        .map_err(|e| e.to_string())?
        .ok_or("the app exited before it listened")?;
    let base = first
        .strip_prefix("listening on ")
        .ok_or_else(|| format!("unexpected first line {first:?}"))?
        .to_owned();
    // Keep reading, so the app never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, base))
}

/// `GET` of the admin API as JSON, with the token.
async fn admin_json(base: &str, path: &str, token: &str) -> Result<Value, String> {
    let (status, body) = get(base, path, Some(token)).await?;
    check(status == 200, || {
        format!("GET {path} answered {status}: {body}")
    })?;
    serde_json::from_str(&body).map_err(|e| format!("GET {path}: not JSON ({e}): {body}"))
}

/// The `who` of a label object of the admin API's JSON.
fn who(entry: &Value) -> &str {
    entry["label"]["who"].as_str().unwrap_or("?")
}

/// A resource that refuses a write with a token older than the newest it has seen.
#[derive(Default)]
struct FencedResource {
    newest: Option<FencingToken>,
}

impl FencedResource {
    fn write(&mut self, token: FencingToken) -> bool {
        if self.newest.is_some_and(|seen| token < seen) {
            return false;
        }
        self.newest = Some(token);
        true
    }
}

#[tokio::main]
async fn main() {
    let started = Instant::now();
    // Whatever fails, the app and the lock clients are dropped (the app killed) before the
    // process exits.
    let outcome = run().await;
    let elapsed = started.elapsed().as_secs_f64();
    match outcome {
        Ok(()) => println!("\noperator demo: PASS ({elapsed:.1} s)"),
        Err(Failed) => {
            println!("\noperator demo: FAIL ({elapsed:.1} s)");
            std::process::exit(1);
        }
    }
}

async fn run() -> Result<(), Failed> {
    let flags = Flags::of_process(FLAGS);
    let path = |name: &str| {
        PathBuf::from(
            flags
                .get(name)
                .unwrap_or_else(|| usage_error(&format!("--{name} PATH is needed"))),
        )
    };
    let (app, lockctl) = (path("app"), path("lockctl"));
    let demo = Demo {
        lockctl,
        url: redis_url(&flags),
        // A namespace of this run's own ('_': lockctl's tests keep to it too).
        namespace: unique("operator").replace('-', "_"),
    };
    let token = OwnerToken::random()
        .unwrap_or_else(|e| usage_error(&e.to_string()))
        .to_hex();
    println!(
        "operator demo: Redis {}, namespace {}, key {KEY}\n",
        demo.url, demo.namespace
    );

    // 1. The app, with its admin console behind a token.
    let app_args = [
        "--backend",
        "redis",
        "--redis-url",
        demo.url.as_str(),
        "--namespace",
        demo.namespace.as_str(),
        "--admin-token",
        token.as_str(),
        "--port",
        "0",
    ];
    let (app_process, base) = match start_app(&app, &app_args).await {
        Ok(started) => started,
        Err(why) => return report("the app starts with its admin console", Err(why)).map(drop),
    };
    report(
        "the app starts with its admin console",
        async {
            let (status, _) = get(&base, "/admin/api/keys", None).await?;
            check(status == 401, || format!("without the token: {status}"))?;
            let (status, body) = get(&base, "/admin/api/session", Some(&token)).await?;
            check(
                status == 200 && body.contains("\"force_release\":true"),
                || format!("with the token: {status} {body}"),
            )?;
            Ok(format!(
                "{} at {base}/admin/ (401 without the token, releases allowed with it)",
                app.file_name().unwrap_or_default().to_string_lossy()
            ))
        }
        .await,
    )?;

    // 2. The holder and its queue.
    let mut held: Option<LockGuard> = None;
    let mut waiters: Vec<JoinHandle<Result<LockGuard, String>>> = Vec::new();
    report(
        "a lock held with three waiters",
        async {
            let holder = demo.client("holder").await?;
            let guard = holder.lock(KEY).await.map_err(|e| e.to_string())?;
            let admin = holder.admin();
            for (n, name) in WAITERS.into_iter().enumerate() {
                let waiter = demo.client(name).await?;
                waiters.push(tokio::spawn(async move {
                    waiter.lock(KEY).await.map_err(|e| e.to_string())
                }));
                let deadline = Instant::now() + Duration::from_secs(10);
                loop {
                    let seen = admin.inspect(KEY).await.map_err(|e| e.to_string())?;
                    if seen.waiters.listed().len() > n {
                        break;
                    }
                    check(Instant::now() < deadline, || format!("{name} never queued"))?;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            let seen = format!(
                "{KEY} held by who=holder (owner {}, token {}), who=first, second, third queued",
                guard.owner_token().to_hex(),
                guard.fencing_token().get()
            );
            held = Some(guard);
            Ok(seen)
        }
        .await,
    )?;
    let held = held.expect("a PASS holds the lock");
    let old_token = held.fencing_token();

    // 3. The app's admin API sees them.
    report(
        "the admin API shows the holder and the waiters",
        async {
            let path = format!("/admin/api/key?key={KEY_QUERY}");
            let (status, _) = get(&base, &path, None).await?;
            check(status == 401, || format!("without the token: {status}"))?;
            let seen = admin_json(&base, &path, &token).await?;
            let holders = seen["holders"].as_array().cloned().unwrap_or_default();
            let waiting: Vec<&str> = seen["waiters"]
                .as_array()
                .map(|w| w.iter().map(who).collect())
                .unwrap_or_default();
            check(
                seen["status"] == "held"
                    && holders.len() == 1
                    && who(&holders[0]) == "holder"
                    && holders[0]["owner"] == held.owner_token().to_hex().as_str()
                    && holders[0]["fencing_token"] == old_token.get(),
                || format!("holders: {seen}"),
            )?;
            check(waiting == WAITERS, || {
                format!("waiters {waiting:?}: {seen}")
            })?;
            Ok(format!(
                "GET {path}: {}, holder who=holder token {}, waiters {}",
                seen["status"],
                old_token.get(),
                waiting.join(", ")
            ))
        }
        .await,
    )?;

    // 4. lockctl: show, release, audit.
    report(
        "lockctl show",
        async {
            let run = demo.lockctl(&["show", KEY]).await?;
            let owner = held.owner_token().to_hex();
            check(run.code == 0, || {
                format!("expected exit 0 (held): {}", run.shown())
            })?;
            check(
                run.stdout.contains("held")
                    && run.stdout.contains(&owner)
                    && run.stdout.contains("who=holder"),
                || format!("no holder who=holder {owner}: {}", run.shown()),
            )?;
            let at = |who: &str| run.stdout.find(&format!("who={who}"));
            let order: Vec<_> = WAITERS.iter().map(|w| at(w)).collect();
            check(
                order.iter().all(Option::is_some) && order.windows(2).all(|p| p[0] < p[1]),
                || format!("waiters not first, second, third: {}", run.shown()),
            )?;
            Ok("exit 0 (held): holder who=holder, waiters first, second, third in order".into())
        }
        .await,
    )?;
    report(
        "lockctl release --reason",
        async {
            let run = demo
                .lockctl(&["release", KEY, "--reason", REASON, "--operator", OPERATOR])
                .await?;
            check(run.code == 0, || {
                format!("expected exit 0: {}", run.shown())
            })?;
            Ok("exit 0".into())
        }
        .await,
    )?;
    report(
        "the old holder's lost() says revoked",
        async {
            let lost = tokio::time::timeout(Duration::from_secs(5), held.lost())
                .await
                .map_err(|_| "lost() did not fire within 5 s".to_owned())?;
            let expected = LostReason::Revoked {
                operator: OPERATOR.into(),
                reason: REASON.into(),
            };
            check(lost == expected, || format!("lost() said {lost:?}"))?;
            Ok(format!("{lost:?}"))
        }
        .await,
    )?;
    let mut queue = waiters.into_iter();
    let first = queue.next().expect("three waiters");
    let mut next: Option<LockGuard> = None;
    report(
        "the first waiter gets the lock with a larger fencing token",
        async {
            let guard = tokio::time::timeout(Duration::from_secs(10), first)
                .await
                .map_err(|_| "the first waiter did not get the lock within 10 s".to_owned())?
                .map_err(|e| e.to_string())??;
            check(guard.fencing_token() > old_token, || {
                format!(
                    "token {} after {}",
                    guard.fencing_token().get(),
                    old_token.get()
                )
            })?;
            let still_waiting = queue.as_slice().iter().all(|w| !w.is_finished());
            check(still_waiting, || "a later waiter got it first".to_owned())?;
            let seen = format!(
                "who=first holds it with token {} > {} (second and third still wait)",
                guard.fencing_token().get(),
                old_token.get()
            );
            next = Some(guard);
            Ok(seen)
        }
        .await,
    )?;
    let next = next.expect("a PASS holds the lock");
    report(
        "a fenced resource refuses the old holder",
        async {
            let mut resource = FencedResource::default();
            check(resource.write(next.fencing_token()), || {
                "the new holder's write was refused".to_owned()
            })?;
            check(!resource.write(old_token), || {
                "the old holder's write went through".to_owned()
            })?;
            Ok(format!(
                "write with {} accepted, then write with {} refused",
                next.fencing_token().get(),
                old_token.get()
            ))
        }
        .await,
    )?;
    report(
        "lockctl audit",
        async {
            let run = demo.lockctl(&["audit", KEY]).await?;
            check(run.code == 0, || {
                format!("expected exit 0: {}", run.shown())
            })?;
            check(
                run.stdout.contains(REASON) && run.stdout.contains(OPERATOR),
                || format!("no record by {OPERATOR} with the reason: {}", run.shown()),
            )?;
            let json = demo.lockctl(&["--json", "audit", KEY]).await?;
            let records: Value = serde_json::from_str(&json.stdout)
                .map_err(|e| format!("--json audit is not JSON ({e}): {}", json.shown()))?;
            let record = &records[0];
            check(
                record["reason"] == REASON
                    && record["operator"] == OPERATOR
                    && record["old_owner"] == held.owner_token().to_hex().as_str()
                    && record["old_token"] == old_token.get()
                    && record["new_token"].as_u64() > Some(old_token.get()),
                || format!("the record: {record}"),
            )?;
            Ok(format!(
                "exit 0: by {OPERATOR}, {REASON:?}, old owner who=holder, token {} -> {}",
                record["old_token"], record["new_token"]
            ))
        }
        .await,
    )?;
    report(
        "the admin API shows the audit record",
        async {
            let path = format!("/admin/api/audit?key={KEY_QUERY}");
            let records = admin_json(&base, &path, &token).await?;
            check(records[0]["reason"] == REASON, || {
                format!("GET {path}: {records}")
            })?;
            Ok(format!(
                "GET {path}: {} record, reason {}",
                records.as_array().map_or(0, Vec::len),
                records[0]["reason"]
            ))
        }
        .await,
    )?;

    // The rest of the queue goes through; then the key is free.
    report(
        "the queue goes through, then lockctl show says free",
        async {
            check(next.release().await.map_err(|e| e.to_string())?, || {
                "the first waiter no longer held it".to_owned()
            })?;
            for (name, waiter) in WAITERS[1..].iter().zip(queue) {
                let guard = tokio::time::timeout(Duration::from_secs(10), waiter)
                    .await
                    .map_err(|_| format!("{name} never got its turn"))?
                    .map_err(|e| e.to_string())??;
                guard.release().await.map_err(|e| e.to_string())?;
            }
            let run = demo.lockctl(&["show", KEY]).await?;
            check(run.code == 3, || {
                format!("expected exit 3 (free): {}", run.shown())
            })?;
            Ok("second and third held and released it in turn; lockctl show: exit 3 (free)".into())
        }
        .await,
    )?;
    drop(app_process);
    Ok(())
}
