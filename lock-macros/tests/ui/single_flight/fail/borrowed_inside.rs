use lock_core::cache::CacheFailure;
use lock_core::single_flight;

#[single_flight(key = "product:{id}")]
async fn product(id: u64, locale: Option<&str>) -> Result<String, CacheFailure> {
    Ok(format!("{id} {locale:?}"))
}

fn main() {
    let _ = product(1, None);
}
