use lock_core::cache::CacheFailure;
use lock_core::single_flight;

struct Product {
    id: u64,
}

#[single_flight(key = "product:{id}")]
async fn product(id: u64) -> Result<Product, CacheFailure> {
    Ok(Product { id })
}

fn main() {
    let _ = product(1);
}
