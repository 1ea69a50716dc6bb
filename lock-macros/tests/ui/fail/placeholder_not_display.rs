use lock_core::{distributed_lock, LockError};

struct Order {
    id: u64,
}

#[distributed_lock(key = "order:{order}")]
async fn checkout(order: Order) -> Result<u64, LockError> {
    Ok(order.id)
}

fn main() {
    let _ = checkout(Order { id: 1 });
}
