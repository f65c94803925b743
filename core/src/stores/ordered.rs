//! Instance writes that keep their order, whatever their callers do.
//!
//! A write to one `sandboxKey` commits after every write to that key issued
//! before it, and before every one issued after it; and once issued it runs
//! to its end even if its caller goes away. Why: a cancelled `delete(key)`
//! (a dropped future: a Rust `timeout`, a cancelled Python task) used to stay
//! queued and land later, after a fresh `upsert(key)` of a resumed run, so
//! the live record vanished and the next sweep destroyed a sandbox in use.
//!
//! A write is *issued* when its future is first polled (the store's async
//! method starts): one that is never polled never runs ("in order or not at
//! all"). Each issued write runs as its own task, which waits for the
//! previous write to the same key, runs, and answers its caller if it is
//! still there. Writes to different keys do not wait for each other.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use tokio::sync::oneshot;

use crate::contract::errors::StoreError;

/// The tail of each key's chain of writes: the generation of the last write
/// issued to it, and what finishes when that write has committed.
#[derive(Debug, Default)]
pub(crate) struct KeyedOrder {
    tails: Mutex<HashMap<String, (u64, oneshot::Receiver<()>)>>,
    generation: std::sync::atomic::AtomicU64,
}

impl KeyedOrder {
    /// Issues `write` for `key` now and waits for its result. Dropping the
    /// returned future does not cancel the write; it still commits in order.
    pub fn run<T, F>(
        self: &std::sync::Arc<Self>,
        key: &str,
        write: F,
    ) -> impl Future<Output = Result<T, StoreError>> + Send + 'static
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let generation = self.generation.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (committed, mine) = oneshot::channel::<()>();
        let previous = self.lock().insert(key.to_owned(), (generation, mine)).map(|(_, tail)| tail);
        let order = std::sync::Arc::clone(self);
        let key = key.to_owned();
        let task = tokio::spawn(async move {
            if let Some(previous) = previous {
                // Err: the previous write finished (its sender dropped).
                let _ = previous.await;
            }
            let result = write.await;
            drop(committed);
            order.forget(&key, generation);
            result
        });
        async move {
            task.await.unwrap_or_else(|error| Err(StoreError::backend(format!("a store write task failed: {error}"))))
        }
    }

    /// Drops `key`'s tail if no later write was issued after `generation`.
    fn forget(&self, key: &str, generation: u64) {
        let mut tails = self.lock();
        if tails.get(key).is_some_and(|(last, _)| *last == generation) {
            tails.remove(key);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, oneshot::Receiver<()>)>> {
        // Inserting and removing cannot leave the map half-updated.
        self.tails.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
