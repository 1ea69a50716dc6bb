//! The conformance suites of the lock and the primitives on the primary of the stack's
//! Sentinel set (`LOCK_TEST_REDIS_SENTINEL_URLS`: a primary, 2 replicas, 3 sentinels), found
//! through the sentinels.

use crate::conformance::conformance_suite;
use crate::primitives::primitives_suite;
use crate::redis_cluster::on;
use crate::redis_support::Deployment;

conformance_suite!(on(Deployment::sentinel()));
primitives_suite!(on(Deployment::sentinel()));
