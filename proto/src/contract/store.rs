//! What a store is to every flow: the reference's instance store, the leak
//! ledger a store may keep, and what a fleet pass needs beyond it.

use std::time::Duration;

use async_trait::async_trait;

use crate::contract::errors::StoreError;
use crate::model::fleet::{AuditEntry, DueLeak, LeakReason, ScheduledLeak, StoreFacts};
use crate::model::ledger::{summarize, Held, LeakEntry, LeakSummary, NewLeak};
use crate::model::SandboxInstanceRecord;

/// Maps sandbox keys to instance records (`SandboxStore` in `@tanstack/ai-sandbox`).
///
/// Contract: `get` of a missing key is `None`; `upsert` fully replaces, so
/// omitted optionals read back absent; deleting a missing key is a no-op.
#[async_trait]
pub trait SandboxInstanceStore: Send + Sync {
    async fn get(&self, key: &str) -> Result<Option<SandboxInstanceRecord>, StoreError>;
    async fn upsert(&self, record: &SandboxInstanceRecord) -> Result<(), StoreError>;
    async fn delete(&self, key: &str) -> Result<(), StoreError>;
    /// The store's leak ledger, if it keeps one. With a ledger, a failed
    /// destroy's delete also records the possibly-running sandbox.
    fn leak_ledger(&self) -> Option<&dyn LeakLedger> {
        None
    }
}

/// A store's ledger. Every method is atomic on its own.
#[async_trait]
pub trait LeakLedger: Send + Sync {
    /// Deletes the instance record `key` and records `leak`, in one
    /// transaction: afterwards either both happened or neither did.
    async fn delete_recording_leak(&self, key: &str, leak: NewLeak) -> Result<(), StoreError>;
    /// Pending entries, oldest first, of one provider or of all.
    async fn list_leaks(&self, provider: Option<&str>) -> Result<Vec<LeakEntry>, StoreError>;
    /// How many entries are pending, of one provider or of all.
    async fn count_leaks(&self, provider: Option<&str>) -> Result<u64, StoreError> {
        Ok(self.list_leaks(provider).await?.len() as u64)
    }
    /// Per provider with pending entries: how many, and the oldest failure.
    /// What the command's metrics show each pass; the durable stores answer
    /// it with one grouping query rather than reading the whole ledger.
    async fn summarize_leaks(&self) -> Result<Vec<LeakSummary>, StoreError> {
        Ok(summarize(&self.list_leaks(None).await?))
    }
    /// Claims up to `limit` of `provider`'s entries for `lease`. An entry
    /// claimed by another retrier whose lease has not expired is skipped, so
    /// two hosts never retry the same sandbox at once. Each entry comes back
    /// with its new [`LeakEntry::claim`] generation.
    async fn claim_leaks(&self, provider: &str, limit: usize, lease: Duration) -> Result<Vec<LeakEntry>, StoreError>;
    /// Removes a claimed entry whose sandbox is now destroyed. `Ok(false)`:
    /// the claim no longer holds (another retrier took the entry after the
    /// lease ran out), and nothing was written.
    async fn resolve_leak(&self, entry: &LeakEntry) -> Result<Held, StoreError>;
    /// Bumps a claimed entry's attempts, keeps `message` and releases the
    /// claim. `Ok(false)`: the claim no longer holds; nothing was written.
    async fn record_retry_failure(&self, entry: &LeakEntry, message: &str, failed_at: u64) -> Result<Held, StoreError>;
}

/// A store a fleet pass can run against: every store this library ships
/// (in memory, SQLite, PostgreSQL) implements it.
#[async_trait]
pub trait FleetStore: LeakLedger {
    /// Instance records last updated before `older_than`, oldest first, at
    /// most `limit` (served by an index on `updated_at`).
    async fn list_stale(&self, older_than: u64, limit: usize) -> Result<Vec<SandboxInstanceRecord>, StoreError>;

    /// Idle expiry, in one transaction: deletes record `key` only if its
    /// `updated_at` is still `seen_updated_at`, and records `leak` (reason
    /// `idle`, due at once). `Ok(false)`: the record was touched or is gone,
    /// and nothing was written.
    async fn expire_idle(&self, key: &str, seen_updated_at: u64, leak: NewLeak) -> Result<bool, StoreError>;

    /// Every `providerSandboxId` of `provider` that an instance record or a
    /// leak entry references, that an audit row says was destroyed at or
    /// after `destroyed_since`, or whose leak entry was resolved at or after
    /// it (a leak retry confirmed its destroy). The orphan sweep spares them
    /// all: a provider's listing lags, and what a pass or a leak retry on any
    /// host just destroyed may still be listed.
    async fn sandbox_references(&self, provider: &str, destroyed_since: u64) -> Result<Vec<String>, StoreError>;

    /// The registry: every `providerSandboxId` of `provider` an instance
    /// record named, whose record was last written or deleted at or after
    /// `since` (or still exists). The sweep takes a listed sandbox without an
    /// owner label (owner `""`) for ours only when the registry names it, so
    /// what TanStack's providers created unlabelled, and a swallowed destroy
    /// left running, is still found. A store without a registry names
    /// nothing (the default).
    async fn registered_sandboxes(&self, provider: &str, since: u64) -> Result<Vec<String>, StoreError> {
        let _ = (provider, since);
        Ok(Vec::new())
    }

    /// Whether the store answers a sweep's questions about the ids it listed
    /// ([`sweep_mark`](Self::sweep_mark) ... [`lookup_checked`](Self::lookup_checked)):
    /// then a pass reads only what it listed, on indexes, never every
    /// reference of a provider. Every store this crate ships does; a store
    /// that does not is swept the older way (every reference read before
    /// listing), and the five methods are never called.
    fn scoped_reads(&self) -> bool {
        false
    }

    /// A mark of the store's record deletions, taken before a sweep lists: a
    /// record deleted, or pointed at another sandbox, after this call is
    /// counted by [`referenced_among`](Self::referenced_among) with this
    /// mark, whatever the clocks say. Never goes down.
    async fn sweep_mark(&self, provider: &str) -> Result<u64, StoreError> {
        let _ = provider;
        Ok(0)
    }

    /// Those of `ids` (a batch of what a sweep listed of `provider`) that an
    /// instance record or a leak entry references now, that an audit row
    /// says was destroyed at or after `destroyed_since`, whose leak entry was
    /// resolved at or after it, or whose record was deleted (or pointed
    /// elsewhere) after `mark`. Sorted, each once. Served by indexes on
    /// `(provider, provider_sandbox_id)`: its cost follows `ids`, not the store.
    async fn referenced_among(
        &self,
        provider: &str,
        ids: &[String],
        destroyed_since: u64,
        mark: u64,
    ) -> Result<Vec<String>, StoreError> {
        let _ = (provider, ids, destroyed_since, mark);
        Ok(Vec::new())
    }

    /// Those of `ids` the registry names: a record of `provider` names it
    /// now, or one last written or deleted at or after `since` did. Sorted,
    /// each once.
    async fn registered_among(&self, provider: &str, ids: &[String], since: u64) -> Result<Vec<String>, StoreError> {
        let _ = (provider, ids, since);
        Ok(Vec::new())
    }

    /// At most `limit` registered ids of `provider` for a lookup by id:
    /// last written or deleted at or after `since`, named by no instance
    /// record or leak entry now, and not known gone (a lookup answered it
    /// gone, or a destroy of ours was confirmed: a pass's audited destroy, a
    /// leak's resolve). Never checked first, most recently deleted first;
    /// then least recently checked first. Read in one indexed page.
    async fn lookup_candidates(&self, provider: &str, since: u64, limit: usize) -> Result<Vec<String>, StoreError> {
        let _ = (provider, since, limit);
        Ok(Vec::new())
    }

    /// What a lookup learned: the sandboxes of `gone` are gone (no candidate
    /// again until a record names them again); those of `checked` were
    /// checked at `now` and go to the back of the queue.
    async fn lookup_checked(
        &self,
        provider: &str,
        gone: &[String],
        checked: &[String],
        now: u64,
    ) -> Result<(), StoreError> {
        let _ = (provider, gone, checked, now);
        Ok(())
    }

    /// Records a leak without touching any instance record (an orphan whose
    /// destroy failed). Recording a known sandbox again bumps its attempts.
    async fn record_leak(&self, leak: NewLeak, reason: LeakReason, next_attempt_at: u64) -> Result<(), StoreError>;

    /// `provider`'s entries due at `now` (`next_attempt_at <= now`) and not
    /// claimed by another pass, oldest first, at most `limit`. With a
    /// `lease_ms`, claims them until `now + lease_ms` (so concurrent passes
    /// never take the same entry; `FOR UPDATE SKIP LOCKED` on PostgreSQL),
    /// each under a new [`LeakEntry::claim`] generation; without, only lists
    /// them (a dry run).
    async fn due_leaks(
        &self,
        provider: &str,
        limit: usize,
        lease_ms: Option<u64>,
        now: u64,
    ) -> Result<Vec<DueLeak>, StoreError>;

    /// A claimed entry's destroy failed again: attempts + 1, keep `message`,
    /// next due at `next_attempt_at`, claim released. `Ok(false)`: the claim
    /// `entry` carries no longer holds (another pass took the entry after
    /// the lease ran out); nothing was written.
    async fn defer_leak(
        &self,
        entry: &LeakEntry,
        message: &str,
        failed_at: u64,
        next_attempt_at: u64,
    ) -> Result<Held, StoreError>;

    /// Takes the orphan sweep of `provider` for `holder` until `now +
    /// lease_ms`, unless another holder's lease is still running. `Ok(true)`
    /// when taken (or renewed by the same holder).
    async fn claim_sweep(&self, provider: &str, holder: &str, lease_ms: u64, now: u64) -> Result<bool, StoreError>;

    /// Gives the sweep of `provider` back, if `holder` still holds it.
    async fn release_sweep(&self, provider: &str, holder: &str) -> Result<(), StoreError>;

    /// Appends audit rows (one per destroy attempt), in order.
    async fn append_audit(&self, entries: &[AuditEntry]) -> Result<(), StoreError>;

    /// Bounded growth: deletes `provider`'s registry rows last seen before
    /// `registry_before` (a row whose record still exists may go too: the
    /// registry reads live records, and their next write registers them
    /// again) and its audit rows with `at < audit_before`. The pass holding
    /// `provider`'s sweep calls it. A store that keeps neither does nothing
    /// (the default). The SQL stores delete in bounded batches, each its own
    /// transaction, so no write waits behind a long prune; a prune that has
    /// more to delete than its per-call bound leaves the rest to the next.
    async fn prune(&self, provider: &str, registry_before: u64, audit_before: u64) -> Result<(), StoreError> {
        let _ = (provider, registry_before, audit_before);
        Ok(())
    }

    /// Audit rows with `at >= since`, oldest first, at most `limit`.
    async fn list_audit(&self, since: Option<u64>, limit: usize) -> Result<Vec<AuditEntry>, StoreError>;

    /// What the command's `status` and `migrate` show of the store itself.
    async fn facts(&self) -> Result<StoreFacts, StoreError>;

    /// Every pending leak entry with its reason, next attempt and claim,
    /// oldest first (what `leaks list` shows; no lease is taken).
    async fn scheduled_leaks(&self) -> Result<Vec<ScheduledLeak>, StoreError>;
}
