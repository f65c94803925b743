//! What a store offers a fleet pass (`reconcile`) beyond the leak ledger:
//! stale records for idle expiry, the sandbox ids it references (for the
//! orphan sweep), due leaks with backoff, one sweeper per provider, and an
//! audit log of every destroy attempt.
//!
//! Every method takes the pass's `now` (epoch milliseconds) instead of
//! reading a clock, so a virtual clock drives stores and machines alike, and
//! every method is atomic on its own (one transaction in the SQL stores).

use serde::{Deserialize, Serialize};

use crate::model::ledger::LeakEntry;

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

/// A leak the pass may retry now, as the store answered it: a leak entry
/// (so resolving or deferring takes it as it came) with why it is in the
/// ledger and when it is next due.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DueLeak {
    #[serde(flatten)]
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
    /// Why it was destroyed: `leak-retry`, `orphan` or `idle` (an action's reason).
    pub reason: String,
    /// What became of it: an [`AuditResult`]'s name.
    pub result: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What became of an audited destroy attempt: an audit row's `result`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuditResult {
    /// The sandbox is gone.
    Destroyed,
    /// The destroy failed.
    Failed,
    /// The destroy did not settle within the pass's destroy timeout.
    Timeout,
    /// The store refused to write a leak's outcome: another pass had taken
    /// the entry's `claim` after the lease ran out.
    LeaseLost,
}

impl AuditResult {
    /// The text an audit row stores.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Destroyed => "destroyed",
            Self::Failed => "failed",
            Self::Timeout => "timeout",
            Self::LeaseLost => "lease-lost",
        }
    }
}

/// An audit row's `result` for a destroy that succeeded.
pub const AUDIT_DESTROYED: &str = AuditResult::Destroyed.as_str();
/// An audit row's `result` for a leak whose outcome the store refused to write.
pub const AUDIT_LEASE_LOST: &str = AuditResult::LeaseLost.as_str();

/// The types the hosts' declarations give [`AuditEntry`]'s text fields
/// (`scripts/gen_declarations.py` reads this): the enums whose names the core
/// writes there. A row is read back as it was stored, so the Rust type stays
/// text (and Python's a `str`); TypeScript narrows it, as Node always has.
pub const AUDIT_ENTRY_HOST_TYPES: [(&str, &str); 2] = [("reason", "ActionReason"), ("result", "AuditResult")];

/// See [`crate::contract::FleetStore::scheduled_leaks`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledLeak {
    pub due: DueLeak,
    /// Epoch milliseconds until which a retrier holds it; `None`: unclaimed.
    pub claimed_until: Option<u64>,
}

/// See [`crate::contract::FleetStore::facts`].
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An audit row stores each result by its serde name, and the fields
    /// the hosts' declarations narrow are the row's.
    #[test]
    fn audit_results_are_stored_by_their_serde_names() {
        for result in [AuditResult::Destroyed, AuditResult::Failed, AuditResult::Timeout, AuditResult::LeaseLost] {
            assert_eq!(serde_json::to_value(result).unwrap(), result.as_str());
        }
        let row = AuditEntry {
            at: 1,
            host: "h".into(),
            provider: "p".into(),
            provider_sandbox_id: "id".into(),
            key: None,
            reason: "orphan".into(),
            result: AUDIT_DESTROYED.into(),
            error: None,
        };
        let wire = serde_json::to_value(row).unwrap();
        for (field, _) in AUDIT_ENTRY_HOST_TYPES {
            assert!(wire.get(field).is_some_and(|value| value.is_string()), "{field}");
        }
    }

    /// The host form of a due leak is flat (a leak entry's fields beside
    /// `reason` and `nextAttemptAt`), as the declarations generated from
    /// this type say.
    #[test]
    fn a_due_leak_serialises_flat() {
        let entry = LeakEntry {
            key: "k".into(),
            provider: "p".into(),
            provider_sandbox_id: "id".into(),
            run_id: "r".into(),
            last_error: "e".into(),
            failed_at: 1,
            attempts: 2,
            claim: Some(3),
        };
        let due = DueLeak { entry, reason: LeakReason::Orphan, next_attempt_at: 4 };
        let wire = serde_json::to_value(&due).unwrap();
        assert_eq!(wire["providerSandboxId"], "id");
        assert_eq!(
            (wire["claim"].as_u64(), wire["reason"].as_str(), wire["nextAttemptAt"].as_u64()),
            (Some(3), Some("orphan"), Some(4))
        );
        assert_eq!(serde_json::from_value::<DueLeak>(wire).unwrap(), due);
    }
}
