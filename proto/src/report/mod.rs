//! What the fleet passes answer, as every host sees it: the core builds
//! these and serializes them (camelCase JSON); Node returns that JSON as a
//! plain object, Python converts it generically, the command prints it.
//! A report field is added here, once: `scripts/gen_declarations.py` writes
//! the hosts' declarations from these types.
//!
//! Layer: what users read. May import [`crate::model`]; nothing above it
//! (options, contracts, machines, the wire).

pub mod messages;

use serde::{Deserialize, Serialize};

use crate::model::ReclaimOutcome;

// ---- reclaimAll ----

/// How one record of a fleet reclaim ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecordOutcome {
    /// The run had no `sandboxKey`: nothing to reclaim.
    NoSandboxKey,
    /// No instance record under the key.
    NotFound,
    /// No provider of the pass has the name its instance record names; nothing was touched.
    ProviderMismatch,
    /// Destroyed, and the record deleted.
    Destroyed,
    /// The destroy failed (the record was deleted anyway; with a ledger, the sandbox is in it).
    DestroyFailed,
    /// A store call (or the logger) failed; see the record's `error`.
    Error,
    /// Not started (or its destroy never started): the budget ran out or the pass was stopped.
    Deferred,
    /// Another record with the same `sandboxKey` was reclaimed instead.
    Duplicate,
}

impl From<ReclaimOutcome> for RecordOutcome {
    fn from(outcome: ReclaimOutcome) -> Self {
        match outcome {
            ReclaimOutcome::NoSandboxKey => Self::NoSandboxKey,
            ReclaimOutcome::NotFound => Self::NotFound,
            ReclaimOutcome::ProviderMismatch => Self::ProviderMismatch,
            ReclaimOutcome::Destroyed => Self::Destroyed,
            ReclaimOutcome::DestroyFailed => Self::DestroyFailed,
        }
    }
}

/// One record's line in a [`FleetReclaimReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordReport {
    pub run_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_key: Option<String>,
    pub outcome: RecordOutcome,
    /// The destroy's error message (`destroy-failed`) or the store's (`error`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// From the record's start to its end, on the driver's clock.
    pub duration_ms: u64,
}

/// Records per outcome (every outcome present).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OutcomeCounts {
    #[serde(rename = "no-sandbox-key")]
    pub no_sandbox_key: u64,
    #[serde(rename = "not-found")]
    pub not_found: u64,
    #[serde(rename = "provider-mismatch")]
    pub provider_mismatch: u64,
    pub destroyed: u64,
    #[serde(rename = "destroy-failed")]
    pub destroy_failed: u64,
    pub error: u64,
    pub deferred: u64,
    pub duplicate: u64,
}

impl OutcomeCounts {
    pub(crate) fn add(&mut self, outcome: RecordOutcome) {
        let count = match outcome {
            RecordOutcome::NoSandboxKey => &mut self.no_sandbox_key,
            RecordOutcome::NotFound => &mut self.not_found,
            RecordOutcome::ProviderMismatch => &mut self.provider_mismatch,
            RecordOutcome::Destroyed => &mut self.destroyed,
            RecordOutcome::DestroyFailed => &mut self.destroy_failed,
            RecordOutcome::Error => &mut self.error,
            RecordOutcome::Deferred => &mut self.deferred,
            RecordOutcome::Duplicate => &mut self.duplicate,
        };
        *count += 1;
    }
}

/// What `reclaimAll` resolves with: counts, and one line per record in the
/// order given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetReclaimReport {
    /// Records given.
    pub total: u64,
    pub counts: OutcomeCounts,
    /// One line per record, in the order given.
    pub records: Vec<RecordReport>,
    /// From the pass's start to its end.
    pub elapsed_ms: u64,
}

// ---- progress ----

/// A fleet pass's progress event, handed to `onProgress` / `on_progress` as
/// it happens (never awaited).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ProgressEvent {
    /// `reclaimAll`: after each record concludes.
    Record(RecordProgress),
    /// `reconcile`: after each destroy settles (or is deferred).
    Action(ActionProgress),
}

/// A progress event of `reclaimAll`: after each record concludes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordProgress {
    /// Records concluded so far, of `total`.
    pub done: u64,
    pub total: u64,
    pub run_id: String,
    pub sandbox_key: Option<String>,
    pub outcome: RecordOutcome,
    /// Since the pass started, on the driver's clock.
    pub elapsed_ms: u64,
}

/// A progress event of `reconcile`: after each destroy settles (or is deferred).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionProgress {
    /// Destroys settled so far, of `total`.
    pub done: u64,
    pub total: u64,
    pub reason: ActionReason,
    pub provider: String,
    pub provider_sandbox_id: String,
    pub result: ActionResult,
    /// Since the pass started, on the driver's clock.
    pub elapsed_ms: u64,
}

impl ProgressEvent {
    /// The event as the hosts receive it (camelCase JSON, `kind` first).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a progress event serialises")
    }
}

// ---- reconcile ----

/// Why a pass destroys (or would destroy) a sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionReason {
    /// A ledger entry of a failed destroy (a reclaim's or an orphan's).
    LeakRetry,
    /// A listed sandbox no record, ledger entry or recent destroy references, past its grace.
    Orphan,
    /// An expired idle record (its ledger entry, or the record in a dry run).
    Idle,
}

impl ActionReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LeakRetry => "leak-retry",
            Self::Orphan => "orphan",
            Self::Idle => "idle",
        }
    }
}

/// What became of an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionResult {
    /// Dry run: would be destroyed.
    Planned,
    /// Destroyed (a leak's entry resolved).
    Destroyed,
    /// The destroy failed (or timed out); the sandbox is in the ledger.
    Failed,
    /// Not started (budget, stop, a lapsed lease, a failed store): still
    /// in the ledger, or still listed for the next pass.
    Deferred,
    /// Idle expiry skipped a record updated since it was read.
    Touched,
}

/// One sandbox a pass acted on (or would, in a dry run).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    pub reason: ActionReason,
    pub provider: String,
    pub provider_sandbox_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub result: ActionResult,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How a provider's orphan sweep went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SweepStatus {
    /// Listed and swept (or planned, in a dry run).
    Swept,
    /// Destroyed nothing: no `list`, a listing or store read failed, or a
    /// sandbox of unknown creation time or owner (fail closed). See `error`.
    Unavailable,
    /// Another host holds this provider's sweep.
    HeldElsewhere,
    /// Not started: the budget ran out, the pass was stopped or a store failed.
    Skipped,
}

/// The leak side of a provider's pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeakCounts {
    /// Due entries claimed (or listed, in a dry run).
    pub due: u64,
    pub destroyed: u64,
    pub failed: u64,
    pub deferred: u64,
    /// Outcomes the store refused to write because another pass had taken
    /// the entry's claim meanwhile (also counted in `destroyed` or `failed`).
    #[serde(default)]
    pub lease_lost: u64,
}

/// The orphan side of a provider's pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrphanCounts {
    pub status: SweepStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Sandboxes the provider listed.
    pub listed: u64,
    /// Listed under another owner: never touched.
    pub foreign: u64,
    /// Referenced by a record or a ledger entry, acted on earlier in this
    /// pass (a leak retry, an idle expiry), or destroyed by a pass on any
    /// host within the orphan grace (the audit log): never swept.
    pub referenced: u64,
    /// Unreferenced but inside the grace period.
    pub young: u64,
    /// Already being deleted by the vendor (Daytona `destroying`): never destroyed again.
    #[serde(default)]
    pub deleting: u64,
    /// Orphans found (destroyed, failed, deferred or planned).
    pub found: u64,
    pub destroyed: u64,
    pub failed: u64,
    pub deferred: u64,
}

impl OrphanCounts {
    /// A sweep in `status` that counted nothing yet.
    pub fn with_status(status: SweepStatus) -> Self {
        Self {
            status,
            error: None,
            listed: 0,
            foreign: 0,
            referenced: 0,
            young: 0,
            deleting: 0,
            found: 0,
            destroyed: 0,
            failed: 0,
            deferred: 0,
        }
    }
}

/// One provider's part of a [`ReconcileReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderReport {
    /// The provider's `name`.
    pub name: String,
    pub leaks: LeakCounts,
    pub orphans: OrphanCounts,
}

/// The idle-expiry part of a [`ReconcileReport`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdleCounts {
    /// The pass had a `maxIdle`.
    pub enabled: bool,
    /// Stale records read.
    pub stale: u64,
    /// Expired into the ledger (or planned, in a dry run).
    pub expired: u64,
    /// Updated since they were read, or expired meanwhile by another pass: left alone.
    pub touched: u64,
    /// Of a provider this pass does not know: left alone.
    pub skipped: u64,
}

/// Actions per result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionCounts {
    pub planned: u64,
    pub destroyed: u64,
    pub failed: u64,
    pub deferred: u64,
    pub touched: u64,
}

impl ActionCounts {
    /// `actions` counted by result.
    pub fn of<'a>(actions: impl IntoIterator<Item = &'a Action>) -> Self {
        let mut counts = Self::default();
        for action in actions {
            *match action.result {
                ActionResult::Planned => &mut counts.planned,
                ActionResult::Destroyed => &mut counts.destroyed,
                ActionResult::Failed => &mut counts.failed,
                ActionResult::Deferred => &mut counts.deferred,
                ActionResult::Touched => &mut counts.touched,
            } += 1;
        }
        counts
    }
}

/// How much of a pass a reader looks at: the whole pass (`reconcile`), or
/// its orphan sweep only (the command's `orphans`). Every verdict and count
/// a host shows for either comes from [`ReconcileReport`], never from the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportScope {
    Pass,
    Orphans,
}

/// What `reconcile` resolves with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReconcileReport {
    /// A plan only: nothing was changed.
    pub dry_run: bool,
    /// Who ran the pass (the audit rows' `host`).
    pub host: String,
    /// Epoch milliseconds.
    pub started_at: u64,
    /// From the pass's start to its end.
    pub elapsed_ms: u64,
    /// The budget ran out or the pass was stopped before it was done.
    pub cut_short: bool,
    pub idle: IdleCounts,
    /// One per provider, in the order given.
    pub providers: Vec<ProviderReport>,
    pub counts: ActionCounts,
    /// Every sandbox acted on (or planned), in the order decided.
    pub actions: Vec<Action>,
    /// Whether anything may still be billing after the pass, as the core
    /// decided ([`ReconcileReport::still_leaking`]): a failed or deferred
    /// destroy, a destroy a dry run planned, a pass cut short, or a sweep that
    /// failed closed (a provider that cannot list at all does not count).
    #[serde(default)]
    pub still_leaking: bool,
}

impl ReconcileReport {
    /// Whether anything may still be billing after the pass: a failed or
    /// deferred destroy, a destroy a dry run planned (it did not happen), a
    /// pass cut short, or a provider whose sweep failed closed (a provider
    /// that cannot list at all is a configuration, not a leak).
    pub fn still_leaking(&self) -> bool {
        self.counts.planned > 0
            || self.counts.failed > 0
            || self.counts.deferred > 0
            || self.cut_short
            || self.providers.iter().any(|provider| {
                provider.orphans.status == SweepStatus::Unavailable
                    && provider.orphans.error.as_deref() != Some(messages::PROVIDER_CANNOT_LIST)
            })
    }

    /// Whether an orphan may still be billing after the pass: an orphan
    /// destroy that failed, was deferred or was only planned (a dry run), or
    /// a provider whose sweep did not run. Unlike the whole pass's verdict, a
    /// provider that cannot list counts here: the sweep was what was asked for.
    pub fn orphans_still_leaking(&self) -> bool {
        self.providers.iter().any(|provider| {
            provider.orphans.failed > 0
                || provider.orphans.deferred > 0
                || (self.dry_run && provider.orphans.found > 0)
                || provider.orphans.status == SweepStatus::Unavailable
        })
    }

    /// [`Self::still_leaking`] or [`Self::orphans_still_leaking`], by `scope`.
    pub fn still_leaking_in(&self, scope: ReportScope) -> bool {
        match scope {
            ReportScope::Pass => self.still_leaking(),
            ReportScope::Orphans => self.orphans_still_leaking(),
        }
    }

    /// The actions `scope` shows, in order: all of them, or the orphan sweep's.
    pub fn actions_in(&self, scope: ReportScope) -> impl Iterator<Item = &Action> {
        self.actions.iter().filter(move |action| scope == ReportScope::Pass || action.reason == ActionReason::Orphan)
    }

    /// The actions `scope` shows, counted by result.
    pub fn counts_in(&self, scope: ReportScope) -> ActionCounts {
        ActionCounts::of(self.actions_in(scope))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(reason: ActionReason, result: ActionResult) -> Action {
        Action { reason, provider: "p".into(), provider_sandbox_id: "s".into(), key: None, result, error: None }
    }

    fn orphans(status: SweepStatus, error: Option<&str>) -> OrphanCounts {
        OrphanCounts { error: error.map(str::to_owned), ..OrphanCounts::with_status(status) }
    }

    fn report(orphans: OrphanCounts, actions: Vec<Action>) -> ReconcileReport {
        let mut report = ReconcileReport {
            dry_run: false,
            host: "h".into(),
            started_at: 0,
            elapsed_ms: 0,
            cut_short: false,
            idle: IdleCounts::default(),
            providers: vec![ProviderReport { name: "p".into(), leaks: LeakCounts::default(), orphans }],
            counts: ActionCounts::of(&actions),
            actions,
            still_leaking: false,
        };
        report.still_leaking = report.still_leaking();
        report
    }

    #[test]
    fn each_scope_counts_the_actions_it_shows() {
        let report = report(
            orphans(SweepStatus::Swept, None),
            vec![
                action(ActionReason::LeakRetry, ActionResult::Failed),
                action(ActionReason::Orphan, ActionResult::Destroyed),
                action(ActionReason::Idle, ActionResult::Touched),
                action(ActionReason::Orphan, ActionResult::Deferred),
            ],
        );
        let pass = report.counts_in(ReportScope::Pass);
        assert_eq!(pass, report.counts);
        assert_eq!((pass.destroyed, pass.failed, pass.deferred, pass.touched), (1, 1, 1, 1));
        let orphans = report.counts_in(ReportScope::Orphans);
        assert_eq!((orphans.destroyed, orphans.failed, orphans.deferred, orphans.touched), (1, 0, 1, 0));
        assert_eq!(report.actions_in(ReportScope::Orphans).count(), 2);
    }

    #[test]
    fn a_failed_leak_retry_leaks_the_pass_but_not_the_orphan_sweep() {
        let report =
            report(orphans(SweepStatus::Swept, None), vec![action(ActionReason::LeakRetry, ActionResult::Failed)]);
        assert!(report.still_leaking_in(ReportScope::Pass));
        assert!(!report.still_leaking_in(ReportScope::Orphans));
    }

    #[test]
    fn a_provider_that_cannot_list_leaks_only_the_orphan_sweep_it_was_asked_for() {
        let cannot_list = report(orphans(SweepStatus::Unavailable, Some(messages::PROVIDER_CANNOT_LIST)), Vec::new());
        assert!(!cannot_list.still_leaking_in(ReportScope::Pass));
        assert!(cannot_list.still_leaking_in(ReportScope::Orphans));
        let listing_failed = report(orphans(SweepStatus::Unavailable, Some("listing failed")), Vec::new());
        assert!(listing_failed.still_leaking_in(ReportScope::Pass));
        assert!(listing_failed.still_leaking_in(ReportScope::Orphans));
    }

    #[test]
    fn an_orphan_a_dry_run_planned_is_still_leaking() {
        let mut found = orphans(SweepStatus::Swept, None);
        found.found = 1;
        let mut report = report(found, vec![action(ActionReason::Orphan, ActionResult::Planned)]);
        report.dry_run = true;
        assert!(report.still_leaking_in(ReportScope::Pass));
        assert!(report.still_leaking_in(ReportScope::Orphans));
        report.dry_run = false;
        assert!(!report.still_leaking_in(ReportScope::Orphans), "found and destroyed: nothing left");
    }
}
