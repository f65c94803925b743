//! [`InMemorySandboxInstanceStore`]: the store for tests, demos and single
//! processes. Records live as long as the store.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::driver::SandboxInstanceStore;
use crate::errors::StoreError;
use crate::ledger::{LeakEntry, LeakLedger, NewLeak};
use crate::model::SandboxInstanceRecord;

/// An instance store in a `HashMap`. It copies records in and out, so a caller
/// mutating its own record never changes what the store holds.
///
/// Created with [`InMemorySandboxInstanceStore::new`] it behaves exactly like
/// the reference's in-memory store; [`InMemorySandboxInstanceStore::with_ledger`]
/// adds a [`LeakLedger`].
#[derive(Debug, Default)]
pub struct InMemorySandboxInstanceStore {
    state: Mutex<State>,
    keeps_ledger: bool,
}

#[derive(Debug, Default)]
struct State {
    records: HashMap<String, SandboxInstanceRecord>,
    /// Insertion-ordered leaks with the instant their claim expires.
    leaks: Vec<(LeakEntry, Option<Instant>)>,
}

impl InMemorySandboxInstanceStore {
    /// A store without a ledger, like the reference's.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store that also keeps a leak ledger.
    pub fn with_ledger() -> Self {
        Self { state: Mutex::default(), keeps_ledger: true }
    }

    /// Every record, sorted by key (for tests and demos).
    pub fn records(&self) -> Vec<SandboxInstanceRecord> {
        let mut records: Vec<_> = self.lock().records.values().cloned().collect();
        records.sort_by(|a, b| a.key.cmp(&b.key));
        records
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-written record
        // (every write is one map operation), so a poisoned lock is safe to use.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Runs a future that completes on its first poll, which every in-memory
/// store future does (they only take a mutex), without a runtime: how the
/// bindings call this store synchronously. `None` if it was still pending.
pub fn now_or_never<T>(future: impl std::future::Future<Output = T>) -> Option<T> {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(value) => Some(value),
        std::task::Poll::Pending => None,
    }
}

/// Checks a key the way every store does.
pub fn validate_key(key: &str) -> Result<(), StoreError> {
    if key.is_empty() {
        return Err(StoreError::InvalidKey("must be a non-empty string"));
    }
    if key.contains('\0') {
        return Err(StoreError::InvalidKey("must not contain NUL characters"));
    }
    Ok(())
}

#[async_trait]
impl SandboxInstanceStore for InMemorySandboxInstanceStore {
    async fn get(&self, key: &str) -> Result<Option<SandboxInstanceRecord>, StoreError> {
        Ok(self.lock().records.get(key).cloned())
    }

    async fn upsert(&self, record: &SandboxInstanceRecord) -> Result<(), StoreError> {
        record.validate()?;
        self.lock().records.insert(record.key.clone(), record.clone());
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.lock().records.remove(key);
        Ok(())
    }

    fn leak_ledger(&self) -> Option<&dyn LeakLedger> {
        self.keeps_ledger.then_some(self as &dyn LeakLedger)
    }
}

fn same_sandbox(a: &LeakEntry, b: &LeakEntry) -> bool {
    a.provider == b.provider && a.provider_sandbox_id == b.provider_sandbox_id
}

#[async_trait]
impl LeakLedger for InMemorySandboxInstanceStore {
    async fn delete_recording_leak(&self, key: &str, leak: NewLeak) -> Result<(), StoreError> {
        // One lock for both writes: the in-memory form of one transaction.
        let mut state = self.lock();
        state.records.remove(key);
        let entry = leak.into_entry();
        match state.leaks.iter_mut().find(|(known, _)| same_sandbox(known, &entry)) {
            Some((known, _)) => {
                known.attempts += 1;
                known.last_error = entry.last_error;
                known.failed_at = entry.failed_at;
                known.run_id = entry.run_id;
                known.key = entry.key;
            }
            None => state.leaks.push((entry, None)),
        }
        Ok(())
    }

    async fn list_leaks(&self, provider: Option<&str>) -> Result<Vec<LeakEntry>, StoreError> {
        let state = self.lock();
        let matching = state.leaks.iter().filter(|(entry, _)| provider.is_none_or(|name| entry.provider == name));
        Ok(matching.map(|(entry, _)| entry.clone()).collect())
    }

    async fn claim_leaks(&self, provider: &str, limit: usize, lease: Duration) -> Result<Vec<LeakEntry>, StoreError> {
        let now = Instant::now();
        let mut state = self.lock();
        let mut claimed = Vec::new();
        for (entry, claimed_until) in state.leaks.iter_mut() {
            let free = claimed_until.is_none_or(|until| until <= now);
            if claimed.len() < limit && entry.provider == provider && free {
                *claimed_until = Some(now + lease);
                claimed.push(entry.clone());
            }
        }
        Ok(claimed)
    }

    async fn resolve_leak(&self, entry: &LeakEntry) -> Result<(), StoreError> {
        self.lock().leaks.retain(|(known, _)| !same_sandbox(known, entry));
        Ok(())
    }

    async fn record_retry_failure(&self, entry: &LeakEntry, message: &str, failed_at: u64) -> Result<(), StoreError> {
        let mut state = self.lock();
        if let Some((known, claimed_until)) = state.leaks.iter_mut().find(|(known, _)| same_sandbox(known, entry)) {
            known.attempts += 1;
            known.last_error = message.to_owned();
            known.failed_at = failed_at;
            *claimed_until = None;
        }
        Ok(())
    }
}
