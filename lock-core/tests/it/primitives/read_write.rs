//! The read-write lock: sharing, exclusion, writer preference, downgrade, crash of a reader.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::backend::LeaseKind;
use lock_core::{LockClient, LockError, LockGuard, ReadWriteLock};
use tokio::task::JoinHandle;

use super::offered;
use crate::conformance::{bounded, eventually, unique_key, Harness};

async fn rw_queue(client: &LockClient, key: &str) -> usize {
    client.queue_length(LeaseKind::Write, key).await.unwrap()
}

/// Runs `check` (bounded) with `N` clients, the first one asked whether the backend offers
/// read-write locks, and a key of its own. The check is named by the function that calls
/// this (the one `check` is a closure of), as the report of a skipped check says.
async fn rw_check<const N: usize, H: Harness, F, Fut>(h: &H, check: F)
where
    F: FnOnce([LockClient; N], String) -> Fut,
    Fut: Future<Output = ()>,
{
    let name = check_name::<F>();
    let Some(first) = offered(h, name, |p| p.read_write).await else {
        return;
    };
    bounded(async {
        let key = unique_key(name);
        let mut clients = vec![first];
        while clients.len() < N {
            clients.push(h.client().await);
        }
        let Ok(clients) = clients.try_into() else {
            unreachable!("N clients")
        };
        check(clients, key).await;
    })
    .await;
}

/// The name of the function that the closure `F` is written in.
fn check_name<F>() -> &'static str {
    // `crate::module::function<Harness>::{{closure}}`
    let path = std::any::type_name::<F>();
    let function = path.split(['<', '{']).next().unwrap_or(path);
    let function = function.trim_end_matches(':');
    function.rsplit("::").next().unwrap_or(function)
}

/// What a waiter of [`spawn_queued`] takes.
enum Take {
    Read,
    Write,
}

/// Spawns `waiter` taking `key`'s read share or write lock (`take`), and waits (bounded) until
/// `key`'s queue, as `observer` sees it, holds `queued` waiters (`what` names the wait).
async fn spawn_queued(
    observer: &LockClient,
    waiter: &LockClient,
    key: &str,
    take: Take,
    queued: usize,
    what: &str,
) -> JoinHandle<LockGuard> {
    let task = tokio::spawn({
        let (waiter, key) = (waiter.clone(), key.to_owned());
        async move {
            let rw = waiter.read_write_lock(&key);
            match take {
                Take::Read => rw.read().await.unwrap(),
                Take::Write => rw.write().await.unwrap(),
            }
        }
    });
    eventually(what, || async { rw_queue(observer, key).await == queued }).await;
    task
}

/// The read share that the writer of `rw` takes beside its write lock (the downgrade).
async fn downgrade(rw: &ReadWriteLock) -> LockGuard {
    rw.read()
        .try_acquire()
        .await
        .unwrap()
        .expect("a writer may read")
}

/// A read share of `key` if one is free right now.
pub(crate) async fn try_read(client: &LockClient, key: &str) -> Option<LockGuard> {
    client
        .read_write_lock(key)
        .read()
        .try_acquire()
        .await
        .unwrap()
}

/// The write lock of `key` if it is free right now.
pub(crate) async fn try_write(client: &LockClient, key: &str) -> Option<LockGuard> {
    client
        .read_write_lock(key)
        .write()
        .try_acquire()
        .await
        .unwrap()
}

/// Readers on separate clients share; a writer waits for all of them.
pub(crate) async fn rw_readers_share_writer_excludes<H: Harness>(h: &H) {
    rw_check(h, |[a, b, c], key| async move {
        let r1 = a.read_write_lock(&key).read().await.unwrap();
        let r2 = try_read(&b, &key).await;
        let r2 = r2.expect("readers share");
        assert!(try_write(&c, &key).await.is_none());
        r1.release().await.unwrap();
        assert!(try_write(&c, &key).await.is_none());
        r2.release().await.unwrap();
        let w = try_write(&c, &key).await;
        let w = w.expect("free after the last reader");
        assert!(try_read(&a, &key).await.is_none());
        w.release().await.unwrap();
    })
    .await;
}

/// While a writer waits, newer readers wait behind it, so readers cannot starve writers.
pub(crate) async fn rw_waiting_writer_blocks_new_readers<H: Harness>(h: &H) {
    rw_check(h, |[a, b, c], key| async move {
        let r1 = a.read_write_lock(&key).read().await.unwrap();
        let writer = spawn_queued(&a, &b, &key, Take::Write, 1, "the writer queued").await;
        assert!(
            try_read(&c, &key).await.is_none(),
            "a new reader overtook a waiting writer"
        );
        let late_reader = spawn_queued(&a, &c, &key, Take::Read, 2, "the reader queued").await;
        r1.release().await.unwrap();
        let w = writer.await.unwrap();
        assert!(
            !late_reader.is_finished() || w.is_lost(),
            "reader entered beside the writer"
        );
        w.release().await.unwrap();
        late_reader.await.unwrap().release().await.unwrap();
    })
    .await;
}

/// A writer may take the read lock (downgrade); a reader asking for the write lock is refused
/// with a typed error instead of waiting for itself.
pub(crate) async fn rw_downgrade_and_no_upgrade<H: Harness>(h: &H) {
    rw_check(h, |[a, b, c], key| async move {
        let rw = a.read_write_lock(&key);
        let w = rw.write().await.unwrap();
        let r = downgrade(&rw).await;
        assert!(r.fencing_token() > w.fencing_token());
        w.release().await.unwrap();
        // Downgraded: others may read now, nobody may write.
        let other = try_read(&b, &key).await;
        let other = other.expect("readers share after the downgrade");
        assert!(try_write(&c, &key).await.is_none());
        let upgrade = rw.write().try_acquire().await.unwrap_err();
        assert!(
            matches!(upgrade, LockError::UpgradeRefused { .. }),
            "{upgrade}"
        );
        r.release().await.unwrap();
        other.release().await.unwrap();
    })
    .await;
}

/// W(a) holds, W(b) queues, a reads beside its write (downgrade), then releases the write: the
/// writer queued before the read must still wait for the downgraded reader.
pub(crate) async fn rw_downgraded_reader_blocks_an_earlier_queued_writer<H: Harness>(h: &H) {
    rw_check(h, |[a, b], key| async move {
        let rw = a.read_write_lock(&key);
        let w = rw.write().await.unwrap();
        let granted = Arc::new(AtomicUsize::new(0));
        let writer = tokio::spawn({
            let (b, key, granted) = (b.clone(), key.clone(), granted.clone());
            async move {
                let guard = b.read_write_lock(&key).write().await.unwrap();
                granted.fetch_add(1, Ordering::SeqCst);
                guard
            }
        });
        eventually("the other writer queued", || async {
            rw_queue(&a, &key).await == 1
        })
        .await;
        let r = downgrade(&rw).await;
        w.release().await.unwrap();
        // Nothing signals a grant that must not happen: give it the time one would take.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            granted.load(Ordering::SeqCst),
            0,
            "a writer was granted while the downgraded reader read"
        );
        r.release().await.unwrap();
        let other = tokio::time::timeout(Duration::from_secs(5), writer)
            .await
            .expect("the queued writer got the lock once the reader left")
            .unwrap();
        other.release().await.unwrap();
    })
    .await;
}

/// A reader that crashes frees its own share when its lease runs out, and only its own.
pub(crate) async fn rw_crashed_reader_frees_its_share_only<H: Harness>(h: &H) {
    rw_check(h, |[a, b, c], key| async move {
        let crashed = a
            .read_write_lock(&key)
            .read()
            .lease(lock_core::LeaseMode::watchdog(Duration::from_millis(400)))
            .await
            .unwrap();
        let lost = crashed.lost();
        crashed.abandon();
        let alive = b.read_write_lock(&key).read().await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), lost)
            .await
            .unwrap();
        // Past the crashed reader's lease (and the drift margin): still one reader in.
        let margin = Duration::from_millis(200);
        tokio::time::sleep(margin).await;
        assert!(try_write(&c, &key).await.is_none());
        assert!(!alive.is_lost());
        alive.release().await.unwrap();
        let w = c
            .read_write_lock(&key)
            .write()
            .acquire_within(Duration::from_secs(5))
            .await;
        w.unwrap()
            .expect("free once the live reader left")
            .release()
            .await
            .unwrap();
    })
    .await;
}

/// A writer's fencing token is larger than every token handed out before it, reads included.
pub(crate) async fn rw_writer_fence_exceeds_earlier_tokens<H: Harness>(h: &H) {
    rw_check(h, |[a, b], key| async move {
        let mut largest = 0;
        for _ in 0..3 {
            let r1 = a.read_write_lock(&key).read().await.unwrap();
            let r2 = b.read_write_lock(&key).read().await.unwrap();
            largest = largest
                .max(r1.fencing_token().get())
                .max(r2.fencing_token().get());
            r1.release().await.unwrap();
            r2.release().await.unwrap();
            let w = a.read_write_lock(&key).write().await.unwrap();
            assert!(w.fencing_token().get() > largest);
            largest = w.fencing_token().get();
            w.release().await.unwrap();
        }
    })
    .await;
}

/// Tasks reading and writing at random: a writer never overlaps anyone.
pub(crate) async fn rw_excludes<H: Harness>(h: &H) {
    rw_check(h, |[probe], key| async move {
        // The probe client stays open for the whole check, as the others' first client does.
        let _probe = probe;
        let readers = Arc::new(AtomicUsize::new(0));
        let writers = Arc::new(AtomicUsize::new(0));
        let violations = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for t in 0..6 {
            let client = h.client().await;
            let (key, readers, writers, violations) = (
                key.clone(),
                readers.clone(),
                writers.clone(),
                violations.clone(),
            );
            tasks.push(tokio::spawn(async move {
                let rw = client.read_write_lock(&key);
                for i in 0..12 {
                    if (t + i) % 3 == 0 {
                        let w = rw.write().await.unwrap();
                        if writers.fetch_add(1, Ordering::SeqCst) != 0
                            || readers.load(Ordering::SeqCst) != 0
                        {
                            violations.fetch_add(1, Ordering::SeqCst);
                        }
                        tokio::task::yield_now().await;
                        writers.fetch_sub(1, Ordering::SeqCst);
                        w.release().await.unwrap();
                    } else {
                        let r = rw.read().await.unwrap();
                        readers.fetch_add(1, Ordering::SeqCst);
                        if writers.load(Ordering::SeqCst) != 0 {
                            violations.fetch_add(1, Ordering::SeqCst);
                        }
                        tokio::task::yield_now().await;
                        readers.fetch_sub(1, Ordering::SeqCst);
                        r.release().await.unwrap();
                    }
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(violations.load(Ordering::SeqCst), 0, "a writer overlapped");
    })
    .await;
}
