//! One task's operations on each primitive, and the violations its counters find.

use std::collections::BTreeMap;

use lock_core::{LockClient, LockGuard};
use redis::aio::MultiplexedConnection;
use redis::AsyncCommands;

use super::faults::{self, Use, FAULT_LEASE};
use super::{now_ms, Plan, Primitive};

/// How much earlier a still-waiting task must have started waiting for a grant to count as
/// out of order: the gap between a task noting its start and its enqueue reaching Redis.
const ORDER_SLACK_MS: u64 = 100;

/// One task's loop state.
pub(super) struct Task {
    locks: LockClient,
    data: MultiplexedConnection,
    plan: Plan,
    id: u64,
    pub(super) found: BTreeMap<&'static str, u64>,
}

impl Task {
    pub(super) fn new(locks: LockClient, data: MultiplexedConnection, plan: Plan, id: u64) -> Self {
        Self {
            locks,
            data,
            plan,
            id,
            found: BTreeMap::new(),
        }
    }

    fn violation(&mut self, kind: &'static str) {
        *self.found.entry(kind).or_default() += 1;
    }

    /// Counts an event that is expected under faults (`expected:<what>`: reported beside the
    /// violations, never one of them).
    fn expected(&mut self, kind: &'static str) {
        *self.found.entry(kind).or_default() += 1;
    }

    pub(super) async fn operation(&mut self, i: u64) {
        match self.plan.primitive {
            Primitive::Fair => self.fair(i).await,
            Primitive::ReadWrite => self.read_write(i).await,
            Primitive::Semaphore if self.plan.faults => self.semaphore_under_faults(i).await,
            Primitive::Semaphore => self.semaphore(i).await,
            Primitive::Latch => self.latch(i).await,
        }
        if self.plan.faults {
            // Counted in Redis as it happens: a killed worker's count survives it.
            let found = std::mem::take(&mut self.found);
            faults::record(&mut self.data, &self.plan, self.plan.worker_index, &found).await;
        }
    }

    async fn fair(&mut self, i: u64) {
        let (inside, fence_key, waiting) = (
            self.plan.key("inside"),
            self.plan.key("fence"),
            self.plan.key("waiting"),
        );
        let me = format!("{}:{}:{i}", std::process::id(), self.id);
        let started = now_ms();
        let _: () = self.data.zadd(&waiting, &me, started).await.expect("ZADD");
        let guard = if self.plan.broken {
            self.locks.lock("resource").await
        } else {
            self.locks.fair_lock("resource").await
        }
        .expect("acquire");
        let _: () = self.data.zrem(&waiting, &me).await.expect("ZREM");
        let earliest: Vec<(String, u64)> = self
            .data
            .zrange_withscores(&waiting, 0, 0)
            .await
            .expect("ZRANGE");
        if earliest
            .first()
            .is_some_and(|(_, at)| at + ORDER_SLACK_MS < started)
        {
            self.violation("out_of_order");
        }
        self.exclusive_section(&inside, &fence_key, &guard).await;
        self.release(guard).await;
    }

    /// `INCR` inside (above 1: an overlap), a fence check, `DECR`.
    async fn exclusive_section(&mut self, inside: &str, fence_key: &str, guard: &LockGuard) {
        let count: u64 = self.data.incr(inside, 1).await.expect("INCR");
        if count > 1 {
            self.violation("overlap");
        }
        let fence = guard.fencing_token().get();
        let last: Option<u64> = self.data.get(fence_key).await.expect("GET");
        if last.is_some_and(|last| last >= fence) {
            self.violation("fence_not_increasing");
        }
        let _: () = self.data.set(fence_key, fence).await.expect("SET");
        let _: i64 = self.data.decr(inside, 1).await.expect("DECR");
    }

    async fn release(&mut self, guard: LockGuard) {
        if !guard.release().await.expect("release") {
            self.violation("lease_gone_before_release");
        }
    }

    async fn read_write(&mut self, i: u64) {
        let (readers, writers) = (self.plan.key("readers"), self.plan.key("writers"));
        let rw = self.locks.read_write_lock("resource");
        let write = (self.id + i).is_multiple_of(4);
        let guard = if write && !self.plan.broken {
            rw.write().await
        } else {
            rw.read().await
        }
        .expect("acquire");
        if write {
            let w: u64 = self.data.incr(&writers, 1).await.expect("INCR");
            let r: Option<u64> = self.data.get(&readers).await.expect("GET");
            if w > 1 || r.unwrap_or(0) > 0 {
                self.violation("writer_not_alone");
            }
            let _: i64 = self.data.decr(&writers, 1).await.expect("DECR");
        } else {
            let _: u64 = self.data.incr(&readers, 1).await.expect("INCR");
            let w: Option<u64> = self.data.get(&writers).await.expect("GET");
            if w.unwrap_or(0) > 0 {
                self.violation("reader_beside_writer");
            }
            let _: i64 = self.data.decr(&readers, 1).await.expect("DECR");
        }
        self.release(guard).await;
    }

    async fn semaphore(&mut self, i: u64) {
        let in_use = self.plan.key("in-use");
        let count = 1 + u32::from((self.id + i).is_multiple_of(2));
        let permit = self
            .locks
            .semaphore("resource", self.plan.permits)
            .acquire(count)
            .await
            .expect("acquire");
        let used: u64 = self.data.incr(&in_use, count).await.expect("INCRBY");
        if used > u64::from(self.plan.permits) {
            self.violation("permits_above_size");
        }
        tokio::task::yield_now().await;
        let _: i64 = self.data.decr(&in_use, count).await.expect("DECRBY");
        self.release(permit).await;
    }

    /// A semaphore operation while holders are paused and killed: the permits in use are
    /// counted by the resource, each use ending with its holder's lease (see `faults`).
    async fn semaphore_under_faults(&mut self, i: u64) {
        let count = 1 + u32::from((self.id + i).is_multiple_of(2));
        let acquired = self
            .locks
            .semaphore("resource", self.plan.permits)
            .acquire(count)
            .lease(lock_core::LeaseMode::watchdog(FAULT_LEASE))
            .await;
        // A worker paused mid-command may find the backend's reply timed out: it tries again.
        let Ok(permit) = acquired else {
            self.expected("expected:acquire_failed");
            return;
        };
        if permit.ensure_held().is_ok() {
            let remaining = u64::try_from(permit.remaining().as_millis()).unwrap_or(0);
            // The worker's number first: the coordinator pauses workers that hold permits.
            let id = format!(
                "{}:{}",
                self.plan.worker_index,
                permit.owner_token().to_hex()
            );
            match faults::begin_use(&mut self.data, &self.plan, &id, count, now_ms() + remaining)
                .await
            {
                Use::InUse(in_use) => {
                    if in_use > u64::from(self.plan.permits) {
                        self.violation("permits_above_size");
                    }
                    // The work done with the permits, long enough for a pause to land in it.
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                    faults::end_use(&mut self.data, &self.plan, &id, count).await;
                }
                // Paused between the check and the use: the resource refused it.
                Use::Stale => self.expected("expected:refused_stale"),
            }
        } else {
            self.expected("expected:lost_before_use");
        }
        // A holder paused past its lease finds it gone: expected here, not a violation.
        if !permit.release().await.unwrap_or(false) {
            self.expected("expected:lease_lost_in_pause");
        }
    }

    async fn latch(&mut self, round: u64) {
        let arrived = self.plan.key(&format!("arrived:{round}"));
        let _: u64 = self.data.incr(&arrived, 1).await.expect("INCR");
        let latch = self.locks.latch(format!("round:{round}"));
        latch.count_down().await.expect("count down");
        latch.wait().await.expect("wait");
        let everyone = self.plan.processes * self.plan.tasks;
        let seen: u64 = self.data.get(&arrived).await.expect("GET");
        if seen < everyone {
            self.violation("released_before_zero");
        }
    }
}
