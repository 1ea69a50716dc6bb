//! Scenario 11, watchdog starved: A holds and writes; B polls for the key; then every thread of
//! A's tokio runtime is blocked for 2 × TTL (a blocking call in async code), while two `chaos
//! hog` processes keep both cores busy. The watchdog cannot renew meanwhile, and the server
//! hands the key to B. Promises: when A's runtime runs again, the late renewal is reported as
//! lost, never silent: `lost()` fires within 1 s of the end of the starvation; A writes nothing
//! after its `lost()`; B's token is larger; A's release frees nothing, B's does; no stale write
//! gets in.

use std::time::Duration;

use super::{
    check_fences, check_handover_releases, check_no_write_after_lost, fence_of, ms, ms_between,
    rounds, Chaos, START,
};
use crate::chaos::report::Measured;
use crate::chaos::target::Target;

/// How long after the starvation ends `lost()` may take.
const LOST_BOUND_MS: f64 = 1000.0;

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    rounds(
        cx,
        11,
        target,
        "starve end→lost",
        async |cx, key, _resource, m| {
            let ttl = cx.ttl();
            let starve = ttl * 2;
            let after = ttl / 3;
            let extra = [
                "--starve-after-ms".to_owned(),
                ms(after),
                "--starve-ms".to_owned(),
                ms(starve),
            ];
            let mut a = cx.direct("A", target, key, true, &extra)?;
            let a_fence = fence_of(&a.wait_for("acquired", START).await?)?;
            let hold = vec!["--hold-ms".to_owned(), ms(starve + Duration::from_secs(3))];
            let mut b = cx.direct("B", target, key, false, &hold)?;
            b.wait_for("ready", START).await?;
            a.wait_for("starve-start", START).await?;
            let hogs = [hog(cx, starve)?, hog(cx, starve)?];
            m.faults += 1;
            let ended = a.wait_for("starve-end", starve + START).await?;
            let lost = a.wait_for("lost", ttl * 3).await?;
            let latency = ms_between(ended.at, lost.at);
            m.latencies.push(latency);
            eprintln!(
                "    lost() {latency:.0} ms after the starvation ended ({})",
                lost.fields
            );
            if latency > LOST_BOUND_MS {
                m.violation(format!(
                    "lost() came {latency:.0} ms after the starvation ended"
                ));
            }
            check_no_write_after_lost(m, &mut a, &lost, START + ttl * 3).await?;
            let taken = b.wait_for("acquired", START).await?;
            check_fences(m, a_fence, fence_of(&taken)?);
            for hog in hogs {
                hog.finish(START).await?;
            }
            check_handover_releases(m, a, "the starved holder", b, START + ttl * 3).await
        },
    )
    .await
}

/// A `chaos hog` process spinning one core for `length`.
fn hog(cx: &Chaos, length: Duration) -> Result<crate::chaos::process::Worker, String> {
    crate::chaos::process::Worker::spawn_command(&cx.exe, "hog", &[ms(length)])
}
