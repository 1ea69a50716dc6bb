//! Inherent and trait-impl methods with `&self`, `&mut self` and `self`, generic fns, and a
//! renamed lock-core (`crate = ...`).

use std::fmt::Display;

use lock_core::{distributed_lock, LockClient, LockError, MemoryBackend};

mod app {
    // lock-core re-exported under another name, as a facade crate would.
    pub use lock_core as locks;
}

struct Account {
    locks: LockClient,
    id: u64,
    balance: i64,
}

impl Account {
    #[distributed_lock(key = "account:{self.id}", client = self.locks)]
    async fn balance(&self) -> Result<i64, LockError> {
        Ok(self.balance)
    }

    #[distributed_lock(key = "account:{self.id}", client = self.locks.clone(), fence = fence)]
    async fn deposit(&mut self, amount: i64) -> Result<lock_core::FencingToken, LockError> {
        self.balance += amount;
        Ok(fence)
    }

    #[distributed_lock(key = "account:{self.id}", client = self.locks.clone())]
    async fn close(self) -> Result<i64, LockError> {
        Ok(self.balance)
    }
}

trait Ledger {
    async fn post(&self, entry: &str) -> Result<usize, LockError>;
}

impl Ledger for Account {
    #[distributed_lock(key = "ledger:{self.id}:{entry}", client = self.locks, crate = app::locks)]
    async fn post(&self, entry: &str) -> Result<usize, LockError> {
        Ok(entry.len())
    }
}

#[distributed_lock(key = "item:{item}", client = locks)]
async fn generic<T, C>(locks: &C, item: T) -> Result<String, LockError>
where
    T: Display + Send,
    C: std::borrow::Borrow<LockClient> + Sync,
{
    Ok(item.to_string())
}

/// Handlers and services need `Send` futures; the lock adds nothing that is not.
fn assert_send<F: std::future::Future + Send>(future: F) -> F {
    future
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let locks = LockClient::new(MemoryBackend::new());
        let mut account = Account { locks: locks.clone(), id: 1, balance: 10 };
        assert_eq!(account.balance().await.unwrap(), 10);
        assert!(account.deposit(5).await.unwrap().get() > 0);
        assert_eq!(account.post("rent").await.unwrap(), 4);
        assert_eq!(assert_send(account.balance()).await.unwrap(), 15);
        assert_eq!(account.close().await.unwrap(), 15);
        assert_eq!(assert_send(generic(&locks, 7)).await.unwrap(), "7");
    });
}
