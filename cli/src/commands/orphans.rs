//! `orphans`: a reconcile pass restricted to the orphan sweep. The store is
//! seen through [`SweepOnly`], which answers "no due leaks", and idle expiry
//! is off, so the pass destroys orphans only; the report shows that part.

use async_trait::async_trait;
use sandbox_reclaim::{
    AuditEntry, DueLeak, FleetStore, LeakEntry, LeakLedger, LeakReason, NewLeak, SandboxInstanceRecord, StopSignal,
    StoreError,
};

use super::reconcile::{emit, still_leaking, View};
use super::{install_signals, run_pass, PassPlan};
use crate::args::OrphansArgs;
use crate::error::{Failure, EXIT_LEAKING, EXIT_OK};
use crate::providers::Providers;
use crate::Context;

pub async fn run(context: &Context, args: &OrphansArgs) -> Result<i32, Failure> {
    let settings = context.settings.pass.with_pass(&args.pass);
    let store = context.open_store().await?;
    let providers = Providers::build(&context.settings, None, true).await?;
    let stop = StopSignal::new();
    let _stopped = install_signals(stop.clone())?;
    let plan = PassPlan { settings: &settings, dry_run: args.dry_run, idle: false };
    let sweep_only = SweepOnly { fleet: store.fleet(), ledger: store.ledger() };
    let report = run_pass(context, &sweep_only, &providers, &plan, &stop).await;
    store.close().await;
    let report = report?;
    emit(context, &store, &report, View::Orphans, None);
    Ok(if still_leaking(&report, View::Orphans) { EXIT_LEAKING } else { EXIT_OK })
}

/// The store, except that no leak is ever due: a pass over it sweeps orphans
/// only. Every other call (references, sweep leases, recording a failed
/// orphan destroy, the audit log) goes to the real store.
struct SweepOnly<'a> {
    fleet: &'a dyn FleetStore,
    ledger: &'a dyn LeakLedger,
}

#[async_trait]
impl LeakLedger for SweepOnly<'_> {
    async fn delete_recording_leak(&self, key: &str, leak: NewLeak) -> Result<(), StoreError> {
        self.ledger.delete_recording_leak(key, leak).await
    }
    async fn list_leaks(&self, provider: Option<&str>) -> Result<Vec<LeakEntry>, StoreError> {
        self.ledger.list_leaks(provider).await
    }
    async fn count_leaks(&self, provider: Option<&str>) -> Result<u64, StoreError> {
        self.ledger.count_leaks(provider).await
    }
    async fn claim_leaks(
        &self,
        provider: &str,
        limit: usize,
        lease: std::time::Duration,
    ) -> Result<Vec<LeakEntry>, StoreError> {
        self.ledger.claim_leaks(provider, limit, lease).await
    }
    async fn resolve_leak(&self, entry: &LeakEntry) -> Result<(), StoreError> {
        self.ledger.resolve_leak(entry).await
    }
    async fn record_retry_failure(&self, entry: &LeakEntry, message: &str, failed_at: u64) -> Result<(), StoreError> {
        self.ledger.record_retry_failure(entry, message, failed_at).await
    }
}

#[async_trait]
impl FleetStore for SweepOnly<'_> {
    async fn list_stale(&self, older_than: u64, limit: usize) -> Result<Vec<SandboxInstanceRecord>, StoreError> {
        self.fleet.list_stale(older_than, limit).await
    }
    async fn expire_idle(&self, key: &str, seen_updated_at: u64, leak: NewLeak) -> Result<bool, StoreError> {
        self.fleet.expire_idle(key, seen_updated_at, leak).await
    }
    async fn sandbox_references(&self, provider: &str) -> Result<Vec<String>, StoreError> {
        self.fleet.sandbox_references(provider).await
    }
    async fn record_leak(&self, leak: NewLeak, reason: LeakReason, next_attempt_at: u64) -> Result<(), StoreError> {
        self.fleet.record_leak(leak, reason, next_attempt_at).await
    }
    /// Nothing is due: the leak side of the pass has nothing to do.
    async fn due_leaks(
        &self,
        _provider: &str,
        _limit: usize,
        _lease_ms: Option<u64>,
        _now: u64,
    ) -> Result<Vec<DueLeak>, StoreError> {
        Ok(Vec::new())
    }
    async fn defer_leak(
        &self,
        entry: &LeakEntry,
        message: &str,
        failed_at: u64,
        next_attempt_at: u64,
    ) -> Result<(), StoreError> {
        self.fleet.defer_leak(entry, message, failed_at, next_attempt_at).await
    }
    async fn claim_sweep(&self, provider: &str, holder: &str, lease_ms: u64, now: u64) -> Result<bool, StoreError> {
        self.fleet.claim_sweep(provider, holder, lease_ms, now).await
    }
    async fn release_sweep(&self, provider: &str, holder: &str) -> Result<(), StoreError> {
        self.fleet.release_sweep(provider, holder).await
    }
    async fn append_audit(&self, entries: &[AuditEntry]) -> Result<(), StoreError> {
        self.fleet.append_audit(entries).await
    }
    async fn list_audit(&self, since: Option<u64>, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        self.fleet.list_audit(since, limit).await
    }
}
