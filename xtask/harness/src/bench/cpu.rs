//! CPU seconds spent, for the figures that say where the time goes: this process's (user and
//! system, from `/proc/self/stat`, at the kernel's clock-tick resolution) and a Redis server's
//! (`INFO cpu`).

/// This process's CPU seconds so far (user + system); 0 where `/proc` is not there.
#[must_use]
pub fn process_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // The fields after the command name (which is in parentheses and may hold spaces):
    // utime and stime are the 12th and 13th of them.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<f64>().ok())
        .sum();
    ticks / CLOCK_TICKS_PER_SECOND
}

/// Linux's `USER_HZ`, the unit of `/proc/<pid>/stat`'s times (100 on every mainstream
/// architecture).
const CLOCK_TICKS_PER_SECOND: f64 = 100.0;

/// The CPU seconds (user and system) the Redis servers at `urls` have used since they started.
pub async fn redis_seconds(urls: &[String]) -> f64 {
    let mut total = 0.0;
    for url in urls {
        let mut connection = redis::Client::open(url.as_str())
            .expect("server URL")
            .get_multiplexed_async_connection()
            .await
            .expect("a server");
        let info: String = redis::cmd("INFO")
            .arg("cpu")
            .query_async(&mut connection)
            .await
            .expect("INFO cpu");
        total += info
            .lines()
            .filter_map(|line| {
                let (name, value) = line.trim().split_once(':')?;
                matches!(name, "used_cpu_sys" | "used_cpu_user")
                    .then(|| value.parse::<f64>().ok())
                    .flatten()
            })
            .sum::<f64>();
    }
    total
}
