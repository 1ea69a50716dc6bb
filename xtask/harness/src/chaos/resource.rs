//! The fenced resource every chaos verdict comes from: a [`RedisFencedStore`] value on the
//! stack's Redis (not the lock's server), plus counters kept beside it in the same Redis.
//!
//! Each critical section of a worker is [`Resource::section`]:
//! 1. `INCR` the round's "inside" counter: above 1 means another holder's section is open too
//!    (an *overlap*, counted by the resource, not by the lock's own view);
//! 2. the write, with the guard's fencing token: through [`RedisFencedStore::write`], which
//!    refuses a token smaller than the largest that wrote; or, with `--unsafe-no-fence`,
//!    unconditionally, and the resource counts it as a *stale write accepted* when a larger
//!    token had already written;
//! 3. `DECR` "inside".
//!
//! Overlaps are expected under faults (a paused holder, a key expired behind a holder's back):
//! that is why resources check fences. What must never happen is a stale write getting in.

use std::sync::LazyLock;

use lock_core::redis::RedisFencedStore;
use lock_core::FencingToken;
use redis::aio::ConnectionManager;
use redis::{AsyncCommands, Script};

/// The write without the fencing check (`--unsafe-no-fence`): always written, and counted as
/// stale when a larger token wrote before. Same hash layout as [`RedisFencedStore`]; tokens
/// are 20-digit text, compared as text.
static UNFENCED_WRITE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"local seen = redis.call('HGET', KEYS[1], 'fence')
local stale = seen and seen > ARGV[1]
redis.call('HSET', KEYS[1], 'fence', stale and seen or ARGV[1], 'value', ARGV[2])
if stale then return 1 end
return 0",
    )
});

/// What one critical section's write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// Accepted, and no larger token had written.
    Accepted,
    /// Refused by the fence.
    Refused,
    /// Accepted although a larger token had written (only without the fence).
    StaleAccepted,
}

/// The counters of one round, as the resource saw them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Critical sections run.
    pub sections: u64,
    /// Writes accepted (stale or not).
    pub accepted: u64,
    /// Writes refused by the fence.
    pub refused: u64,
    /// Writes accepted although a larger token had written before.
    pub stale: u64,
    /// Sections that found another section open.
    pub overlaps: u64,
}

impl Counts {
    /// Adds `other` into `self`.
    pub fn add(&mut self, other: Counts) {
        self.sections += other.sections;
        self.accepted += other.accepted;
        self.refused += other.refused;
        self.stale += other.stale;
        self.overlaps += other.overlaps;
    }
}

/// One round's resource: the fenced value `chaos:<round>` and its counters.
#[derive(Clone)]
pub struct Resource {
    connection: ConnectionManager,
    store: RedisFencedStore,
    round: String,
}

impl Resource {
    /// Connects to the resource's Redis at `url`, for the round `round`.
    pub async fn connect(url: &str, round: &str) -> Result<Self, String> {
        let client = redis::Client::open(url).map_err(|e| format!("resource {url}: {e}"))?;
        let connection = ConnectionManager::new(client)
            .await
            .map_err(|e| format!("resource {url}: {e}"))?;
        Ok(Self {
            store: RedisFencedStore::from_connection(connection.clone()),
            connection,
            round: round.to_owned(),
        })
    }

    fn key(&self, what: &str) -> String {
        format!("chaos:{}:{what}", self.round)
    }

    /// The fenced value's name for [`RedisFencedStore`].
    fn value_name(&self) -> String {
        format!("chaos:{}", self.round)
    }

    /// The fenced value's Redis key (the store's).
    fn value_key(&self) -> Result<String, String> {
        self.store
            .redis_key(&self.value_name())
            .map_err(|e| e.to_string())
    }

    /// One critical section writing `value` with `fence`; `fenced: false` skips the check.
    pub async fn section(
        &self,
        fence: FencingToken,
        fenced: bool,
        value: &str,
    ) -> Result<Written, String> {
        let mut c = self.connection.clone();
        let counts = self.key("counts");
        let inside: i64 = c.incr(self.key("inside"), 1).await.map_err(err)?;
        let written = self.write(fence, fenced, value).await;
        let _: i64 = c.decr(self.key("inside"), 1).await.map_err(err)?;
        let written = written?;
        let mut pipe = redis::pipe();
        pipe.hincr(&counts, "sections", 1).ignore();
        if inside > 1 {
            pipe.hincr(&counts, "overlaps", 1).ignore();
        }
        let field = match written {
            Written::Accepted => "accepted",
            Written::Refused => "refused",
            Written::StaleAccepted => "stale",
        };
        pipe.hincr(&counts, field, 1).ignore();
        if written == Written::StaleAccepted {
            pipe.hincr(&counts, "accepted", 1).ignore();
        }
        let () = pipe.query_async(&mut c).await.map_err(err)?;
        Ok(written)
    }

    async fn write(
        &self,
        fence: FencingToken,
        fenced: bool,
        value: &str,
    ) -> Result<Written, String> {
        if fenced {
            let written = self
                .store
                .write(&self.value_name(), fence, value.as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            return Ok(if written.is_accepted() {
                Written::Accepted
            } else {
                Written::Refused
            });
        }
        let stale: i64 = UNFENCED_WRITE
            .key(self.value_key()?)
            .arg(format!("{:020}", fence.get()))
            .arg(value)
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(err)?;
        Ok(if stale == 1 {
            Written::StaleAccepted
        } else {
            Written::Accepted
        })
    }

    /// The round's counters.
    pub async fn counts(&self) -> Result<Counts, String> {
        let mut c = self.connection.clone();
        let fields: std::collections::HashMap<String, u64> =
            c.hgetall(self.key("counts")).await.map_err(err)?;
        let get = |name: &str| fields.get(name).copied().unwrap_or(0);
        Ok(Counts {
            sections: get("sections"),
            accepted: get("accepted"),
            refused: get("refused"),
            stale: get("stale"),
            overlaps: get("overlaps"),
        })
    }

    /// Closes the sections a killed worker left open (a SIGKILLed process never leaves).
    pub async fn forget_open_sections(&self) -> Result<(), String> {
        let mut c = self.connection.clone();
        let () = c.set(self.key("inside"), 0).await.map_err(err)?;
        Ok(())
    }

    /// Deletes the round's keys.
    pub async fn clean_up(&self) -> Result<(), String> {
        let mut c = self.connection.clone();
        let () = c
            .del(&[self.key("inside"), self.key("counts"), self.value_key()?])
            .await
            .map_err(err)?;
        Ok(())
    }
}

fn err(e: redis::RedisError) -> String {
    e.to_string()
}
