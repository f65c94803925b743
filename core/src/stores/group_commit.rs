//! Group commit for SQLite's reclaim-path writes.
//!
//! A fleet pass ends dozens of reclaims at once, and each ends with a write
//! (`delete`, or `delete_recording_leak`). Committed one by one, every write
//! pays an fsync and the connections of the pool fight for SQLite's single
//! write lock (its busy handler sleeps up to 100 ms between tries). Instead,
//! writes queue here; whoever takes the writer turn commits everything queued
//! so far in one transaction, each write in its own savepoint so one failing
//! write fails alone, and answers every waiter. A lone write commits at once,
//! as before; under load, one fsync covers a whole batch.
//!
//! Callers reach this through [`super::ordered::KeyedOrder`], whose write
//! tasks are never dropped: a write queued here is always committed by its
//! own task's turn or an earlier one, never left for some later writer.

use std::sync::Mutex;

use tokio::sync::oneshot;

use crate::model::ledger::NewLeak;

/// A write that may share a transaction with others.
#[derive(Debug)]
pub(crate) enum Write {
    Delete { key: String },
    DeleteRecordingLeak { key: String, leak: NewLeak },
}

type Waiter = oneshot::Sender<Result<(), String>>;

/// A batch's commit: one result per write, in order. It runs as its own
/// task, so a waiter that goes away never cuts a transaction short.
pub(crate) type BatchCommit = std::pin::Pin<Box<dyn std::future::Future<Output = Vec<Result<(), String>>> + Send>>;

/// The queue of writes waiting for the next commit, and the writer turn.
#[derive(Debug, Default)]
pub(crate) struct GroupCommit {
    queued: Mutex<Vec<(Write, Waiter)>>,
    turn: tokio::sync::Mutex<()>,
}

impl GroupCommit {
    /// Queues `write` and waits for its commit: whoever takes the writer turn
    /// hands everything queued to `commit` (the store's one-transaction batch).
    pub async fn submit(&self, write: Write, commit: impl FnOnce(Vec<Write>) -> BatchCommit) -> Result<(), String> {
        let (waiter, mut answer) = oneshot::channel();
        self.lock().push((write, waiter));
        let _turn = self.turn.lock().await;
        // A previous writer may have committed ours already.
        if let Ok(result) = answer.try_recv() {
            return result;
        }
        let batch = std::mem::take(&mut *self.lock());
        let (writes, waiters): (Vec<Write>, Vec<Waiter>) = batch.into_iter().unzip();
        let count = writes.len();
        let batch = commit(writes);
        // The committing task answers every waiter, so a turn holder that
        // goes away mid-commit cannot leave committed writes reported lost.
        let committed = tokio::spawn(async move {
            let mut results = batch.await;
            results.resize(count, Err("group commit answered too few results".into()));
            for (waiter, result) in waiters.into_iter().zip(results) {
                let _ = waiter.send(result);
            }
        });
        // The turn is held until the batch is answered: batches commit in order.
        let _ = committed.await;
        answer.await.unwrap_or_else(|_| Err("group commit failed before answering this write".into()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Write, Waiter)>> {
        // Pushing and taking cannot leave the vector half-updated.
        self.queued.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
