//! The admin console in a real browser: headless Chromium, driven over WebDriver (fantoccini)
//! through a `chromedriver` this test starts itself, against the console mounted at `/admin`
//! of an axum app. The page shows a held lock with its holder's label and three waiters in
//! queue order; releasing it by force with a reason hands the lock to the first waiter, fires
//! the old holder's `lost()` as revoked, makes the old holder's write refused by a fenced
//! resource, and lists the audit entry. Screenshots (before and after the release) go to
//! `target/screenshots/` at the workspace root.
//!
//! Needs `LOCK_TEST_CHROMEDRIVER` (the `chromedriver` program; `cargo xtask test` installs
//! Debian's `chromium` and `chromium-driver` and sets it) and Chromium at `/usr/bin/chromium`
//! or `LOCK_TEST_CHROMIUM`. Without it the test says it skipped, and fails under
//! `LOCK_TEST_REQUIRE_SERVERS=1`.

use std::future::Future;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::Router;
use fantoccini::{Client, ClientBuilder, Locator};
use lock_core::cache::Cache;
use lock_core::http::admin::{AdminConsole, TokenAuth};
use lock_core::memory::MemoryResultStore;
use lock_core::{FencingToken, HolderLabel, LockClient, LockGuard, LostReason, MemoryBackend};
use serde_json::{json, Value};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

const TOKEN: &str = "a-browser-test-admin-token";
const KEY: &str = "order:42";
const REASON: &str = "stuck since the 03:00 deploy (browser test)";
/// Everything the test waits for together, browser start included.
const WHOLE_TEST: Duration = Duration::from_secs(60);
/// One thing the page should come to show.
const PAGE_WAIT: Duration = Duration::from_secs(15);

/// A resource that refuses a write with a token older than the newest it has seen.
#[derive(Default)]
struct FencedResource {
    newest: Mutex<Option<FencingToken>>,
}

impl FencedResource {
    fn write(&self, token: FencingToken) -> bool {
        let mut newest = self.newest.lock().unwrap();
        if newest.is_some_and(|seen| token < seen) {
            return false;
        }
        *newest = Some(token);
        true
    }
}

/// A lock client on the shared memory backend, labelled `who=<who>`.
fn client(backend: &MemoryBackend, who: &str) -> LockClient {
    LockClient::builder(backend.clone())
        .label(HolderLabel::from_process().with("who", who).unwrap())
        .build()
        .unwrap()
}

/// A free loopback port (bound, read, let go: the driver takes it a moment later).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `target/screenshots/` at the workspace root.
fn screenshot_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("target")
        .join("screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Starts `chromedriver` on a free loopback port; killed when the child is dropped.
fn start_driver(program: &str) -> (Child, String) {
    let port = free_port();
    let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("chromedriver.log");
    let child = Command::new(program)
        .arg(format!("--port={port}"))
        .arg(format!("--log-path={}", log.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    (child, format!("http://127.0.0.1:{port}"))
}

/// A WebDriver session on headless Chromium, retried while the driver starts listening.
async fn connect(driver: &str) -> Client {
    let chromium =
        std::env::var("LOCK_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("browserName".into(), json!("chrome"));
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": [
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--window-size=1400,1000",
            ],
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match ClientBuilder::new(connector.clone())
            .capabilities(capabilities.clone())
            .connect(driver)
            .await
        {
            Ok(client) => return client,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("no WebDriver session from {driver}: {e}"),
        }
    }
}

/// Polls `probe` until it answers `Some`, for at most [`PAGE_WAIT`]; `what` names it. On
/// timeout, fails with the page's address and text.
async fn until<T, F, Fut>(browser: &Client, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + PAGE_WAIT;
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        if Instant::now() >= deadline {
            let url = browser.current_url().await.map(|u| u.to_string());
            let text = browser
                .execute(
                    "return document.body ? document.body.innerText : '';",
                    vec![],
                )
                .await;
            panic!("the page never showed {what}; at {url:?} it shows {text:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The row of `key` as the page shows it: its holders' labels and its waiters, in order, and
/// its last cell (permits, or a latch's count).
#[derive(Debug)]
struct Row {
    holders: Vec<String>,
    waiters: Vec<String>,
    amount: String,
}

async fn row(browser: &Client, key: &str) -> Option<Row> {
    let script = r#"
        const row = [...document.querySelectorAll('#keys tbody tr[data-key]')]
            .find((r) => r.dataset.key === arguments[0]);
        if (!row) return null;
        const texts = (sel) => [...row.querySelectorAll(sel)].map((e) => e.textContent);
        return {
            holders: texts('.holders .holder .label'),
            waiters: texts('.waiters li'),
            amount: row.cells[row.cells.length - 1].textContent,
        };
    "#;
    let seen = browser.execute(script, vec![json!(key)]).await.ok()?;
    let texts = |name: &str| -> Vec<String> {
        seen.get(name)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    seen.is_object().then(|| Row {
        holders: texts("holders"),
        waiters: texts("waiters"),
        amount: seen
            .get("amount")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    })
}

/// The text of every element `selector` matches.
async fn texts(browser: &Client, selector: &str) -> Vec<String> {
    let script = "return [...document.querySelectorAll(arguments[0])].map((e) => e.textContent);";
    match browser.execute(script, vec![json!(selector)]).await {
        Ok(Value::Array(items)) => items
            .into_iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

async fn screenshot(browser: &Client, name: &str) -> PathBuf {
    let png = browser.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    let path = screenshot_dir().join(name);
    std::fs::write(&path, png).unwrap();
    eprintln!("screenshot: {}", path.display());
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_chromium_releases_a_held_lock_to_its_first_waiter() {
    let Some(driver_program) = lock_testing::server_url("LOCK_TEST_CHROMEDRIVER").unwrap() else {
        return;
    };
    let (driver, driver_url) = start_driver(&driver_program);
    let deadline = tokio::time::Instant::now() + WHOLE_TEST;
    let browser = tokio::time::timeout_at(deadline, connect(&driver_url))
        .await
        .expect("no browser within the test's time");
    // The scenario runs as a task so that the browser is closed (and Chromium quits) whatever
    // happens in it; its panic is raised again after.
    let scenario = tokio::spawn(tokio::time::timeout_at(deadline, scenario(browser.clone())));
    let outcome = scenario.await;
    if let Err(e) = browser.close().await {
        eprintln!("closing the browser: {e}");
    }
    drop(driver);
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(_)) => panic!("the browser test took more than {WHOLE_TEST:?}"),
        Err(failed) => std::panic::resume_unwind(failed.into_panic()),
    }
}

async fn scenario(browser: Client) {
    let backend = MemoryBackend::new();
    let operator = client(&backend, "console");
    // A cache whose computation of `product:1` runs until told to finish, and a latch.
    let products = Cache::builder(MemoryResultStore::new(), backend.clone())
        .namespace("products")
        .label(HolderLabel::from_process().with("who", "worker").unwrap())
        .build()
        .unwrap();
    let (finish, finished) = tokio::sync::oneshot::channel::<()>();
    let computing = tokio::spawn({
        let products = products.clone();
        async move {
            products
                .entry("product:1")
                .try_get_with(|| async move {
                    finished.await.ok();
                    Ok::<_, std::io::Error>(b"lamp".to_vec())
                })
                .await
                .unwrap()
        }
    });
    let warm_up = operator.latch("warm-up");
    assert!(warm_up.try_set_count(2).await.unwrap());
    let console = AdminConsole::builder(operator.clone(), TokenAuth::new(TOKEN).unwrap())
        .cache(&products)
        .allow_force_release()
        .refresh(Duration::from_millis(300))
        .build();
    // `nest_service`, as the docs say: axum's `nest` does not route `/admin/`, the page's own
    // address, where the login sends the browser back.
    let app = Router::new().nest_service("/admin", lock_tower::admin::router(console));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    // The holder, then three waiters queued in order.
    let holder = client(&backend, "holder");
    let held = holder.lock(KEY).await.unwrap();
    let old_token = held.fencing_token();
    let admin = operator.admin();
    let mut waiters: Vec<JoinHandle<LockGuard>> = Vec::new();
    for (n, who) in ["first", "second", "third"].into_iter().enumerate() {
        let waiter = client(&backend, who);
        waiters.push(tokio::spawn(async move { waiter.lock(KEY).await.unwrap() }));
        until(&browser, &format!("{who} queued (inspect)"), || async {
            (admin.inspect(KEY).await.unwrap().waiters.listed().len() > n).then_some(())
        })
        .await;
    }

    // Log in through the form.
    browser.goto(&format!("{base}/admin/")).await.unwrap();
    let token = browser.find(Locator::Id("token")).await.unwrap();
    token.send_keys(TOKEN).await.unwrap();
    browser
        .find(Locator::Id("login"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();

    // The row shows the holder's label and the three waiters, first first.
    let shown = until(&browser, "the holder and three waiters", || async {
        let row = row(&browser, KEY).await?;
        let ordered = row.waiters.len() == 3
            && ["who=first", "who=second", "who=third"]
                .iter()
                .zip(&row.waiters)
                .all(|(who, text)| text.contains(who));
        (row.holders.len() == 1 && row.holders[0].contains("who=holder") && ordered).then_some(row)
    })
    .await;
    eprintln!("the page shows {shown:?}");
    // The latch's count beside the locks; the computation in flight in the cache's table.
    until(&browser, "the latch's count", || async {
        let row = row(&browser, "warm-up").await?;
        row.amount.starts_with("count 2").then_some(())
    })
    .await;
    until(
        &browser,
        "the computation in flight, by its worker",
        || async {
            let cells = texts(&browser, "#keys-1 tbody tr[data-key='product:1'] td").await;
            cells.iter().any(|c| c.contains("who=worker")).then_some(())
        },
    )
    .await;
    assert!(
        shown.holders[0].contains("pid="),
        "the default label: {shown:?}"
    );
    screenshot(&browser, "admin-console-held.png").await;

    // Release it by force, with a reason. The table is rebuilt on every refresh, so the
    // button found may be gone by the time it is clicked: find it again then.
    until(
        &browser,
        "a release button that takes the click",
        || async {
            let selector = "#keys tbody tr[data-key] button.release";
            let buttons = browser.find_all(Locator::Css(selector)).await.ok()?;
            for button in buttons {
                if button.attr("data-key").await.ok()?.as_deref() == Some(KEY) {
                    return button.click().await.ok();
                }
            }
            None
        },
    )
    .await;
    let form_shown = browser
        .find(Locator::Id("release-form"))
        .await
        .unwrap()
        .is_displayed()
        .await
        .unwrap();
    assert!(form_shown, "the release form did not open");
    let reason = browser.find(Locator::Id("reason")).await.unwrap();
    reason.send_keys(REASON).await.unwrap();
    let released_at = Instant::now();
    browser
        .find(Locator::Id("confirm"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();

    // The old holder learns it was revoked, by whom and why.
    let lost = tokio::time::timeout(Duration::from_secs(5), held.lost())
        .await
        .expect("the old holder's lost() never fired");
    assert_eq!(
        lost,
        LostReason::Revoked {
            operator: "admin".into(),
            reason: REASON.into()
        }
    );
    eprintln!("lost() fired {:?} after the click", released_at.elapsed());
    // The first waiter has it, with a later token.
    let mut waiters = waiters.into_iter();
    let first = waiters.next().unwrap();
    let next = tokio::time::timeout(Duration::from_secs(10), first)
        .await
        .expect("the first waiter was not handed the lock")
        .unwrap();
    assert!(
        next.fencing_token() > old_token,
        "{:?} after {old_token:?}",
        next.fencing_token()
    );
    for later in waiters.as_slice() {
        assert!(!later.is_finished(), "a later waiter got the lock first");
    }
    // A fenced resource takes the new holder's write and refuses the old holder's.
    let resource = FencedResource::default();
    assert!(resource.write(next.fencing_token()));
    assert!(
        !resource.write(old_token),
        "the old holder's write went through"
    );

    // The page says so, and lists the audit entry with the reason.
    let message = until(&browser, "the release's message", || async {
        let text = texts(&browser, "#message").await.pop()?;
        text.starts_with("Released").then_some(text)
    })
    .await;
    assert!(message.contains(KEY), "{message}");
    until(&browser, "the audit entry with the reason", || async {
        texts(&browser, "#audit tbody tr .reason")
            .await
            .iter()
            .any(|r| r == REASON)
            .then_some(())
    })
    .await;
    let after = until(
        &browser,
        "the first waiter holding, two waiting",
        || async {
            let row = row(&browser, KEY).await?;
            (row.holders.len() == 1
                && row.holders[0].contains("who=first")
                && row.waiters.len() == 2)
                .then_some(row)
        },
    )
    .await;
    assert!(after.waiters[0].contains("who=second") && after.waiters[1].contains("who=third"));
    screenshot(&browser, "admin-console.png").await;
    // Only the console's release is on record.
    let trail = admin.audit(Some(KEY), 10).await.unwrap();
    assert_eq!(trail.len(), 1, "{trail:?}");
    assert_eq!(trail[0].reason, REASON);
    assert_eq!(trail[0].old_token, old_token);

    // The computation ends; its row goes.
    finish.send(()).unwrap();
    computing.await.unwrap();
    until(&browser, "the computation gone from the page", || async {
        texts(&browser, "#keys-1 tbody tr[data-key='product:1']")
            .await
            .is_empty()
            .then_some(())
    })
    .await;

    // The rest of the queue goes through.
    assert!(next.release().await.unwrap());
    for later in waiters {
        let guard = tokio::time::timeout(Duration::from_secs(5), later)
            .await
            .expect("a waiter never got its turn")
            .unwrap();
        assert!(guard.release().await.unwrap());
    }
    server.abort();
}
