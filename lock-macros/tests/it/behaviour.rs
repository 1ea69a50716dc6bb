//! What `#[distributed_lock]` does at run time, on the memory backend and on a real Redis
//! (`LOCK_TEST_REDIS_URL`): exclusion across tasks and processes, busy handling, fencing,
//! cancel-on-loss, reentrancy and key rendering.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use lock_core::{
    distributed_lock, FencingToken, KeyTemplate, LockClient, LockError, LockOwner, LostReason,
};
use tokio::sync::oneshot;
use tokio::time::{timeout, Instant};

use crate::support::processes::{Counters, SecondProcess};
use crate::support::{self, Rig};

/// Every test ends within this, pass or fail.
const BOUND: Duration = Duration::from_secs(20);

/// Runs a scenario on the memory backend and on Redis.
macro_rules! on_both_backends {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn memory() {
                let rig = super::support::memory();
                tokio::time::timeout(super::BOUND, super::$scenario(rig)).await.expect("timed out");
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                let Some(rig) = super::support::redis().await else { return };
                tokio::time::timeout(super::BOUND, super::$scenario(rig)).await.expect("timed out");
            }
        }
    )*};
}

on_both_backends!(
    excludes_other_tasks,
    reject_fails_at_once,
    skip_returns_default_without_running,
    wait_gives_up_with_busy_then_gets_a_freed_lock,
    fence_increases,
    cancel_stops_the_body_when_the_lease_is_lost,
    cancel_reports_a_loss_the_body_outran,
    continue_lets_the_body_finish,
    nested_fns_on_the_same_key_reenter,
    keys_render_from_fields_indices_and_escapes,
    template_keys_never_collide,
);

/// Counts how many bodies run at once.
#[derive(Default)]
struct Probe {
    inside: AtomicUsize,
    most_inside: AtomicUsize,
    runs: AtomicUsize,
}

impl Probe {
    async fn occupy(&self) {
        let now = self.inside.fetch_add(1, SeqCst) + 1;
        self.most_inside.fetch_max(now, SeqCst);
        // Hold the critical section across awaits, so an overlap would be seen.
        tokio::time::sleep(Duration::from_millis(2)).await;
        tokio::task::yield_now().await;
        self.inside.fetch_sub(1, SeqCst);
        self.runs.fetch_add(1, SeqCst);
    }
}

#[distributed_lock(key = "excl:{id}", name = "t", client = client)]
async fn exclusive(client: LockClient, id: u32, probe: Arc<Probe>) -> Result<(), LockError> {
    probe.occupy().await;
    Ok(())
}

async fn excludes_other_tasks(rig: Rig) {
    let probe = Arc::new(Probe::default());
    let tasks: Vec<_> = (0..8)
        .map(|_| tokio::spawn(exclusive(rig.client.clone(), 1, probe.clone())))
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(probe.runs.load(SeqCst), 8);
    assert_eq!(probe.most_inside.load(SeqCst), 1, "two bodies overlapped");
}

/// Holds `key` (without namespace) as another owner would.
async fn hold(rig: &Rig, key: &str) -> lock_core::LockGuard {
    rig.client
        .lock(key)
        .owner(&LockOwner::new())
        .try_acquire()
        .await
        .unwrap()
        .expect("free")
}

#[distributed_lock(key = "busy:{id}", name = "t", client = client, on_busy = "reject")]
async fn reject(client: &LockClient, id: u32, probe: &Probe) -> Result<u32, LockError> {
    probe.runs.fetch_add(1, SeqCst);
    Ok(id)
}

async fn reject_fails_at_once(rig: Rig) {
    let probe = Probe::default();
    let held = hold(&rig, "t:busy:1").await;
    let started = Instant::now();
    match reject(&rig.client, 1, &probe).await {
        Err(LockError::Busy { key, waited }) => {
            assert_eq!(key, "t:busy:1");
            assert_eq!(waited, Duration::ZERO);
        }
        other => panic!("expected busy, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(probe.runs.load(SeqCst), 0, "the body ran while busy");
    // Another key is free, and the freed key runs.
    assert_eq!(reject(&rig.client, 2, &probe).await.unwrap(), 2);
    held.release().await.unwrap();
    assert_eq!(reject(&rig.client, 1, &probe).await.unwrap(), 1);
    assert_eq!(probe.runs.load(SeqCst), 2);
}

#[distributed_lock(key = "busy:{id}", name = "t", client = client, on_busy = "skip")]
async fn skip(client: &LockClient, id: u32, probe: &Probe) -> Result<Option<u32>, LockError> {
    probe.runs.fetch_add(1, SeqCst);
    Ok(Some(id))
}

async fn skip_returns_default_without_running(rig: Rig) {
    let probe = Probe::default();
    let held = hold(&rig, "t:busy:3").await;
    assert_eq!(skip(&rig.client, 3, &probe).await.unwrap(), None);
    assert_eq!(probe.runs.load(SeqCst), 0, "the body ran while busy");
    held.release().await.unwrap();
    assert_eq!(skip(&rig.client, 3, &probe).await.unwrap(), Some(3));
    assert_eq!(probe.runs.load(SeqCst), 1);
}

#[distributed_lock(key = "busy:{id}", name = "t", client = client, wait = "150ms")]
async fn wait_briefly(client: LockClient, id: u32) -> Result<u32, LockError> {
    Ok(id)
}

#[distributed_lock(key = "busy:{id}", name = "t", client = client, wait = "10s")]
async fn wait_long(
    client: LockClient,
    id: u32,
    waiting: oneshot::Sender<()>,
) -> Result<u32, LockError> {
    waiting.send(()).ok();
    Ok(id)
}

async fn wait_gives_up_with_busy_then_gets_a_freed_lock(rig: Rig) {
    let held = hold(&rig, "t:busy:4").await;
    let started = Instant::now();
    match wait_briefly(rig.client.clone(), 4).await {
        Err(LockError::Busy { waited, .. }) => assert_eq!(waited, Duration::from_millis(150)),
        other => panic!("expected busy, got {other:?}"),
    }
    assert!(started.elapsed() >= Duration::from_millis(150));

    let (ran, ran_rx) = oneshot::channel();
    let waiter = tokio::spawn(wait_long(rig.client.clone(), 4, ran));
    tokio::task::yield_now().await;
    held.release().await.unwrap();
    ran_rx.await.expect("the body ran once the lock was freed");
    assert_eq!(waiter.await.unwrap().unwrap(), 4);
}

#[distributed_lock(key = "fenced", name = "t", client = client, fence = token)]
async fn fenced(client: &LockClient) -> Result<FencingToken, LockError> {
    Ok(token)
}

async fn fence_increases(rig: Rig) {
    let mut last = FencingToken::new(0);
    for _ in 0..3 {
        let token = fenced(&rig.client).await.unwrap();
        assert!(token > last, "fence {token} after {last}");
        last = token;
    }
}

/// Sets its flag when dropped: the body's future was dropped.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, SeqCst);
    }
}

#[distributed_lock(key = "lost", name = "t", client = client)]
async fn cancelled(
    client: LockClient,
    started: oneshot::Sender<()>,
    dropped: Arc<AtomicBool>,
) -> Result<(), LockError> {
    let _flag = SetOnDrop(dropped);
    started.send(()).ok();
    std::future::pending::<()>().await;
    Ok(())
}

async fn cancel_stops_the_body_when_the_lease_is_lost(rig: Rig) {
    let (started, started_rx) = oneshot::channel();
    let dropped = Arc::new(AtomicBool::new(false));
    let call = tokio::spawn(cancelled(rig.client.clone(), started, dropped.clone()));
    started_rx.await.unwrap();

    assert!(rig.delete_behind("t:lost").await, "the lock was not held");
    let deleted_at = Instant::now();
    let result = call.await.unwrap();
    let took = deleted_at.elapsed();

    match result {
        Err(LockError::LeaseLost { key, reason }) => {
            assert_eq!(key, "t:lost");
            assert_eq!(reason, LostReason::NotOwner);
        }
        other => panic!("expected a lost lease, got {other:?}"),
    }
    assert!(dropped.load(SeqCst), "the body's future was not dropped");
    // Within one renewal period, plus scheduling slack for a loaded machine.
    let bound = rig.detection_bound() + Duration::from_millis(150);
    assert!(took <= bound, "stopped after {took:?}, bound {bound:?}");
}

/// A body's two moments: it says it started, then waits for the test to let it finish.
struct Gate {
    started: oneshot::Sender<()>,
    proceed: oneshot::Receiver<()>,
}

impl Gate {
    /// The gate, and the test's ends of it: `started` resolves once the body runs, sending
    /// on `proceed` lets it finish.
    fn new() -> (Self, oneshot::Receiver<()>, oneshot::Sender<()>) {
        let (started, started_rx) = oneshot::channel();
        let (proceed, proceed_rx) = oneshot::channel();
        let gate = Self {
            started,
            proceed: proceed_rx,
        };
        (gate, started_rx, proceed)
    }

    /// Says the body started, waits to be let go, and finishes.
    async fn pass(self) -> Result<&'static str, LockError> {
        self.started.send(()).ok();
        self.proceed.await.ok();
        Ok("finished")
    }
}

#[distributed_lock(key = "outran", name = "t", client = client)]
async fn outran(client: LockClient, gate: Gate) -> Result<&'static str, LockError> {
    gate.pass().await
}

async fn cancel_reports_a_loss_the_body_outran(rig: Rig) {
    let (gate, started_rx, proceed) = Gate::new();
    let call = tokio::spawn(outran(rig.client.clone(), gate));
    started_rx.await.unwrap();
    // On Redis the body completes before the next renewal could notice the delete: the
    // release finds the lock gone, and the result must still be the lost lease.
    assert!(rig.delete_behind("t:outran").await, "the lock was not held");
    proceed.send(()).ok();
    match call.await.unwrap() {
        Err(error) => assert!(error.is_lost(), "expected a lost lease, got {error:?}"),
        Ok(done) => panic!("a body that outran a lost lease returned {done:?}"),
    }
}

#[distributed_lock(key = "lost-ok", name = "t", client = client, on_lost = "continue")]
async fn continued(client: LockClient, gate: Gate) -> Result<&'static str, LockError> {
    gate.pass().await
}

async fn continue_lets_the_body_finish(rig: Rig) {
    let (gate, started_rx, proceed) = Gate::new();
    let call = tokio::spawn(continued(rig.client.clone(), gate));
    started_rx.await.unwrap();
    assert!(
        rig.delete_behind("t:lost-ok").await,
        "the lock was not held"
    );
    // What is tested is that the loss, once the watchdog has seen it, does not stop the body.
    tokio::time::sleep(rig.detection_bound() * 2 + Duration::from_millis(20)).await;
    assert!(!call.is_finished(), "the body was stopped");
    proceed.send(()).unwrap();
    assert_eq!(call.await.unwrap().unwrap(), "finished");
}

#[distributed_lock(key = "job:{id}", name = "re", client = client, on_busy = "reject", fence = fence)]
async fn inner(client: &LockClient, id: u32) -> Result<FencingToken, LockError> {
    Ok(fence)
}

#[distributed_lock(key = "job:{id}", name = "re", client = client, fence = fence)]
async fn outer(client: &LockClient, id: u32) -> Result<(FencingToken, FencingToken), LockError> {
    // Same key, same task: a re-entry, where another owner would be rejected.
    let inner = inner(client, id).await?;
    Ok((fence, inner))
}

async fn nested_fns_on_the_same_key_reenter(rig: Rig) {
    let (outer_fence, inner_fence) = outer(&rig.client, 9).await.unwrap();
    assert_eq!(outer_fence, inner_fence, "one lease, one fence");
    // Both holds were given back.
    assert!(hold(&rig, "re:job:9").await.release().await.unwrap());
    assert_eq!(rig.client.held_leases(), 0);
}

struct Order {
    id: u64,
    line: (u32, String),
}

#[distributed_lock(
    key = "order:{order.id}/{order.line.1}/{pair.0}/{{literal}}",
    name = "render",
    client = client,
    on_busy = "reject"
)]
async fn rendered(client: &LockClient, order: Order, pair: (char, u8)) -> Result<(), LockError> {
    let _ = (order.line.0, pair.1);
    Ok(())
}

// Without `name`, the key is the rendered template and nothing else: not the fn's name nor
// its module path, so renaming or moving a fn keeps its key.
#[distributed_lock(key = "fixed:{id}", client = client, on_busy = "reject")]
async fn default_name(client: &LockClient, id: u32) -> Result<(), LockError> {
    Ok(())
}

mod elsewhere {
    use lock_core::{distributed_lock, LockClient, LockError};

    // The same attribute on a fn with another name, in another module: the same key.
    #[distributed_lock(key = "fixed:{n}", client = client, on_busy = "reject")]
    pub(super) async fn renamed(client: &LockClient, n: u32) -> Result<(), LockError> {
        Ok(())
    }

    // A key expression without `name` is its `Display` text as is.
    #[distributed_lock(key = format!("expr-{}", ids.len()), client = client, on_busy = "reject")]
    pub(super) async fn expression(client: &LockClient, ids: Vec<u32>) -> Result<(), LockError> {
        Ok(())
    }
}

#[distributed_lock(key = format!("expr-{}", ids.len()), name = "render", client = client, on_busy = "reject")]
async fn expression_key(client: &LockClient, ids: Vec<u32>) -> Result<usize, LockError> {
    Ok(ids.len())
}

/// The key the fn locked, read from the busy error it gets while another owner holds it.
async fn busy_key<F>(rig: &Rig, expected: &str, call: F)
where
    F: std::future::Future<Output = Result<(), LockError>>,
{
    let held = hold(rig, expected).await;
    match call.await {
        Err(LockError::Busy { key, .. }) => assert_eq!(key, expected),
        other => panic!("expected busy on {expected:?}, got {other:?}"),
    }
    held.release().await.unwrap();
}

async fn keys_render_from_fields_indices_and_escapes(rig: Rig) {
    let order = || Order {
        id: 42,
        line: (1, "blue".into()),
    };
    busy_key(
        &rig,
        "render:order:42/blue/x/{literal}",
        rendered(&rig.client, order(), ('x', 0)),
    )
    .await;
    busy_key(&rig, "fixed:7", default_name(&rig.client, 7)).await;
    busy_key(&rig, "fixed:7", elsewhere::renamed(&rig.client, 7)).await;
    busy_key(
        &rig,
        "expr-2",
        elsewhere::expression(&rig.client, vec![1, 2]),
    )
    .await;
    assert_eq!(
        KeyTemplate::parse("fixed:{id}")
            .unwrap()
            .render(&[&7])
            .unwrap(),
        "fixed:7"
    );
    let held = hold(&rig, "render:expr-3").await;
    assert!(expression_key(&rig.client, vec![1, 2, 3])
        .await
        .unwrap_err()
        .is_busy());
    assert_eq!(expression_key(&rig.client, vec![1]).await.unwrap(), 1);
    held.release().await.unwrap();
}

#[distributed_lock(key = "pair:{a}:{b}", name = "render", client = client, on_busy = "reject")]
async fn pair(client: &LockClient, a: &str, b: &str) -> Result<(), LockError> {
    let _ = (a, b);
    Ok(())
}

async fn template_keys_never_collide(rig: Rig) {
    // Plain interpolation gave both `render:pair:1:2:3`: one would have waited for the other.
    busy_key(&rig, "render:pair:1%3A2:3", pair(&rig.client, "1:2", "3")).await;
    busy_key(&rig, "render:pair:1:2%3A3", pair(&rig.client, "1", "2:3")).await;
    let held = hold(&rig, "render:pair:1%3A2:3").await;
    pair(&rig.client, "1", "2:3").await.unwrap();
    held.release().await.unwrap();
    // `KeyTemplate` builds the key the attribute takes, `%`, NUL and non-ASCII included.
    let template = KeyTemplate::parse("render:pair:{a}:{b}").unwrap();
    for (a, b) in [("100%", ":"), ("nul\0", ""), ("é:ü", "%3A")] {
        let key = template.render(&[&a, &b]).unwrap();
        assert!(!key.contains('\0'), "{key:?}");
        busy_key(&rig, &key, pair(&rig.client, a, b)).await;
    }
    assert_eq!(
        template.render(&[&"100%", &":"]).unwrap(),
        "render:pair:100%25:%3A"
    );
}

// ---- across processes (Redis) ----

const WORKER: SecondProcess = SecondProcess {
    test: "behaviour::cross_process_worker",
    env: "LOCK_MACROS_CROSS_PROCESS_WORKER",
};
const ROUNDS: usize = 25;

#[distributed_lock(key = "xproc", name = "t", client = client)]
async fn counted(
    client: &LockClient,
    admin: &mut redis::aio::MultiplexedConnection,
    counters: &str,
) -> Result<(), LockError> {
    let inside: i64 = redis::cmd("INCR")
        .arg(format!("{counters}:inside"))
        .query_async(admin)
        .await
        .unwrap();
    if inside > 1 {
        let _: i64 = redis::cmd("INCR")
            .arg(format!("{counters}:overlaps"))
            .query_async(admin)
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(3)).await;
    let _: i64 = redis::cmd("DECR")
        .arg(format!("{counters}:inside"))
        .query_async(admin)
        .await
        .unwrap();
    let _: i64 = redis::cmd("INCR")
        .arg(format!("{counters}:total"))
        .query_async(admin)
        .await
        .unwrap();
    Ok(())
}

/// Both processes: meet at a barrier, then run `ROUNDS` locked increments.
async fn run_rounds(namespace: &str, who: &str) {
    let rig = support::redis_in(namespace).await.expect("a Redis URL");
    let support::Backend::Redis { url, .. } = &rig.backend else {
        unreachable!()
    };
    let mut counters = Counters::connect(url, namespace).await;
    counters.meet(who).await;
    for _ in 0..ROUNDS {
        counted(&rig.client, &mut counters.admin, &counters.prefix)
            .await
            .unwrap();
    }
}

/// The second process of `excludes_another_process`; does nothing when run by hand.
#[tokio::test]
#[ignore = "run by excludes_another_process in a child process"]
async fn cross_process_worker() {
    let Some(namespace) = WORKER.namespace() else {
        return;
    };
    timeout(BOUND, run_rounds(&namespace, "child"))
        .await
        .expect("timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn excludes_another_process() {
    let Some(url) = support::redis_url() else {
        return;
    };
    let namespace = support::unique_namespace("xproc");
    WORKER
        .run_beside(&namespace, BOUND, run_rounds(&namespace, "parent"))
        .await;

    let mut counters = Counters::connect(&url, &namespace).await;
    let total: i64 = counters.get("total").await;
    let overlaps: Option<i64> = counters.get("overlaps").await;
    counters.delete(&["total", "overlaps", "inside"]).await;
    assert_eq!(total, 2 * ROUNDS as i64);
    assert_eq!(overlaps, None, "the two processes' bodies overlapped");
}
