//! The primitives' conformance suites: the fair lock, the read-write lock, the semaphore and
//! the count-down latch, one set of checks run on every backend that offers them.
//!
//! A backend's test file declares `mod conformance; mod primitives;` and expands
//! [`primitives_suite!`] with the same harness as the lock's suite. A check whose primitive the
//! backend does not offer ([`lock_core::backend::Primitives`]) prints that it skipped and
//! returns. Every check is bounded; exclusion and permit counts are counted by the "resource"
//! (shared counters), not taken from the library.

mod fair;
mod latch;
pub(crate) mod read_write;
mod semaphore;

pub(crate) use fair::*;
pub(crate) use latch::*;
pub(crate) use read_write::*;
pub(crate) use semaphore::*;

use lock_core::backend::Primitives;
use lock_core::LockClient;

use crate::conformance::Harness;

/// True when `client`'s backend offers the primitive `has` picks; prints a skip otherwise.
pub(crate) fn offers(client: &LockClient, check: &str, has: impl Fn(Primitives) -> bool) -> bool {
    let caps = client.capabilities();
    let offered = has(caps.primitives);
    if !offered {
        eprintln!(
            "SKIPPED {check}: the {} backend does not offer it",
            caps.backend
        );
    }
    offered
}

/// A client of `h` when its backend offers the primitive `has` picks; `None` (and a printed
/// skip) otherwise.
pub(crate) async fn offered<H: Harness>(
    h: &H,
    check: &str,
    has: impl Fn(Primitives) -> bool,
) -> Option<LockClient> {
    let client = h.client().await;
    offers(&client, check, has).then_some(client)
}

/// Expands to one test per primitive check for the harness built by `$make`.
macro_rules! primitives_suite {
    ($make:expr) => {
        $crate::primitives::primitives_suite!(@tests $make;
            fair_grants_in_arrival_order, fair_never_barges, fair_excludes,
            fair_cancelled_waiter_leaves_nothing, fair_crashed_holder_expires,
            rw_readers_share_writer_excludes, rw_waiting_writer_blocks_new_readers,
            rw_downgrade_and_no_upgrade, rw_downgraded_reader_blocks_an_earlier_queued_writer,
            rw_crashed_reader_frees_its_share_only,
            rw_writer_fence_exceeds_earlier_tokens, rw_excludes,
            semaphore_never_over_grants, semaphore_bad_counts_are_typed,
            semaphore_is_first_come_first_served, semaphore_resize_without_over_granting,
            semaphore_crashed_holder_frees_its_permits,
            latch_opens_at_zero_by_push, latch_set_count_and_expiry, latch_bad_input_is_typed);
    };
    (@tests $make:expr; $($check:ident),*) => {
        mod primitive_checks {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $check() {
                    if let Some(harness) = $make.await {
                        $crate::primitives::$check(&harness).await;
                    }
                }
            )*
        }
    };
}

pub(crate) use primitives_suite;
