//! Batching: the lock's acquisitions (and, apart, its renewals and its releases) that are in
//! flight at the same moment go to the server together, as one call of a script that runs the single script's
//! body once per lock, each caller still getting its own reply.
//!
//! The server's cost of a script call is mostly per call (looking the script up, setting up
//! the Lua VM, converting every argument), not per lock: with 64 tasks on distinct keys the
//! lock spent ~4.7 µs of server time per script call against ~0.7 µs for a `return 1` script.
//! One call for many locks spreads that cost.
//!
//! Nothing waits to fill a batch. A caller that finds fewer than [`MAX_IN_FLIGHT`] batches on
//! the wire sends at once: alone, as its own single script (the same command as without
//! batching); with others queued behind a busy wire, all of them in one call. Callers that find
//! the wire busy queue, and the batch in flight that returns first takes them along. So an
//! uncontended caller pays a mutex and a channel, and a crowd pays one call per batch.
//!
//! A caller's lease is counted from before it queued (its `sent` instant is taken before
//! [`RedisBackend::run_batched`]), never from when its batch was sent: earlier, so the lease it
//! trusts ends no later than the server's.
//!
//! Each lock's body runs under `pcall` in the batch script: an error in one (another program's
//! value of another type under its key) is that caller's error reply, not its neighbours'.
//! A batch whose reply is lost is sent again as a whole, with the same owner tokens, which the
//! scripts treat idempotently, as a single call's retry is.
//!
//! On a Redis Cluster one script call touches one slot, so batching is off there; it is off
//! too with [`wait_for_replicas`](super::RedisBackendBuilder::wait_for_replicas), whose `WAIT`
//! follows each grant.

use std::sync::{LazyLock, Mutex};

use redis::{FromRedisValue, RedisResult, Script, Value};
use tokio::sync::oneshot;

use super::script_call::ScriptCall;
use super::{scripts, RedisBackend, BACKEND};
use crate::sync::lock;
use crate::{LockError, Result};

/// The most batches of one kind on the wire at once: one being run by the server while the
/// next one forms and travels.
const MAX_IN_FLIGHT: usize = 2;
/// The most locks in one call (a bound on the command's size and the server's time in it).
const MAX_ITEMS: usize = 128;

/// The acquire script run for many locks: `acquire.lua`'s body once per 3 keys and 7 arguments.
static ACQUIRE_MANY: LazyLock<Script> =
    LazyLock::new(|| many(scripts::LOCK_FENCE, include_str!("lua/acquire.lua"), 3, 7));

/// The release script run for many locks: `release.lua`'s body once per 2 keys and 2 arguments.
static RELEASE_MANY: LazyLock<Script> =
    LazyLock::new(|| many(&scripts::WAKE_NEXT, include_str!("lua/release.lua"), 2, 2));

/// The renew script run for many leases: `renew.lua`'s body once per key and 2 arguments.
static RENEW_MANY: LazyLock<Script> =
    LazyLock::new(|| many("", include_str!("lua/renew.lua"), 1, 2));

/// The batch scripts, loaded with the others.
pub(super) fn scripts() -> [&'static Script; 3] {
    [&ACQUIRE_MANY, &RENEW_MANY, &RELEASE_MANY]
}

/// A script that runs `body` (a single-lock script, after `prelude`) once per `keys` keys and
/// `args` arguments of its own `KEYS` and `ARGV`, and answers the array of their replies
/// (`{'e', message}` for a body that failed: see [`item_reply`]).
fn many(prelude: &str, body: &str, keys: usize, args: usize) -> Script {
    Script::new(&format!(
        "{prelude}\n\
         local function one(KEYS, ARGV)\n{body}\nend\n\
         local replies = {{}}\n\
         for i = 0, #KEYS / {keys} - 1 do\n\
         \x20 local k, a = {{}}, {{}}\n\
         \x20 for j = 1, {keys} do k[j] = KEYS[i * {keys} + j] end\n\
         \x20 for j = 1, {args} do a[j] = ARGV[i * {args} + j] end\n\
         \x20 local ok, reply = pcall(one, k, a)\n\
         \x20 if ok then\n\
         \x20   replies[i + 1] = reply\n\
         \x20 elseif type(reply) == 'table' and reply.err then\n\
         \x20   replies[i + 1] = {{'e', reply.err}}\n\
         \x20 else\n\
         \x20   replies[i + 1] = {{'e', tostring(reply)}}\n\
         \x20 end\n\
         end\n\
         return replies"
    ))
}

/// Which batch a call joins.
#[derive(Clone, Copy, Debug)]
pub(super) enum Kind {
    Acquire,
    Renew,
    Release,
}

impl Kind {
    fn many(self) -> &'static Script {
        match self {
            Self::Acquire => &ACQUIRE_MANY,
            Self::Renew => &RENEW_MANY,
            Self::Release => &RELEASE_MANY,
        }
    }
}

/// The calls of one kind waiting for the wire, and the batches on it.
#[derive(Default)]
pub(super) struct Batches {
    acquire: Mutex<Queue>,
    renew: Mutex<Queue>,
    release: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Item>,
    in_flight: usize,
}

struct Item {
    call: ScriptCall,
    reply: oneshot::Sender<RedisResult<Value>>,
}

impl Batches {
    fn queue(&self, kind: Kind) -> &Mutex<Queue> {
        match kind {
            Kind::Acquire => &self.acquire,
            Kind::Renew => &self.renew,
            Kind::Release => &self.release,
        }
    }
}

impl RedisBackend {
    /// Runs `call` (a single-lock script of `kind`) through the breaker, in a batch with the
    /// calls of the same kind in flight at the same moment (see the module docs).
    pub(super) async fn run_batched<T: FromRedisValue>(
        &self,
        kind: Kind,
        operation: &'static str,
        call: ScriptCall,
    ) -> Result<T> {
        let Some(batches) = &self.shared.batches else {
            return self.run(operation, &call).await;
        };
        // Each caller passes the breaker, and settles it with its own reply, as a call alone.
        let admission = self.shared.breaker.admit()?;
        let (reply, replied) = oneshot::channel();
        let send = {
            let mut queue = lock(batches.queue(kind));
            queue.waiting.push(Item { call, reply });
            let send = queue.in_flight < MAX_IN_FLIGHT;
            if send {
                queue.in_flight += 1;
            }
            send
        };
        if send {
            let wire = OnTheWire {
                backend: self.clone(),
                kind,
                operation,
            };
            let mut items = self.take_batch(kind);
            if items.len() > 1 {
                // Others' calls ride along: a task of its own sends them, so that dropping
                // this caller's future cancels none of theirs.
                let backend = self.clone();
                tokio::spawn(async move {
                    backend.send_items(kind, operation, items).await;
                    drop(wire);
                });
            } else {
                // Alone (or taken along by another batch already): as a call without batching.
                if let Some(item) = items.pop() {
                    let outcome = self.run_admitted(operation, &item.call).await;
                    self.answer(kind, item, outcome).await;
                }
                drop(wire);
            }
        }
        let value = replied.await.map_err(|_| LockError::Protocol {
            backend: BACKEND,
            detail: "a batched call was dropped unanswered".into(),
        })?;
        super::availability::settle(admission, &value);
        let value = value.map_err(|error| self.lock_error(operation, error))?;
        T::from_redis_value(value).map_err(|error| self.lock_error(operation, error.into()))
    }

    /// Up to [`MAX_ITEMS`] of the calls of `kind` waiting for the wire.
    fn take_batch(&self, kind: Kind) -> Vec<Item> {
        let Some(batches) = &self.shared.batches else {
            return Vec::new();
        };
        let mut queue = lock(batches.queue(kind));
        let take = queue.waiting.len().min(MAX_ITEMS);
        queue.waiting.drain(..take).collect()
    }

    /// Sends `items` as one call of the batch script (or one alone as itself) and answers
    /// each caller.
    async fn send_items(&self, kind: Kind, operation: &'static str, items: Vec<Item>) {
        if items.len() == 1 {
            for item in items {
                let outcome = self.run_admitted(operation, &item.call).await;
                self.answer(kind, item, outcome).await;
            }
            return;
        }
        let batch = batch_call(kind, &items);
        match self.run_admitted::<Vec<Value>>(operation, &batch).await {
            Ok(replies) if replies.len() == items.len() => {
                for (item, reply) in items.into_iter().zip(replies) {
                    self.answer(kind, item, item_reply(reply)).await;
                }
            }
            Ok(replies) => {
                let detail = format!(
                    "a batch of {} calls answered {} replies",
                    items.len(),
                    replies.len()
                );
                for item in items {
                    let error = redis::RedisError::from((
                        redis::ErrorKind::UnexpectedReturnType,
                        "batch reply",
                        detail.clone(),
                    ));
                    self.answer(kind, item, Err(error)).await;
                }
            }
            Err(error) => {
                for item in items {
                    self.answer(kind, item, Err(error.clone())).await;
                }
            }
        }
    }

    /// Hands `item` its reply. An acquisition whose caller has gone (its future dropped
    /// while the call waited or travelled) is released here at once, by its owner token: no
    /// one will hold or release that grant, and the caller's own clean-up may have reached
    /// the server before the call did.
    async fn answer(&self, kind: Kind, item: Item, outcome: RedisResult<Value>) {
        let Err(Ok(granted)) = item.reply.send(outcome) else {
            return;
        };
        let Kind::Acquire = kind else { return };
        if !matches!(granted.as_sequence(), Some([Value::Int(1), ..])) {
            return;
        }
        let (keys, args) = item.call.keys_and_args();
        let (Some(lock_key), Some(waiters), Some(owner)) =
            (keys.first(), keys.get(2), args.first())
        else {
            return;
        };
        let mut release = ScriptCall::new(&scripts::RELEASE_ABANDONED, 2);
        release
            .key(*lock_key)
            .key(*waiters)
            .arg(*owner)
            .arg(&self.shared.hub.route);
        if let Err(error) = self.run_admitted::<i64>("release", &release).await {
            tracing::debug!(%error, "releasing a grant whose caller had gone failed; its lease runs out");
        }
    }
}

/// One lock's reply in a batch: the script's own, or the error its body raised (sent as
/// `{'e', message}`: an error reply inside the array would fail the whole batch's reply).
fn item_reply(reply: Value) -> RedisResult<Value> {
    if let Some([Value::BulkString(tag), message]) = reply.as_sequence() {
        if tag.as_slice() == b"e" {
            let message = match message {
                Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                other => format!("{other:?}"),
            };
            return Err(redis::RedisError::from((
                redis::ErrorKind::Extension,
                "script error",
                message,
            )));
        }
    }
    Ok(reply)
}

/// A batch slot on the wire: when it ends (sent and answered, or its sender's future dropped)
/// the calls that queued meanwhile go next, from a task of their own; or the slot is free.
struct OnTheWire {
    backend: RedisBackend,
    kind: Kind,
    operation: &'static str,
}

impl Drop for OnTheWire {
    fn drop(&mut self) {
        let Some(batches) = &self.backend.shared.batches else {
            return;
        };
        let runtime = tokio::runtime::Handle::try_current().ok();
        {
            let mut queue = lock(batches.queue(self.kind));
            if queue.waiting.is_empty() || runtime.is_none() {
                queue.in_flight -= 1;
                return;
            }
        }
        let Some(runtime) = runtime else { return };
        let (backend, kind, operation) = (self.backend.clone(), self.kind, self.operation);
        runtime.spawn(async move {
            let wire = OnTheWire {
                backend: backend.clone(),
                kind,
                operation,
            };
            let items = backend.take_batch(kind);
            backend.send_items(kind, operation, items).await;
            drop(wire);
        });
    }
}

/// The batch script's call for `items`: every item's keys, then every item's arguments.
fn batch_call(kind: Kind, items: &[Item]) -> ScriptCall {
    let parts: Vec<_> = items.iter().map(|item| item.call.keys_and_args()).collect();
    let keys = parts.iter().map(|(keys, _)| keys.len()).sum();
    debug_assert!(items.iter().all(|item| std::ptr::eq(
        item.call.script(),
        match kind {
            Kind::Acquire => &*scripts::ACQUIRE,
            Kind::Renew => &*scripts::RENEW,
            Kind::Release => &*scripts::RELEASE,
        }
    )));
    let mut call = ScriptCall::new(kind.many(), keys);
    for (keys, _) in &parts {
        for key in keys {
            call.key(*key);
        }
    }
    for (_, args) in &parts {
        for arg in args {
            call.arg(*arg);
        }
    }
    call
}
