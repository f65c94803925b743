//! What a store offers a fleet pass (`reconcile`) beyond the leak ledger:
//! stale records for idle expiry, the sandbox ids it references (for the
//! orphan sweep), due leaks with backoff, one sweeper per provider, and an
//! audit log of every destroy attempt.
//!
//! Every method takes the pass's `now` (epoch milliseconds) instead of
//! reading a clock, so a virtual clock drives stores and machines alike, and
//! every method is atomic on its own (one transaction in the SQL stores).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::errors::StoreError;
use crate::ledger::{Held, LeakEntry, LeakLedger, NewLeak};
use crate::model::SandboxInstanceRecord;

/// Why a sandbox is in the leak ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum LeakReason {
    /// A reclaim's destroy failed and the record was deleted anyway.
    #[default]
    #[serde(rename = "destroy-failed")]
    DestroyFailed,
    /// An orphan's destroy failed during a sweep.
    #[serde(rename = "orphan")]
    Orphan,
    /// An idle record was expired; its destroy runs from the ledger.
    #[serde(rename = "idle")]
    Idle,
}

impl LeakReason {
    pub const ALL: [LeakReason; 3] = [Self::DestroyFailed, Self::Orphan, Self::Idle];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::DestroyFailed => "destroy-failed",
            Self::Orphan => "orphan",
            Self::Idle => "idle",
        }
    }

    /// Parses the string form; unknown text (a newer writer) reads as `destroy-failed`.
    pub fn parse(text: &str) -> Self {
        Self::ALL.into_iter().find(|reason| reason.as_str() == text).unwrap_or_default()
    }
}

/// A leak the pass may retry now, as the store answered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DueLeak {
    pub entry: LeakEntry,
    pub reason: LeakReason,
    /// Epoch milliseconds before which no retry is due.
    pub next_attempt_at: u64,
}

/// One row of the audit log: a destroy attempt made by a fleet pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// Epoch milliseconds when the attempt settled.
    pub at: u64,
    /// Who ran the pass (host name unless configured).
    pub host: String,
    pub provider: String,
    pub provider_sandbox_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `leak-retry`, `orphan` or `idle`.
    pub reason: String,
    /// `destroyed`, `failed`, `timeout` or `lease-lost`.
    pub result: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An audit row's `result` for a destroy that succeeded.
pub const AUDIT_DESTROYED: &str = "destroyed";
/// An audit row's `result` for a leak whose outcome the store refused to
/// write: another pass had taken its claim (see [`crate::ledger::LeakEntry::claim`]).
pub const AUDIT_LEASE_LOST: &str = "lease-lost";

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
    /// (the default).
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

/// See [`FleetStore::scheduled_leaks`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledLeak {
    pub due: DueLeak,
    /// Epoch milliseconds until which a retrier holds it; `None`: unclaimed.
    pub claimed_until: Option<u64>,
}

/// See [`FleetStore::facts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreFacts {
    /// The newest migration applied (0: a store without migrations, in memory).
    pub schema_version: i64,
    /// How many instance records there are.
    pub records: u64,
    /// Epoch milliseconds of the newest audit row (the last destroy a pass attempted).
    pub last_audit_at: Option<u64>,
}

/// A sandbox as a provider lists it for the orphan sweep. The sweep fails
/// closed: a listing with any sandbox of unknown `created_at` or `owner`
/// destroys nothing of that provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedSandbox {
    /// The provider-side id (what `destroy` takes).
    pub id: String,
    /// Creation time, epoch milliseconds.
    pub created_at: Option<u64>,
    /// The owner namespace (label / `owner.json`) it was created under.
    pub owner: Option<String>,
    /// The sandbox key it was created for, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The vendor is already deleting it (Daytona `destroying`): counted as
    /// `deleting`, never destroyed again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleting: bool,
}
