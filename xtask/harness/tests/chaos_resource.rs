//! The chaos resource against a real Redis (`LOCK_TEST_REDIS_URL`): the fence refuses a
//! stale token, and without the fence the same write gets in and is counted as stale, so a
//! scenario's verdict can fail.

#![cfg(feature = "servers")]
use lock_core::FencingToken;
use lock_harness::chaos::resource::{Counts, Resource, Written};
use lock_testing::{server_url, unique};

#[tokio::test]
async fn the_fence_refuses_what_the_unfenced_write_lets_in() {
    let Some(url) = server_url("LOCK_TEST_REDIS_URL").unwrap() else {
        return;
    };
    let resource = Resource::connect(&url, &unique("chaos-test"))
        .await
        .unwrap();
    let (old, new) = (FencingToken::new(7), FencingToken::new(8));
    assert_eq!(
        resource.section(new, true, "b").await.unwrap(),
        Written::Accepted
    );
    assert_eq!(
        resource.section(old, true, "a").await.unwrap(),
        Written::Refused
    );
    assert_eq!(
        resource.section(old, false, "a").await.unwrap(),
        Written::StaleAccepted
    );
    // The unfenced write kept the larger token: the fence still refuses the old one.
    assert_eq!(
        resource.section(old, true, "a").await.unwrap(),
        Written::Refused
    );
    let counts = resource.counts().await.unwrap();
    assert_eq!(
        counts,
        Counts {
            sections: 4,
            accepted: 2,
            refused: 2,
            stale: 1,
            overlaps: 0,
        }
    );
    resource.clean_up().await.unwrap();
}
