//! Statements that share one round trip under load (PostgreSQL).
//!
//! A fleet pass reads and deletes dozens of records at once, each with a
//! statement of its own: the database parses, plans and commits each one,
//! and on a small host that work competes with the pass itself (a `make
//! bench` pass spent more CPU in PostgreSQL than in the reclaims). Here a
//! call queues its item; at most `limit` batches run at a time, each taking
//! everything queued so far (up to `max_batch`) into one statement and
//! answering every waiter. A lone call runs at once, as before; calls that
//! arrive while the database is busy go together in the next statement.
//!
//! Each batch runs as its own task, so a waiter that goes away never cuts a
//! statement short (a delete issued through [`super::ordered::KeyedOrder`]
//! lands once or not at all, never later than a write issued after it).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

/// One batch's statement: one answer per item, in order, or one error for all.
pub(crate) type Run<I, O> =
    Arc<dyn Fn(Vec<I>) -> Pin<Box<dyn Future<Output = Result<Vec<O>, String>> + Send>> + Send + Sync>;

type Waiter<O> = oneshot::Sender<Result<O, String>>;

struct Queue<I, O> {
    queued: Vec<(I, Waiter<O>)>,
    running: usize,
}

/// Items waiting for the next batch, and the batches running.
pub(crate) struct Coalesce<I, O> {
    queue: Mutex<Queue<I, O>>,
    limit: usize,
    max_batch: usize,
    run: Run<I, O>,
}

impl<I, O> std::fmt::Debug for Coalesce<I, O> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Coalesce").field("limit", &self.limit).field("max_batch", &self.max_batch).finish()
    }
}

impl<I: Send + 'static, O: Send + 'static> Coalesce<I, O> {
    /// At most `limit` statements at a time, each of at most `max_batch` items.
    pub fn new(limit: usize, max_batch: usize, run: Run<I, O>) -> Arc<Self> {
        let queue = Mutex::new(Queue { queued: Vec::new(), running: 0 });
        Arc::new(Self { queue, limit: limit.max(1), max_batch: max_batch.max(1), run })
    }

    /// Queues `item` now (when called, not when first polled) and answers its result.
    pub fn submit(self: &Arc<Self>, item: I) -> impl Future<Output = Result<O, String>> + Send + 'static {
        let (waiter, answer) = oneshot::channel();
        let start = {
            let mut queue = self.lock();
            queue.queued.push((item, waiter));
            let start = queue.running < self.limit;
            queue.running += usize::from(start);
            start
        };
        if start {
            tokio::spawn(Arc::clone(self).drain());
        }
        async move { answer.await.unwrap_or_else(|_| Err("a batched statement failed before answering".to_owned())) }
    }

    /// One runner: statements until nothing is queued.
    async fn drain(self: Arc<Self>) {
        // Frees the runner's place if a statement panics (its waiters then
        // hear a failure); a runner that finds nothing queued frees it itself,
        // under the same lock, so no item is ever queued with no runner.
        struct Running<'a, I, O>(&'a Coalesce<I, O>, bool);
        impl<I, O> Drop for Running<'_, I, O> {
            fn drop(&mut self) {
                if self.1 {
                    self.0.queue.lock().unwrap_or_else(PoisonError::into_inner).running -= 1;
                }
            }
        }
        let mut running = Running(&*self, true);
        loop {
            let batch: Vec<(I, Waiter<O>)> = {
                let mut queue = self.lock();
                if queue.queued.is_empty() {
                    queue.running -= 1;
                    running.1 = false;
                    return;
                }
                let take = queue.queued.len().min(self.max_batch);
                queue.queued.drain(..take).collect()
            };
            let (items, waiters): (Vec<I>, Vec<Waiter<O>>) = batch.into_iter().unzip();
            let count = items.len();
            match (self.run)(items).await {
                Ok(answers) if answers.len() == count => {
                    for (waiter, answer) in waiters.into_iter().zip(answers) {
                        let _ = waiter.send(Ok(answer));
                    }
                }
                Ok(_) => {
                    for waiter in waiters {
                        let _ = waiter.send(Err("a batched statement answered the wrong number of results".to_owned()));
                    }
                }
                Err(error) => {
                    for waiter in waiters {
                        let _ = waiter.send(Err(error.clone()));
                    }
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue<I, O>> {
        // Pushing and draining cannot leave the queue half-updated.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::{Coalesce, Run};

    /// A statement that records each batch it runs and answers every item doubled.
    fn doubling(batches: Arc<Mutex<Vec<Vec<u32>>>>, panic_on: Option<u32>) -> Run<u32, u32> {
        Arc::new(move |items: Vec<u32>| {
            let batches = batches.clone();
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                assert!(!panic_on.is_some_and(|bad| items.contains(&bad)), "statement failed");
                batches.lock().unwrap().push(items.clone());
                Ok(items.into_iter().map(|item| item * 2).collect())
            })
        })
    }

    #[tokio::test]
    async fn a_lone_call_runs_at_once_and_later_calls_share_the_next_statement() {
        let batches = Arc::new(Mutex::new(Vec::new()));
        let coalesce = Coalesce::new(1, 3, doubling(batches.clone(), None));
        let first = coalesce.submit(1);
        tokio::task::yield_now().await;
        let rest: Vec<_> = (2..=6).map(|item| coalesce.submit(item)).collect();
        assert_eq!(first.await, Ok(2));
        for (item, answer) in (2..=6).zip(rest) {
            assert_eq!(answer.await, Ok(item * 2));
        }
        assert_eq!(*batches.lock().unwrap(), vec![vec![1], vec![2, 3, 4], vec![5, 6]]);
    }

    #[tokio::test]
    async fn a_statement_that_panics_fails_its_own_batch_and_frees_its_place() {
        let batches = Arc::new(Mutex::new(Vec::new()));
        let coalesce = Coalesce::new(1, 10, doubling(batches.clone(), Some(7)));
        assert!(coalesce.submit(7).await.is_err(), "the panicking batch answers an error");
        // The only runner's place is free again: a later call is answered.
        let answer = tokio::time::timeout(Duration::from_secs(5), coalesce.submit(8)).await;
        assert_eq!(answer.expect("answered, not stranded"), Ok(16));
    }

    #[tokio::test]
    async fn a_caller_that_goes_away_does_not_cut_its_statement_short() {
        let batches = Arc::new(Mutex::new(Vec::new()));
        let coalesce = Coalesce::new(1, 10, doubling(batches.clone(), None));
        drop(coalesce.submit(3));
        assert_eq!(coalesce.submit(4).await, Ok(8));
        let ran: Vec<u32> = batches.lock().unwrap().concat();
        assert_eq!(ran, vec![3, 4], "the abandoned item still ran, before the later one");
    }
}
