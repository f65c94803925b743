//! The data the reclaimer reads: run records, instance records and outcomes.
//!
//! Every type serialises to the camelCase wire form that TanStack's JavaScript
//! packages use, so a record written by a Node process reads back in Python or
//! Rust unchanged (and the other way round).

use serde::{Deserialize, Serialize};

/// Lifecycle state of an agent run, as TanStack's `RunStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RunStatus {
    /// The run's driver is still working.
    Running,
    /// The run stopped without finishing (host lost, paused for approval) and may resume.
    Interrupted,
    /// Terminal: the run finished normally.
    Completed,
    /// Terminal: the run ended with an error.
    Failed,
    /// Terminal: the run was cancelled.
    Aborted,
}

impl RunStatus {
    /// Whether no further events will be appended to the run: only then is
    /// its sandbox safe to reclaim.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Aborted)
    }

    /// The wire string (`"running"`, `"completed"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Interrupted => "interrupted",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Aborted => "aborted",
        }
    }
}

/// Durable bookkeeping for one agent run (TanStack's `RunRecord`).
///
/// The reclaimer reads only `run_id` and `sandbox_key`; the other fields are
/// carried so that a record round-trips through every binding byte for byte.
/// `error` and `usage` are kept as opaque JSON because their shapes belong to
/// TanStack and grow over time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    pub run_id: String,
    pub thread_id: String,
    pub status: RunStatus,
    /// Epoch milliseconds.
    pub started_at: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<f64>,
    /// TanStack's `RunError`; carried, never read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<serde_json::Value>,
    /// TanStack's `TokenUsage`; carried, never read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<serde_json::Value>,
    /// Key of the sandbox instance this run was bound to, if it ran in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detached_since: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_requested: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_epoch: Option<f64>,
}

impl RunRecord {
    /// A record with only the required fields set; handy in tests and examples.
    pub fn new(run_id: impl Into<String>, thread_id: impl Into<String>, status: RunStatus) -> Self {
        Self {
            run_id: run_id.into(),
            thread_id: thread_id.into(),
            status,
            started_at: 0.0,
            finished_at: None,
            error: None,
            usage: None,
            sandbox_key: None,
            detached_since: None,
            cancel_requested: None,
            driver_epoch: None,
        }
    }

    /// Builder-style setter for the sandbox key.
    pub fn with_sandbox_key(mut self, key: impl Into<String>) -> Self {
        self.sandbox_key = Some(key.into());
        self
    }
}

/// What an instance store keeps per sandbox key (`SandboxRecord` in
/// `@tanstack/ai-sandbox`): which provider owns the sandbox, and its id there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxInstanceRecord {
    /// Compound sandbox key.
    pub key: String,
    /// Name of the provider that owns `provider_sandbox_id`.
    pub provider: String,
    /// The provider's id of the sandbox.
    pub provider_sandbox_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_snapshot_id: Option<String>,
    pub thread_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_run_id: Option<String>,
    /// Epoch milliseconds of the last write; a whole number in `0..=2^53-1`.
    pub updated_at: u64,
}

/// The largest integer every binding can hold exactly (JavaScript's
/// `Number.MAX_SAFE_INTEGER`); timestamps above it would not round-trip.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

impl SandboxInstanceRecord {
    /// Checks the invariants every store enforces before writing, so a bad
    /// record is refused with a field name instead of being half-written.
    pub fn validate(&self) -> Result<(), InvalidRecord> {
        let non_empty =
            [("key", &self.key), ("provider", &self.provider), ("providerSandboxId", &self.provider_sandbox_id)];
        for (field, value) in non_empty {
            if value.is_empty() {
                return Err(InvalidRecord { field, reason: "must be a non-empty string" });
            }
        }
        let all_text = [
            ("key", Some(&self.key)),
            ("provider", Some(&self.provider)),
            ("providerSandboxId", Some(&self.provider_sandbox_id)),
            ("threadId", Some(&self.thread_id)),
            ("latestSnapshotId", self.latest_snapshot_id.as_ref()),
            ("latestRunId", self.latest_run_id.as_ref()),
        ];
        for (field, value) in all_text {
            if value.is_some_and(|text| text.contains('\0')) {
                return Err(InvalidRecord { field, reason: "must not contain NUL characters" });
            }
        }
        if self.updated_at > MAX_SAFE_INTEGER {
            return Err(InvalidRecord { field: "updatedAt", reason: "must be a whole number between 0 and 2^53-1" });
        }
        Ok(())
    }
}

/// A record refused before anything was written, naming the offending field
/// in its wire (camelCase) spelling so every binding reports the same name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid sandbox instance record: `{field}` {reason}")]
pub struct InvalidRecord {
    pub field: &'static str,
    pub reason: &'static str,
}

/// How a reclaim ended. The five string forms are the reference's, exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReclaimOutcome {
    /// The run record carries no `sandboxKey`: it never ran in a sandbox.
    #[serde(rename = "no-sandbox-key")]
    NoSandboxKey,
    /// No instance record for the key: someone already reclaimed it.
    #[serde(rename = "not-found")]
    NotFound,
    /// The instance belongs to another provider; nothing was touched.
    #[serde(rename = "provider-mismatch")]
    ProviderMismatch,
    /// The provider destroyed the sandbox and the record was deleted.
    #[serde(rename = "destroyed")]
    Destroyed,
    /// The provider's destroy failed; the record was deleted anyway, so the
    /// sandbox may still be running (and billing).
    #[serde(rename = "destroy-failed")]
    DestroyFailed,
}

impl ReclaimOutcome {
    /// All outcomes, in the order the reference documents them.
    pub const ALL: [ReclaimOutcome; 5] =
        [Self::NoSandboxKey, Self::NotFound, Self::ProviderMismatch, Self::Destroyed, Self::DestroyFailed];

    /// The reference's string form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoSandboxKey => "no-sandbox-key",
            Self::NotFound => "not-found",
            Self::ProviderMismatch => "provider-mismatch",
            Self::Destroyed => "destroyed",
            Self::DestroyFailed => "destroy-failed",
        }
    }

    /// Parses the reference's string form.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|outcome| outcome.as_str() == text)
    }
}

impl std::fmt::Display for ReclaimOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
