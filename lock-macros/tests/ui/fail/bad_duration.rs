use lock_core::{distributed_lock, LockError};

#[distributed_lock(key = "order:{id}", wait = "3 parsecs")]
async fn checkout(id: u64) -> Result<u64, LockError> {
    Ok(id)
}

fn main() {
    let _ = checkout(1);
}
