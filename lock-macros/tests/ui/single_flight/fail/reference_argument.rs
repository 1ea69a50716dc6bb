use lock_core::cache::CacheFailure;
use lock_core::single_flight;

#[single_flight(key = "visits:{page}")]
async fn visits(page: &str, seen: &mut Vec<String>) -> Result<u64, CacheFailure> {
    seen.push(page.to_owned());
    Ok(1)
}

fn main() {
    let _ = visits("home", &mut Vec::new());
}
