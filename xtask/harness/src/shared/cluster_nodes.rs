//! What a Redis Cluster node says of its cluster (`CLUSTER NODES`), read by the chaos failover
//! scenario (which primary owns a key's slot) and the cluster bench (every primary's CPU).

/// The primaries of a `CLUSTER NODES` text that are not failed: `ip:port` and slot ranges.
pub fn cluster_primaries(text: &str) -> Vec<(String, Vec<(u16, u16)>)> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags = fields.get(2)?;
            if !flags.split(',').any(|f| f == "master") || flags.contains("fail") {
                return None;
            }
            let addr = fields.get(1)?.split('@').next()?.to_owned();
            let ranges = fields
                .iter()
                .skip(8)
                .filter(|r| !r.starts_with('['))
                .filter_map(|r| match r.split_once('-') {
                    Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                    None => r.parse().ok().map(|s| (s, s)),
                })
                .collect();
            Some((addr, ranges))
        })
        .collect()
}
