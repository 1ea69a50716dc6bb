use lock_core::{distributed_lock, LockError};

struct Receipt;

#[distributed_lock(key = "order:{id}", on_busy = "skip")]
async fn checkout(id: u64) -> Result<Receipt, LockError> {
    let _ = id;
    Ok(Receipt)
}

fn main() {
    let _ = checkout(1);
}
