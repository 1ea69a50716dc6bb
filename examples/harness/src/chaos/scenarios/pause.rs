//! Scenario 1, holder paused past its lease: A holds and writes; B polls for the key; A is stopped
//! (SIGSTOP) for 2 × TTL, during which the server hands the key to B; then A continues
//! (SIGCONT). Promises: A's `lost()` fires as soon as it runs again (measured from SIGCONT),
//! A writes nothing that gets in (stale writes accepted = 0), B's token is larger, A's late
//! release frees nothing and B's release does.

use tokio::time::sleep;

use super::{check_fences, check_release, fence_of, ms, ms_between, rounds, Chaos, START};
use crate::chaos::report::Measured;
use crate::chaos::target::Target;
use crate::chaos::worker::wall_us;

/// How long after SIGCONT `lost()` may take.
const LOST_BOUND_MS: f64 = 1000.0;

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    rounds(
        cx,
        1,
        target,
        "SIGCONT→lost",
        async |cx, key, _resource, m| {
            let ttl = cx.ttl();
            let mut a = cx.worker("A", target.kind, &target.url, key, true, &[])?;
            let a_fence = fence_of(&a.wait_for("acquired", START).await?)?;
            sleep(ttl / 6).await;
            let hold = ms(ttl * 2 + std::time::Duration::from_millis(2500));
            let mut b = cx.worker(
                "B",
                target.kind,
                &target.url,
                key,
                false,
                &["--hold-ms".into(), hold],
            )?;
            b.wait_for("ready", START).await?;
            a.signal("STOP")?;
            m.faults += 1;
            sleep(ttl * 2).await;
            let taken = b.seen("acquired");
            a.signal("CONT")?;
            let resumed = wall_us();
            let Some(taken) = taken else {
                m.violation(format!(
                    "nobody got the key while its holder was stopped for {:?}",
                    ttl * 2
                ));
                return Ok(());
            };
            check_fences(m, a_fence, fence_of(&taken)?);
            let lost = a.wait_for("lost", ttl * 3).await?;
            let latency = ms_between(resumed, lost.at);
            m.latencies.push(latency);
            eprintln!("    lost() {latency:.0} ms after SIGCONT ({})", lost.fields);
            if latency > LOST_BOUND_MS {
                m.violation(format!("lost() came {latency:.0} ms after SIGCONT"));
            }
            check_release(
                m,
                "the paused holder",
                &a.wait_for("released", START).await?,
                false,
            );
            check_release(
                m,
                "the next holder",
                &b.wait_for("released", START + ttl * 3).await?,
                true,
            );
            a.finish(START).await?;
            b.finish(START).await?;
            Ok(())
        },
    )
    .await
}
