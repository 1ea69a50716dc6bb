use lock_core::single_flight;

#[derive(Debug)]
struct AppError;

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("app error")
    }
}

#[single_flight(key = "product:{id}")]
async fn product(id: u64) -> Result<u64, AppError> {
    Ok(id)
}

fn main() {
    let _ = product(1);
}
