use lock_core::cache::CacheFailure;
use lock_core::single_flight;

struct Connection;

#[single_flight(key = "product:{id}")]
async fn product(db: &Connection, id: u64) -> Result<u64, CacheFailure> {
    let _ = db;
    Ok(id)
}

fn main() {
    let _ = product(&Connection, 1);
}
