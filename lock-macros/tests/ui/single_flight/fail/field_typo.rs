use lock_core::cache::CacheFailure;
use lock_core::single_flight;

struct Order {
    id: u64,
}

#[single_flight(key = "order:{order.idd}")]
async fn total(order: Order) -> Result<u64, CacheFailure> {
    Ok(order.id * 2)
}

fn main() {
    let _ = total(Order { id: 1 });
}
