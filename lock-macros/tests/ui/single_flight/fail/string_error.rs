use lock_core::single_flight;

#[single_flight(key = "product:{id}")]
async fn product(id: u64) -> Result<u64, String> {
    Ok(id)
}

fn main() {
    let _ = product(1);
}
