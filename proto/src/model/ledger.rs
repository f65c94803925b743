//! The leak ledger: where a store remembers sandboxes whose destroy failed.
//!
//! The reference deletes the instance record even when destroy fails, so the
//! possibly-running sandbox becomes unreachable. A store with a ledger keeps
//! the reference's rules and outcomes but, in the same transaction as that
//! delete, records a [`LeakEntry`]; the runtime's `retry_leaks` later destroys it.

use serde::{Deserialize, Serialize};

/// A leak about to be recorded (attempt 1): what a reclaim hands a ledger
/// store's `deleteRecordingLeak(key, leak)` when a destroy failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewLeak {
    pub key: String,
    pub provider: String,
    pub provider_sandbox_id: String,
    pub run_id: String,
    /// The destroy failure's message (`message` of what it threw, or its string form).
    pub error_message: String,
    /// Epoch milliseconds of the failure.
    pub failed_at: u64,
}

impl NewLeak {
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
            claim: None,
        }
    }
}

/// A sandbox that may still be running: its destroy failed and its instance
/// record is gone. Identified by its provider and provider-side id; recording
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
    /// The claim this entry was handed out under: the store's generation
    /// for it, bumped by every claim. A write about a claimed entry
    /// (resolve, defer, a retry failure) lands only while this generation
    /// still holds, so a holder whose lease ran out and was taken over can
    /// no longer release, resolve or overwrite the new holder's claim.
    /// Absent on entries that were only listed (an unfenced write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<u64>,
}

/// Whether a write about a claimed entry landed (see [`LeakEntry::claim`]).
pub type Held = bool;

/// The pending leaks of one provider, in short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeakSummary {
    pub provider: String,
    pub count: u64,
    /// Epoch milliseconds of the oldest entry's last failure.
    pub oldest_failed_at: u64,
}

/// `entries` summarized per provider, in provider order.
pub fn summarize(entries: &[LeakEntry]) -> Vec<LeakSummary> {
    let mut by_provider: std::collections::BTreeMap<&str, (u64, u64)> = std::collections::BTreeMap::new();
    for entry in entries {
        let summary = by_provider.entry(entry.provider.as_str()).or_insert((0, u64::MAX));
        summary.0 += 1;
        summary.1 = summary.1.min(entry.failed_at);
    }
    by_provider
        .into_iter()
        .map(|(provider, (count, oldest_failed_at))| LeakSummary {
            provider: provider.to_owned(),
            count,
            oldest_failed_at,
        })
        .collect()
}

/// What one leak retry (`retry_leaks`, `retryLeaks`) did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetrySummary {
    /// Entries claimed and retried.
    pub retried: u64,
    /// Entries whose destroy now succeeded (and were removed).
    pub destroyed: u64,
    /// Entries whose destroy failed again (attempts bumped, error kept), or
    /// was cut when the claim's lease ran out (entry left to its new holder).
    pub still_failing: u64,
    /// Entries whose outcome the store refused to write because another
    /// retrier had taken their claim meanwhile (the lease ran out): the
    /// entry is that holder's now. Counted in `destroyed` or
    /// `still_failing` too, by what the destroy did.
    #[serde(default)]
    pub lease_lost: u64,
}

impl RetrySummary {
    /// Whether a leak may still be billing after the retry: one failed again,
    /// or `remaining` entries are still in the ledger (due later, or held by
    /// another retrier).
    pub fn still_leaking(&self, remaining: u64) -> bool {
        self.still_failing > 0 || remaining > 0
    }
}

#[cfg(test)]
mod tests {
    use super::RetrySummary;

    #[test]
    fn a_retry_leaves_leaks_while_one_failed_again_or_any_remain() {
        let clean = RetrySummary { retried: 2, destroyed: 2, still_failing: 0, lease_lost: 0 };
        assert!(!clean.still_leaking(0));
        assert!(clean.still_leaking(1), "entries due later are still billing");
        assert!(RetrySummary { still_failing: 1, ..clean }.still_leaking(0));
    }
}
