//! The leak ledger: where a store remembers sandboxes whose destroy failed.
//!
//! The reference deletes the instance record even when destroy fails, so the
//! possibly-running sandbox becomes unreachable. A store with a ledger keeps
//! the reference's rules and outcomes but, in the same transaction as that
//! delete, records a [`LeakEntry`]; [`retry_leaks`] later destroys it.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::driver::{now_millis, SandboxProvider};
use crate::errors::StoreError;
use crate::machine::LeakDraft;

/// A leak about to be recorded (attempt 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLeak {
    pub key: String,
    pub provider: String,
    pub provider_sandbox_id: String,
    pub run_id: String,
    pub error_message: String,
    /// Epoch milliseconds of the failure.
    pub failed_at: u64,
}

impl NewLeak {
    /// Stamps the machine's draft with the failure time.
    pub fn from_draft(draft: LeakDraft, failed_at: u64) -> Self {
        Self {
            key: draft.key,
            provider: draft.provider,
            provider_sandbox_id: draft.provider_sandbox_id,
            run_id: draft.run_id,
            error_message: draft.error_message,
            failed_at,
        }
    }

    /// The entry as first recorded.
    pub fn into_entry(self) -> LeakEntry {
        LeakEntry {
            key: self.key,
            provider: self.provider,
            provider_sandbox_id: self.provider_sandbox_id,
            run_id: self.run_id,
            last_error: self.error_message,
            failed_at: self.failed_at,
            attempts: 1,
        }
    }
}

/// A sandbox that may still be running: its destroy failed and its instance
/// record is gone. Identified by `(provider, provider_sandbox_id)`; recording
/// the same sandbox again bumps `attempts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeakEntry {
    pub key: String,
    pub provider: String,
    pub provider_sandbox_id: String,
    pub run_id: String,
    /// Message of the most recent destroy failure.
    pub last_error: String,
    /// Epoch milliseconds of the most recent failure.
    pub failed_at: u64,
    /// Failed destroys so far (the reclaim's own counts as the first).
    pub attempts: u32,
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
    /// Claims up to `limit` of `provider`'s entries for `lease`. An entry
    /// claimed by another retrier whose lease has not expired is skipped, so
    /// two hosts never retry the same sandbox at once.
    async fn claim_leaks(&self, provider: &str, limit: usize, lease: Duration) -> Result<Vec<LeakEntry>, StoreError>;
    /// Removes a claimed entry whose sandbox is now destroyed.
    async fn resolve_leak(&self, entry: &LeakEntry) -> Result<(), StoreError>;
    /// Bumps a claimed entry's attempts, keeps `message` and releases the claim.
    async fn record_retry_failure(&self, entry: &LeakEntry, message: &str, failed_at: u64) -> Result<(), StoreError>;
}

/// Options for [`retry_leaks`].
#[derive(Debug, Clone, Copy)]
pub struct RetryOptions {
    /// Most entries claimed in one call.
    pub limit: usize,
    /// How long a claim holds before another retrier may take the entry
    /// (covers a retrier that dies mid-destroy).
    pub lease: Duration,
}

impl Default for RetryOptions {
    fn default() -> Self {
        Self { limit: 100, lease: Duration::from_secs(300) }
    }
}

/// What one [`retry_leaks`] call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetrySummary {
    /// Entries claimed and retried.
    pub retried: u64,
    /// Entries whose destroy now succeeded (and were removed).
    pub destroyed: u64,
    /// Entries whose destroy failed again (attempts bumped, error kept).
    pub still_failing: u64,
}

/// Retries the destroy of `provider`'s pending leaks: claims them, destroys
/// each, removes the entry on success, and records the failure otherwise.
pub async fn retry_leaks(
    provider: &dyn SandboxProvider,
    ledger: &dyn LeakLedger,
    options: RetryOptions,
) -> Result<RetrySummary, StoreError> {
    let mut summary = RetrySummary::default();
    for entry in ledger.claim_leaks(provider.name(), options.limit, options.lease).await? {
        summary.retried += 1;
        match provider.destroy(&entry.provider_sandbox_id).await {
            Ok(()) => {
                ledger.resolve_leak(&entry).await?;
                summary.destroyed += 1;
            }
            Err(error) => {
                ledger.record_retry_failure(&entry, &error.to_string(), now_millis()).await?;
                summary.still_failing += 1;
            }
        }
    }
    Ok(summary)
}
