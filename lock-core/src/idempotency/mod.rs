//! Idempotent requests: a request with an idempotency key runs once per (scope, key) across
//! every instance; its duplicates get its response back.
//!
//! ```
//! use std::time::Duration;
//! use lock_core::results::StoredResponse;
//! use lock_core::idempotency::{Begin, Fingerprint, Idempotency, InFlight};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
//! let payments = Idempotency::memory("payments")?;
//! let fingerprint = Fingerprint::builder("POST", "/payments").body(b"100").finish();
//! let first = payments.begin("alice", "k1", fingerprint, InFlight::Conflict).await?;
//! let Begin::Run(claim) = first else { unreachable!() };
//! // A duplicate while the first runs:
//! let duplicate = payments.begin("alice", "k1", fingerprint, InFlight::Conflict).await?;
//! assert!(matches!(duplicate, Begin::InFlight));
//! // Another payload under the same key:
//! let other = Fingerprint::builder("POST", "/payments").body(b"999").finish();
//! assert!(matches!(payments.begin("alice", "k1", other, InFlight::Conflict).await?, Begin::Mismatch));
//! let response = StoredResponse {
//!     status: 201, headers: vec![], body: b"paid".to_vec(),
//!     initial_age: Duration::ZERO, fresh: Duration::ZERO,
//! };
//! claim.complete(response).await?;
//! assert!(matches!(payments.begin("alice", "k1", fingerprint, InFlight::Conflict).await?, Begin::Replay(_)));
//! // Another principal's key is another record.
//! assert!(matches!(payments.begin("bob", "k1", fingerprint, InFlight::Conflict).await?, Begin::Run(_)));
//! # Ok(()) }
//! ```
//!
//! # The record
//! absent → **in flight** (a fenced lease, kept alive by the watchdog while the request runs,
//! and the request's [`Fingerprint`]) → **completed** (status, replayable headers, body,
//! completion time) → expired after the retention (default 24 h). A request whose response is
//! not worth keeping (a 5xx by default) [releases](Claim::release) its claim: the next one
//! runs. A crashed process's claim ends with its lease; a cancelled request's at once.
//!
//! # Guarantees and their limits
//! - The claim is atomic: one request wins across all instances (the lock's lease).
//! - The completion is stored only while the claim's fencing token is the current one: a
//!   request whose lease was lost (paused, partitioned) and taken over cannot overwrite what
//!   the newer request completed.
//! - **Exactly once needs the effect and the answer in one commit.** A process that dies
//!   after its effect and before its record is completed leaves the record in flight; its
//!   claim expires and the retry runs the effect again. A fencing token does not prevent that
//!   (the retry's token is the *newer* one; a fence refuses only older writers). Write the
//!   answer in the effect's own transaction with [`ClaimInfo::commit_in`] (feature
//!   `postgres` or `mysql`):
//!
//!   | records in | effect in | what `commit_in` writes | guarantee |
//!   |---|---|---|---|
//!   | `PostgresResultStore` | the same PostgreSQL database | the completed record itself, fence-checked | exactly once |
//!   | Redis (or memory) | PostgreSQL or MySQL, with `lock_core::sql::RecoveryPoints` there | a recovery point, which a retry replays | exactly once |
//!   | anywhere | an effect written without `commit_in` | nothing | at most once per claim; a crash between the effect and the record runs it again |
//!
//!   Two executions that overlap (a holder paused past its lease and the retry that took
//!   over) cannot both commit: the row they both write serializes them, and the loser is told
//!   to roll back ([`Committed`]).
//! - The store failing is never a silent double execution: [`Idempotency::begin`] fails
//!   before anything runs (the HTTP layers answer 503), and a completion that cannot be
//!   stored leaves the claim to expire rather than marking it done.

mod claim;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod claim_commit;
mod claim_info;
mod client;
mod fingerprint;
mod fused_claim;
mod record;
#[cfg(any(feature = "http", feature = "postgres", feature = "mysql"))]
mod replay;
pub(crate) mod stats;

pub use self::claim::{Begin, Claim, Completion, InFlight};
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) use self::claim_commit::ClaimCommit;
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub use self::claim_commit::Committed;
pub use self::claim_info::ClaimInfo;
pub use self::client::{Idempotency, IdempotencyBuilder, DEFAULT_RETENTION, MAX_RETENTION};
pub use self::fingerprint::{Fingerprint, FingerprintBuilder};
pub use self::record::Completed;
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) use self::record::Record;
#[cfg(any(feature = "http", feature = "postgres", feature = "mysql"))]
pub(crate) use self::replay::replayable;
pub use self::stats::IdempotencyStats;
