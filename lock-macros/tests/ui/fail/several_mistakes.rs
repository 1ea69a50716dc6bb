// Every bad argument gets its own error in one compile, and the fn is still emitted: `main`
// calling it type-checks, so no error follows from the fn being missing.
use lock_core::{distributed_lock, LockError};

#[distributed_lock(key = "order:{id}:{sku}", ttl = "soon", on_lost = "retry")]
async fn checkout(id: u64) -> Result<u64, LockError> {
    Ok(id)
}

fn main() {
    let _: std::pin::Pin<Box<dyn std::future::Future<Output = Result<u64, LockError>>>> =
        Box::pin(checkout(1));
}
