use lock_core::cache::CacheFailure;
use lock_core::single_flight;

struct Catalog {
    markup: u64,
}

impl Catalog {
    #[single_flight(key = "price:{id}")]
    async fn price(&self, id: u64) -> Result<u64, CacheFailure> {
        Ok(id * self.markup)
    }
}

fn main() {
    let _ = Catalog { markup: 2 }.price(1);
}
