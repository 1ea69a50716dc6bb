use lock_core::cache::CacheFailure;
use lock_core::single_flight;

#[single_flight(key = "product:{id}", ttl = "60s", stale = "5 fortnights")]
async fn product(id: u64) -> Result<u64, CacheFailure> {
    Ok(id)
}

fn main() {
    let _ = product(1);
}
