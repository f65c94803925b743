//! [`InMemorySandboxInstanceStore`]: the store for tests, demos and single
//! processes. Records live as long as the store.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

use crate::contract::errors::StoreError;
use crate::contract::{FleetStore, LeakLedger, SandboxInstanceStore};
use crate::model::fleet::{AuditEntry, DueLeak, LeakReason, ScheduledLeak, StoreFacts, AUDIT_DESTROYED};
use crate::model::ledger::{Held, LeakEntry, NewLeak};
use crate::model::SandboxInstanceRecord;
use crate::runtime::clock::now_millis;
use crate::stores::checks::{lease_end, validate_leak, validate_name};

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
    /// Insertion-ordered leaks (oldest first, as the SQL stores' row ids).
    leaks: Vec<Leak>,
    /// Orphan sweep leases: provider → (holder, epoch milliseconds it ends).
    sweeps: HashMap<String, (String, u64)>,
    /// The audit log, in append order.
    audit: Vec<AuditEntry>,
    /// The registry: (provider, providerSandboxId) of every sandbox a record
    /// named → epoch milliseconds its record was last written or deleted.
    registry: HashMap<(String, String), u64>,
    /// (provider, providerSandboxId) → epoch milliseconds its leak entry was
    /// last resolved (see [`FleetStore::sandbox_references`]).
    resolved: HashMap<(String, String), u64>,
    /// How many records named each (provider, providerSandboxId) now.
    live: HashMap<(String, String), usize>,
    /// Record deletions so far: the store's mark ([`FleetStore::sweep_mark`]).
    deletions: u64,
    /// (provider, providerSandboxId) → the mark its record was last deleted
    /// (or pointed elsewhere) under.
    deleted: HashMap<(String, String), u64>,
    /// The lookup queue: registered sandboxes whose record is gone and that
    /// no lookup found gone → their place (`-deleted at` until checked, then
    /// the time checked), as the SQL stores' `lookup_at`.
    queue: HashMap<(String, String), i64>,
}

/// A ledger entry with its fleet bookkeeping.
#[derive(Debug)]
struct Leak {
    entry: LeakEntry,
    reason: LeakReason,
    /// Epoch milliseconds before which no fleet pass retries it.
    next_attempt_at: u64,
    /// Epoch milliseconds until which a retrier holds it; `None` = free.
    claimed_until: Option<u64>,
    /// Bumped by every claim: the fence of the claim's writes (see
    /// [`LeakEntry::claim`]).
    generation: u64,
}

impl Leak {
    fn free_at(&self, now: u64) -> bool {
        self.claimed_until.is_none_or(|until| until <= now)
    }

    /// Claims it until `until`, for a new generation.
    fn claim(&mut self, until: u64) -> LeakEntry {
        self.generation += 1;
        self.claimed_until = Some(until);
        self.handed()
    }

    /// The entry as a caller sees it: with its claim while one holds.
    fn handed(&self) -> LeakEntry {
        LeakEntry { claim: self.claimed_until.map(|_| self.generation), ..self.entry.clone() }
    }

    /// Whether a write about `entry` may land: it carries no claim (it was
    /// only listed), or the claim it carries is still this one.
    fn fenced_for(&self, entry: &LeakEntry) -> bool {
        entry.claim.is_none_or(|claim| self.claimed_until.is_some() && claim == self.generation)
    }
}

impl State {
    /// Registers what `record` names, as last seen at `at`.
    fn register(&mut self, provider: &str, provider_sandbox_id: &str, at: u64) {
        let seen = self.registry.entry((provider.to_owned(), provider_sandbox_id.to_owned())).or_insert(at);
        *seen = (*seen).max(at);
    }

    /// Stores `record` (an upsert): a record named its sandbox now; one it
    /// replaces that named another sandbox no longer names that one.
    fn put_record(&mut self, record: SandboxInstanceRecord) {
        let sandbox = (record.provider.clone(), record.provider_sandbox_id.clone());
        self.register(&sandbox.0, &sandbox.1, record.updated_at);
        self.queue.remove(&sandbox);
        let old = self.records.insert(record.key.clone(), record);
        match old {
            Some(old) if (&old.provider, &old.provider_sandbox_id) == (&sandbox.0, &sandbox.1) => {}
            Some(old) => {
                *self.live.entry(sandbox).or_default() += 1;
                // Still last seen at its record's last write, as the SQL
                // stores' update trigger keeps it.
                self.unname(&old, old.updated_at);
            }
            None => *self.live.entry(sandbox).or_default() += 1,
        }
    }

    /// Removes record `key`, keeping its sandbox in the registry as last
    /// seen now (the retention counts from the record's deletion).
    fn remove_record(&mut self, key: &str) {
        if let Some(record) = self.records.remove(key) {
            let seen = now_millis().max(record.updated_at);
            self.unname(&record, seen);
        }
    }

    /// `record` no longer names its sandbox: registered as last seen at
    /// `seen`, marked deleted, and (no record naming it any more) queued for
    /// lookup.
    fn unname(&mut self, record: &SandboxInstanceRecord, seen: u64) {
        let sandbox = (record.provider.clone(), record.provider_sandbox_id.clone());
        self.register(&sandbox.0, &sandbox.1, seen);
        self.deletions += 1;
        self.deleted.insert(sandbox.clone(), self.deletions);
        let remaining = self.live.get_mut(&sandbox).map(|count| {
            *count -= 1;
            *count
        });
        if remaining.unwrap_or(0) == 0 {
            self.live.remove(&sandbox);
            self.queue.insert(sandbox, -i64::try_from(seen).unwrap_or(i64::MAX));
        }
    }

    /// A destroy of `sandbox` was confirmed: never a lookup candidate again
    /// (until a record names it again).
    fn confirmed_gone(&mut self, sandbox: &(String, String)) {
        self.queue.remove(sandbox);
    }

    fn named(&self, sandbox: &(String, String)) -> bool {
        self.live.contains_key(sandbox)
    }

    fn in_ledger(&self, provider: &str, provider_sandbox_id: &str) -> bool {
        let same =
            |leak: &&Leak| leak.entry.provider == provider && leak.entry.provider_sandbox_id == provider_sandbox_id;
        self.leaks.iter().any(|leak| same(&leak))
    }

    /// Records `leak`, or bumps the attempts of the entry for the same
    /// sandbox (keeping its place and any claim on it), as the SQL stores'
    /// `ON CONFLICT` does.
    fn record_leak(&mut self, leak: NewLeak, reason: LeakReason, next_attempt_at: u64) {
        let entry = leak.into_entry();
        match self.leaks.iter_mut().find(|known| same_sandbox(&known.entry, &entry)) {
            Some(known) => {
                known.entry.attempts = known.entry.attempts.saturating_add(1);
                known.entry.last_error = entry.last_error;
                known.entry.failed_at = entry.failed_at;
                known.entry.run_id = entry.run_id;
                known.entry.key = entry.key;
                known.reason = reason;
                known.next_attempt_at = next_attempt_at;
            }
            None => self.leaks.push(Leak { entry, reason, next_attempt_at, claimed_until: None, generation: 0 }),
        }
    }
}

impl State {
    /// A claimed entry's destroy failed again: attempts + 1, `message` kept,
    /// its claim released (and its next attempt set, for a fleet pass), if
    /// the claim `entry` carries still holds.
    fn fail_claimed(&mut self, entry: &LeakEntry, message: &str, failed_at: u64, next: Option<u64>) -> Held {
        let Some(known) = self.leaks.iter_mut().find(|known| same_sandbox(&known.entry, entry)) else {
            return entry.claim.is_none();
        };
        if !known.fenced_for(entry) {
            return false;
        }
        known.entry.attempts = known.entry.attempts.saturating_add(1);
        known.entry.last_error = message.to_owned();
        known.entry.failed_at = failed_at;
        if let Some(next) = next {
            known.next_attempt_at = next;
        }
        known.claimed_until = None;
        true
    }
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

#[async_trait]
impl SandboxInstanceStore for InMemorySandboxInstanceStore {
    async fn get(&self, key: &str) -> Result<Option<SandboxInstanceRecord>, StoreError> {
        Ok(self.lock().records.get(key).cloned())
    }

    async fn upsert(&self, record: &SandboxInstanceRecord) -> Result<(), StoreError> {
        record.validate()?;
        self.lock().put_record(record.clone());
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.lock().remove_record(key);
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
        state.remove_record(key);
        let due = leak.failed_at;
        state.record_leak(leak, LeakReason::DestroyFailed, due);
        Ok(())
    }

    async fn list_leaks(&self, provider: Option<&str>) -> Result<Vec<LeakEntry>, StoreError> {
        let state = self.lock();
        let matching = state.leaks.iter().filter(|leak| provider.is_none_or(|name| leak.entry.provider == name));
        // A listing hands out no claim to write under.
        Ok(matching.map(|leak| leak.entry.clone()).collect())
    }

    async fn claim_leaks(&self, provider: &str, limit: usize, lease: Duration) -> Result<Vec<LeakEntry>, StoreError> {
        let now = now_millis();
        let until = lease_end(now, u64::try_from(lease.as_millis()).unwrap_or(u64::MAX));
        let mut state = self.lock();
        let mut claimed = Vec::new();
        for leak in state.leaks.iter_mut() {
            if claimed.len() < limit && leak.entry.provider == provider && leak.free_at(now) {
                claimed.push(leak.claim(until));
            }
        }
        Ok(claimed)
    }

    async fn resolve_leak(&self, entry: &LeakEntry) -> Result<Held, StoreError> {
        let mut state = self.lock();
        let Some(index) = state.leaks.iter().position(|known| same_sandbox(&known.entry, entry)) else {
            return Ok(entry.claim.is_none());
        };
        if !state.leaks[index].fenced_for(entry) {
            return Ok(false);
        }
        // Noted as resolved now: a sweep spares what was resolved within its
        // grace (a lagging listing cannot get it destroyed again).
        let gone = state.leaks.remove(index).entry;
        let sandbox = (gone.provider, gone.provider_sandbox_id);
        state.confirmed_gone(&sandbox);
        state.resolved.insert(sandbox, now_millis());
        Ok(true)
    }

    async fn record_retry_failure(&self, entry: &LeakEntry, message: &str, failed_at: u64) -> Result<Held, StoreError> {
        Ok(self.lock().fail_claimed(entry, message, failed_at, None))
    }
}

#[async_trait]
impl FleetStore for InMemorySandboxInstanceStore {
    async fn list_stale(&self, older_than: u64, limit: usize) -> Result<Vec<SandboxInstanceRecord>, StoreError> {
        let state = self.lock();
        let mut stale: Vec<_> = state.records.values().filter(|record| record.updated_at < older_than).collect();
        stale.sort_by(|a, b| (a.updated_at, &a.key).cmp(&(b.updated_at, &b.key)));
        Ok(stale.into_iter().take(limit).cloned().collect())
    }

    async fn expire_idle(&self, key: &str, seen_updated_at: u64, leak: NewLeak) -> Result<bool, StoreError> {
        validate_leak(key, &leak)?;
        let mut state = self.lock();
        if state.records.get(key).is_none_or(|record| record.updated_at != seen_updated_at) {
            return Ok(false);
        }
        state.remove_record(key);
        let due = leak.failed_at;
        state.record_leak(leak, LeakReason::Idle, due);
        Ok(true)
    }

    async fn sandbox_references(&self, provider: &str, destroyed_since: u64) -> Result<Vec<String>, StoreError> {
        let state = self.lock();
        let records = state.records.values().filter(|record| record.provider == provider);
        let leaks = state.leaks.iter().map(|leak| &leak.entry).filter(|entry| entry.provider == provider);
        let destroyed = state
            .audit
            .iter()
            .filter(|row| row.provider == provider && row.result == AUDIT_DESTROYED && row.at >= destroyed_since);
        let resolved = state.resolved.iter().filter(|((name, _), at)| name == provider && **at >= destroyed_since);
        let ids = records
            .map(|record| &record.provider_sandbox_id)
            .chain(leaks.map(|entry| &entry.provider_sandbox_id))
            .chain(destroyed.map(|row| &row.provider_sandbox_id))
            .chain(resolved.map(|((_, id), _)| id));
        let mut ids: Vec<String> = ids.cloned().collect();
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    async fn registered_sandboxes(&self, provider: &str, since: u64) -> Result<Vec<String>, StoreError> {
        let state = self.lock();
        let live = state.records.values().filter(|record| record.provider == provider);
        let kept = state.registry.iter().filter(|((name, _), seen)| name == provider && **seen >= since);
        let ids = live.map(|record| &record.provider_sandbox_id).chain(kept.map(|((_, id), _)| id));
        let mut ids: Vec<String> = ids.cloned().collect();
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    fn scoped_reads(&self) -> bool {
        true
    }

    async fn sweep_mark(&self, _provider: &str) -> Result<u64, StoreError> {
        Ok(self.lock().deletions)
    }

    async fn referenced_among(
        &self,
        provider: &str,
        ids: &[String],
        destroyed_since: u64,
        mark: u64,
    ) -> Result<Vec<String>, StoreError> {
        let state = self.lock();
        let destroyed: std::collections::HashSet<&str> = state
            .audit
            .iter()
            .filter(|row| row.provider == provider && row.result == AUDIT_DESTROYED && row.at >= destroyed_since)
            .map(|row| row.provider_sandbox_id.as_str())
            .collect();
        let referenced = |id: &String| {
            let sandbox = (provider.to_owned(), id.clone());
            state.named(&sandbox)
                || state.in_ledger(provider, id)
                || destroyed.contains(id.as_str())
                || state.resolved.get(&sandbox).is_some_and(|at| *at >= destroyed_since)
                || state.deleted.get(&sandbox).is_some_and(|deleted| *deleted > mark)
        };
        Ok(sorted(ids.iter().filter(|id| referenced(id)).cloned().collect()))
    }

    async fn registered_among(&self, provider: &str, ids: &[String], since: u64) -> Result<Vec<String>, StoreError> {
        let state = self.lock();
        let registered = |id: &String| {
            let sandbox = (provider.to_owned(), id.clone());
            state.named(&sandbox) || state.registry.get(&sandbox).is_some_and(|seen| *seen >= since)
        };
        Ok(sorted(ids.iter().filter(|id| registered(id)).cloned().collect()))
    }

    async fn lookup_candidates(&self, provider: &str, since: u64, limit: usize) -> Result<Vec<String>, StoreError> {
        let state = self.lock();
        let mut queued: Vec<(i64, &String)> = state
            .queue
            .iter()
            .filter(|(sandbox, _)| {
                sandbox.0 == provider
                    && state.registry.get(*sandbox).is_some_and(|seen| *seen >= since)
                    && !state.named(sandbox)
                    && !state.in_ledger(&sandbox.0, &sandbox.1)
            })
            .map(|((_, id), place)| (*place, id))
            .collect();
        queued.sort();
        Ok(queued.into_iter().take(limit).map(|(_, id)| id.clone()).collect())
    }

    async fn lookup_checked(
        &self,
        provider: &str,
        gone: &[String],
        checked: &[String],
        now: u64,
    ) -> Result<(), StoreError> {
        let mut state = self.lock();
        for id in gone {
            let sandbox = (provider.to_owned(), id.clone());
            if state.queue.remove(&sandbox).is_some() {
                state.resolved.insert(sandbox, now_millis());
            }
        }
        for id in checked {
            if let Some(place) = state.queue.get_mut(&(provider.to_owned(), id.clone())) {
                *place = i64::try_from(now).unwrap_or(i64::MAX);
            }
        }
        Ok(())
    }

    async fn record_leak(&self, leak: NewLeak, reason: LeakReason, next_attempt_at: u64) -> Result<(), StoreError> {
        validate_leak(&leak.key, &leak)?;
        self.lock().record_leak(leak, reason, next_attempt_at);
        Ok(())
    }

    async fn due_leaks(
        &self,
        provider: &str,
        limit: usize,
        lease_ms: Option<u64>,
        now: u64,
    ) -> Result<Vec<DueLeak>, StoreError> {
        let mut state = self.lock();
        let mut due = Vec::new();
        for leak in state.leaks.iter_mut() {
            if due.len() >= limit {
                break;
            }
            if leak.entry.provider != provider || leak.next_attempt_at > now || !leak.free_at(now) {
                continue;
            }
            let entry = match lease_ms {
                Some(lease_ms) => leak.claim(lease_end(now, lease_ms)),
                None => leak.handed(),
            };
            due.push(DueLeak { entry, reason: leak.reason, next_attempt_at: leak.next_attempt_at });
        }
        Ok(due)
    }

    async fn defer_leak(
        &self,
        entry: &LeakEntry,
        message: &str,
        failed_at: u64,
        next_attempt_at: u64,
    ) -> Result<Held, StoreError> {
        Ok(self.lock().fail_claimed(entry, message, failed_at, Some(next_attempt_at)))
    }

    async fn claim_sweep(&self, provider: &str, holder: &str, lease_ms: u64, now: u64) -> Result<bool, StoreError> {
        validate_name("provider", provider)?;
        validate_name("holder", holder)?;
        let mut state = self.lock();
        let taken = match state.sweeps.get(provider) {
            Some((current, until)) => current == holder || *until <= now,
            None => true,
        };
        if taken {
            state.sweeps.insert(provider.to_owned(), (holder.to_owned(), lease_end(now, lease_ms)));
        }
        Ok(taken)
    }

    async fn release_sweep(&self, provider: &str, holder: &str) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.sweeps.get(provider).is_some_and(|(current, _)| current == holder) {
            state.sweeps.remove(provider);
        }
        Ok(())
    }

    async fn append_audit(&self, entries: &[AuditEntry]) -> Result<(), StoreError> {
        let mut state = self.lock();
        for entry in entries.iter().filter(|entry| entry.result == AUDIT_DESTROYED) {
            state.confirmed_gone(&(entry.provider.clone(), entry.provider_sandbox_id.clone()));
        }
        state.audit.extend_from_slice(entries);
        Ok(())
    }

    async fn prune(&self, provider: &str, registry_before: u64, audit_before: u64) -> Result<(), StoreError> {
        let mut state = self.lock();
        state.registry.retain(|(name, _), seen| name != provider || *seen >= registry_before);
        let State { registry, deleted, queue, .. } = &mut *state;
        deleted.retain(|sandbox, _| registry.contains_key(sandbox));
        queue.retain(|sandbox, _| registry.contains_key(sandbox));
        state.audit.retain(|row| row.provider != provider || row.at >= audit_before);
        // A resolve counts like an audit row of its destroy (the sweep spares both).
        state.resolved.retain(|(name, _), at| name != provider || *at >= audit_before);
        Ok(())
    }

    async fn list_audit(&self, since: Option<u64>, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        let state = self.lock();
        let since = since.unwrap_or(0);
        Ok(state.audit.iter().filter(|entry| entry.at >= since).take(limit).cloned().collect())
    }

    async fn scheduled_leaks(&self) -> Result<Vec<ScheduledLeak>, StoreError> {
        let state = self.lock();
        Ok(state
            .leaks
            .iter()
            .map(|leak| ScheduledLeak {
                // A listing hands out no claim to write under.
                due: DueLeak { entry: leak.entry.clone(), reason: leak.reason, next_attempt_at: leak.next_attempt_at },
                claimed_until: leak.claimed_until,
            })
            .collect())
    }

    async fn facts(&self) -> Result<StoreFacts, StoreError> {
        let state = self.lock();
        Ok(StoreFacts {
            schema_version: 0,
            records: state.records.len() as u64,
            last_audit_at: state.audit.iter().map(|entry| entry.at).max(),
        })
    }
}

/// Sorted, each once (the order the SQL stores answer in).
fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids.dedup();
    ids
}
