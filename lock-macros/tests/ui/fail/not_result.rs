use lock_core::distributed_lock;

#[distributed_lock(key = "order:{id}")]
async fn checkout(id: u64) -> Option<u64> {
    Some(id)
}

fn main() {
    let _ = checkout(1);
}
