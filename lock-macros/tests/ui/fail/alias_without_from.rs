use lock_core::distributed_lock;

/// An error of the application's own that says nothing about locks.
#[derive(Debug)]
enum AppError {
    NotFound,
}

type AppResult<T> = Result<T, AppError>;

#[distributed_lock(key = "order:{id}")]
async fn checkout(id: u64) -> AppResult<u64> {
    if id == 0 {
        return Err(AppError::NotFound);
    }
    Ok(id)
}

fn main() {
    let _ = checkout(1);
}
