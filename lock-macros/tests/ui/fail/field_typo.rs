use lock_core::{distributed_lock, LockError};

struct Order {
    id: u64,
}

#[distributed_lock(key = "order:{order.idd}:{user_id}")]
async fn checkout(order: Order, user_id: u32) -> Result<u64, LockError> {
    Ok(order.id + u64::from(user_id))
}

fn main() {
    let _ = checkout(Order { id: 1 }, 2);
}
