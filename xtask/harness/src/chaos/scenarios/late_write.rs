//! Scenario 4, write to the resource delayed past the lease: A takes a fixed lease of one TTL, writes,
//! then its next write is held up for 2 × TTL (the worker sleeps with the write "on its way",
//! without looking at the lease). Meanwhile the lease ends and B takes the key and writes.
//! Promise: A's late write is refused by the fence (stale writes accepted = 0).

use std::time::Duration;

use super::{check_fences, fence_of, ms, rounds, Chaos, START};
use crate::chaos::report::Measured;
use crate::chaos::target::Target;

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    rounds(cx, 4, target, "-", async |cx, key, _resource, m| {
        let ttl = cx.ttl();
        let delay = ttl * 2;
        let mut a = cx.direct(
            "A",
            target,
            key,
            true,
            &["--fixed".into(), "--write-delay-ms".into(), ms(delay)],
        )?;
        let a_fence = fence_of(&a.wait_for("acquired", START).await?)?;
        let hold = ms(delay + Duration::from_secs(1));
        let mut b = cx.direct("B", target, key, false, &["--hold-ms".into(), hold])?;
        m.faults += 1;
        let late = a.wait_for("late-write", delay + START).await?;
        let taken = b
            .seen("acquired")
            .ok_or("B did not get the key while A's write was delayed")?;
        check_fences(m, a_fence, fence_of(&taken)?);
        eprintln!("    the late write was {}", late.fields);
        a.wait_for("done", START).await?;
        b.wait_for("done", START + delay).await?;
        a.finish(START).await?;
        b.finish(START).await?;
        Ok(())
    })
    .await
}
