// No encoding keeps `("ab", "c")` and `("a", "bc")` apart without text between the two.
use lock_core::{distributed_lock, LockError};

#[distributed_lock(key = "order:{id}{line}")]
async fn checkout(id: u64, line: u32) -> Result<u64, LockError> {
    Ok(id + u64::from(line))
}

fn main() {
    let _ = checkout(1, 2);
}
