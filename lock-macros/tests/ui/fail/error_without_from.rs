use lock_core::distributed_lock;

#[derive(Debug)]
struct AppError;

#[distributed_lock(key = "order:{id}")]
async fn checkout(id: u64) -> Result<u64, AppError> {
    Ok(id)
}

fn main() {
    let _ = checkout(1);
}
