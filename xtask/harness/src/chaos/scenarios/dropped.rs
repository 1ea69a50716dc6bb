//! Scenario 8, acquire futures dropped at random points: one worker drops 10,000 acquires
//! (1,000 with `--short`) at random moments (up to 3 × an uncontended acquire's time, so on the
//! wire as well as queued behind a contender of the same process or just granted; a grant it
//! does get is dropped or released at random). Promises: the next acquire gets the key at once
//! (no stuck waiter: within 1 s, where a leftover would hold it for its lease); the worker's
//! task count comes back to its baseline (no leaked task); while the worker is still connected,
//! the server holds no entry for the key (no orphan) and another process gets the key at once.
//! `--unsafe-long-lease` has the worker abandon its grants (as a client that lost track of
//! them) with a 10× lease: the checks must catch the leftovers.

use std::time::Duration;

use super::{ms, ms_between, rounds, Chaos, START};
use crate::chaos::report::Measured;
use crate::chaos::target::Target;

/// How fast the next acquire must get the key.
const NEXT_BOUND_MS: f64 = 1000.0;

/// Runs the scenario's rounds.
pub(super) async fn run(cx: &Chaos, target: &Target) -> Measured {
    rounds(
        cx,
        8,
        target,
        "next acquire",
        async |cx, key, _resource, m| {
            let count = if cx.settings.short { 1000 } else { 10_000 };
            let mut extra = vec!["--drop-acquires".to_owned(), count.to_string()];
            if cx.settings.unsafe_long_lease {
                extra.push("--abandon".to_owned());
            }
            let mut a = cx.direct("A", target, key, false, &extra)?;
            let bound = START * 10;
            let drops = a.wait_for("drops", bound).await?;
            let fields: Vec<&str> = drops.fields.split_whitespace().collect();
            let [n, dropped, granted, errors, baseline, after, next] = fields[..] else {
                return Err(format!("bad drops event {:?}", drops.fields));
            };
            m.faults += dropped.parse::<u64>().unwrap_or(0);
            eprintln!(
                "    {n} acquires: {dropped} dropped, {granted} granted, {errors} errors; \
                 tasks {baseline} → {after}; next acquire {next} ms"
            );
            match next.parse::<f64>() {
                Ok(next) => {
                    m.latencies.push(next);
                    if next > NEXT_BOUND_MS {
                        m.violation(format!(
                            "after the drops the next acquire waited {next:.0} ms for the key"
                        ));
                    }
                }
                Err(_) => m.violation(format!("after the drops the next acquire got {next}")),
            }
            if after.parse::<u64>().unwrap_or(u64::MAX) > baseline.parse().unwrap_or(0) {
                m.violation(format!(
                    "{after} tasks alive after the drops settled, {baseline} before"
                ));
            }
            for error in a.all("error") {
                eprintln!("    {}", error.fields);
            }
            if errors != "0" {
                m.violation(format!("{errors} acquire error(s) during the drops"));
            }
            // The worker stays connected for a few seconds after `done`: a leftover bound to its
            // session or connection would still be there.
            a.wait_for("done", START).await?;
            let done = a.seen("done").map_or(0, |e| e.at);
            target.expect_no_entries(key, m).await?;
            let mut b = cx.direct(
                "B",
                target,
                key,
                false,
                &[
                    "--acquire-only".to_owned(),
                    "--ttl-ms".to_owned(),
                    ms(cx.ttl()),
                ],
            )?;
            let answer = b.wait_for("acquire-result", START).await?;
            if !answer.fields.starts_with("granted") {
                m.violation(format!(
                    "another process found the key taken {:.0} ms after the drops: {}",
                    ms_between(done, answer.at),
                    answer.fields
                ));
            }
            b.finish(START).await?;
            a.finish(START + Duration::from_secs(5)).await?;
            Ok(())
        },
    )
    .await
}
