//! Fleet passes on the tokio driver against the real SQLite store:
//! `reclaim_all` (concurrency, routing, a failing store read, stop, option
//! checks) and `reconcile` (leak retry with backoff, destroy deadlines, dry
//! run, idle expiry racing an update, the audit log), with a scripted
//! provider whose destroys take real time.
#![cfg(feature = "sqlite")]

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use sandbox_reclaim::report::messages;
use sandbox_reclaim::runtime::clock::now_millis;
use sandbox_reclaim::{
    reclaim_all, reconcile, ActionReason, ActionResult, AuditEntry, DueLeak, FleetOptions, FleetStore, InvalidOption,
    LeakEntry, LeakLedger, LeakReason, ListedSandbox, NewLeak, ProviderError, ReclaimError, ReconcileOptions,
    ReconcileReport, RecordOutcome, RunRecord, RunStatus, SandboxInstanceRecord, SandboxInstanceStore, SandboxProvider,
    SqliteSandboxInstanceStore, StopSignal, StoreError, SweepStatus,
};

// ---------------------------------------------------------------- fixtures

/// A SQLite file of its own, removed (with its WAL files) when dropped.
struct TempDb {
    path: PathBuf,
}

impl TempDb {
    fn new(test: &str) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join("sandbox-reclaim-fleet-tests");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!(
            "{test}-{}-{}-{}.db",
            std::process::id(),
            now_millis(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        Self { path }
    }

    async fn open(&self) -> SqliteSandboxInstanceStore {
        SqliteSandboxInstanceStore::open(&self.path).await.expect("open SQLite")
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.path.display()));
        }
    }
}

fn instance(key: &str, provider: &str, id: &str, updated_at: u64) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: key.to_owned(),
        provider: provider.to_owned(),
        provider_sandbox_id: id.to_owned(),
        latest_snapshot_id: None,
        thread_id: format!("thread-{key}"),
        latest_run_id: Some(format!("run-{key}")),
        updated_at,
    }
}

fn run(index: usize, key: Option<&str>) -> RunRecord {
    let record = RunRecord::new(format!("run-{index}"), "thread", RunStatus::Completed);
    match key {
        Some(key) => record.with_sandbox_key(key),
        None => record,
    }
}

fn new_leak(key: &str, provider: &str, id: &str, failed_at: u64) -> NewLeak {
    NewLeak {
        key: key.to_owned(),
        provider: provider.to_owned(),
        provider_sandbox_id: id.to_owned(),
        run_id: format!("run-{key}"),
        error_message: "engine unreachable".to_owned(),
        failed_at,
    }
}

fn listed(id: &str, created_at: u64, owner: &str) -> ListedSandbox {
    ListedSandbox {
        id: id.to_owned(),
        created_at: Some(created_at),
        owner: Some(owner.to_owned()),
        key: None,
        deleting: false,
    }
}

#[derive(Debug, thiserror::Error)]
#[error("destroy of {0} failed: engine unreachable")]
struct EngineDown(String);

/// Counts destroys it was asked for whose futures were dropped unsettled.
struct InFlight<'a> {
    provider: &'a ScriptedProvider,
    settled: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.provider.in_flight.fetch_sub(1, Ordering::SeqCst);
        if !self.settled {
            self.provider.cancelled.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A provider whose destroy sleeps (`delay`), fails for chosen ids, hangs
/// for others, and counts everything; it lists `listing` minus what it
/// destroyed.
#[derive(Default)]
struct ScriptedProvider {
    name: String,
    delay: Duration,
    can_list: bool,
    fail_ids: Mutex<Vec<String>>,
    hang_ids: Vec<String>,
    listing: Mutex<Vec<ListedSandbox>>,
    /// Lists what it destroyed too, as a cloud listing lags behind deletes.
    lagging: bool,
    calls: Mutex<BTreeMap<String, u32>>,
    destroyed: Mutex<Vec<String>>,
    lists: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    cancelled: AtomicUsize,
}

impl ScriptedProvider {
    fn new(name: &str, delay: Duration) -> Self {
        Self { name: name.to_owned(), delay, ..Self::default() }
    }

    fn listing(name: &str, sandboxes: Vec<ListedSandbox>) -> Self {
        Self { can_list: true, listing: Mutex::new(sandboxes), ..Self::new(name, Duration::from_millis(5)) }
    }

    fn calls(&self) -> BTreeMap<String, u32> {
        self.calls.lock().unwrap().clone()
    }

    fn total_calls(&self) -> u32 {
        self.calls.lock().unwrap().values().sum()
    }

    fn destroyed(&self) -> Vec<String> {
        let mut destroyed = self.destroyed.lock().unwrap().clone();
        destroyed.sort();
        destroyed
    }
}

#[async_trait]
impl SandboxProvider for ScriptedProvider {
    fn name(&self) -> &str {
        &self.name
    }

    async fn destroy(&self, provider_sandbox_id: &str) -> Result<(), ProviderError> {
        *self.calls.lock().unwrap().entry(provider_sandbox_id.to_owned()).or_default() += 1;
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let mut guard = InFlight { provider: self, settled: false };
        if self.hang_ids.iter().any(|id| id == provider_sandbox_id) {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        tokio::time::sleep(self.delay).await;
        guard.settled = true;
        let fails = self.fail_ids.lock().unwrap().iter().any(|id| id == provider_sandbox_id);
        if fails {
            return Err(ProviderError::backend(EngineDown(provider_sandbox_id.to_owned())));
        }
        self.destroyed.lock().unwrap().push(provider_sandbox_id.to_owned());
        Ok(())
    }

    fn can_list(&self) -> bool {
        self.can_list
    }

    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        let destroyed = self.destroyed.lock().unwrap().clone();
        let listing = self.listing.lock().unwrap().clone();
        Ok(listing.into_iter().filter(|sandbox| self.lagging || !destroyed.contains(&sandbox.id)).collect())
    }
}

/// The SQLite store behind a spy: records every call, can fail `get` for
/// one key, can update a record right after `list_stale` answered (so
/// `expire_idle` finds it touched), and can play "another host" finishing a
/// leak's destroy right before `sandbox_references` answers.
struct Spy {
    inner: SqliteSandboxInstanceStore,
    calls: Mutex<Vec<String>>,
    fail_get: Option<String>,
    touch_after_list_stale: Mutex<Option<SandboxInstanceRecord>>,
    other_host_resolves: Mutex<Option<(LeakEntry, Arc<ScriptedProvider>)>>,
}

impl Spy {
    fn new(inner: SqliteSandboxInstanceStore) -> Self {
        Self {
            inner,
            calls: Mutex::new(Vec::new()),
            fail_get: None,
            touch_after_list_stale: Mutex::new(None),
            other_host_resolves: Mutex::new(None),
        }
    }

    fn note(&self, call: &str) {
        self.calls.lock().unwrap().push(call.to_owned());
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

#[derive(Debug, thiserror::Error)]
#[error("disk I/O error reading {0}")]
struct DiskError(String);

#[async_trait]
impl SandboxInstanceStore for Spy {
    async fn get(&self, key: &str) -> Result<Option<SandboxInstanceRecord>, StoreError> {
        self.note("get");
        if self.fail_get.as_deref() == Some(key) {
            return Err(StoreError::backend(DiskError(key.to_owned())));
        }
        self.inner.get(key).await
    }
    async fn upsert(&self, record: &SandboxInstanceRecord) -> Result<(), StoreError> {
        self.note("upsert");
        self.inner.upsert(record).await
    }
    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.note("delete");
        self.inner.delete(key).await
    }
    fn leak_ledger(&self) -> Option<&dyn LeakLedger> {
        Some(self)
    }
}

#[async_trait]
impl LeakLedger for Spy {
    async fn delete_recording_leak(&self, key: &str, leak: NewLeak) -> Result<(), StoreError> {
        self.note("delete_recording_leak");
        self.inner.delete_recording_leak(key, leak).await
    }
    async fn list_leaks(&self, provider: Option<&str>) -> Result<Vec<LeakEntry>, StoreError> {
        self.note("list_leaks");
        self.inner.list_leaks(provider).await
    }
    async fn claim_leaks(&self, provider: &str, limit: usize, lease: Duration) -> Result<Vec<LeakEntry>, StoreError> {
        self.note("claim_leaks");
        self.inner.claim_leaks(provider, limit, lease).await
    }
    async fn resolve_leak(&self, entry: &LeakEntry) -> Result<bool, StoreError> {
        self.note("resolve_leak");
        self.inner.resolve_leak(entry).await
    }
    async fn record_retry_failure(&self, entry: &LeakEntry, message: &str, failed_at: u64) -> Result<bool, StoreError> {
        self.note("record_retry_failure");
        self.inner.record_retry_failure(entry, message, failed_at).await
    }
}

#[async_trait]
impl FleetStore for Spy {
    async fn list_stale(&self, older_than: u64, limit: usize) -> Result<Vec<SandboxInstanceRecord>, StoreError> {
        self.note("list_stale");
        let stale = self.inner.list_stale(older_than, limit).await?;
        let touched = self.touch_after_list_stale.lock().unwrap().take();
        if let Some(record) = touched {
            // Another process resumes the thread right after the pass read it.
            self.inner.upsert(&record).await?;
        }
        Ok(stale)
    }
    async fn expire_idle(&self, key: &str, seen_updated_at: u64, leak: NewLeak) -> Result<bool, StoreError> {
        self.note("expire_idle");
        self.inner.expire_idle(key, seen_updated_at, leak).await
    }
    async fn sandbox_references(&self, provider: &str, destroyed_since: u64) -> Result<Vec<String>, StoreError> {
        self.note("sandbox_references");
        let other_host = self.other_host_resolves.lock().unwrap().take();
        if let Some((entry, provider)) = other_host {
            // Another host's leak retry finishes its destroy and resolves
            // the entry while this pass sweeps.
            provider.destroy(&entry.provider_sandbox_id).await.unwrap();
            self.inner.resolve_leak(&entry).await?;
        }
        self.inner.sandbox_references(provider, destroyed_since).await
    }
    async fn record_leak(&self, leak: NewLeak, reason: LeakReason, next_attempt_at: u64) -> Result<(), StoreError> {
        self.note("record_leak");
        self.inner.record_leak(leak, reason, next_attempt_at).await
    }
    async fn due_leaks(
        &self,
        provider: &str,
        limit: usize,
        lease_ms: Option<u64>,
        now: u64,
    ) -> Result<Vec<DueLeak>, StoreError> {
        self.note("due_leaks");
        self.inner.due_leaks(provider, limit, lease_ms, now).await
    }
    async fn defer_leak(
        &self,
        entry: &LeakEntry,
        message: &str,
        failed_at: u64,
        next_attempt_at: u64,
    ) -> Result<bool, StoreError> {
        self.note("defer_leak");
        self.inner.defer_leak(entry, message, failed_at, next_attempt_at).await
    }
    async fn claim_sweep(&self, provider: &str, holder: &str, lease_ms: u64, now: u64) -> Result<bool, StoreError> {
        self.note("claim_sweep");
        self.inner.claim_sweep(provider, holder, lease_ms, now).await
    }
    async fn release_sweep(&self, provider: &str, holder: &str) -> Result<(), StoreError> {
        self.note("release_sweep");
        self.inner.release_sweep(provider, holder).await
    }
    async fn append_audit(&self, entries: &[AuditEntry]) -> Result<(), StoreError> {
        self.note("append_audit");
        self.inner.append_audit(entries).await
    }
    async fn list_audit(&self, since: Option<u64>, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        self.note("list_audit");
        self.inner.list_audit(since, limit).await
    }

    async fn facts(&self) -> Result<sandbox_reclaim::StoreFacts, StoreError> {
        self.inner.facts().await
    }

    async fn scheduled_leaks(&self) -> Result<Vec<sandbox_reclaim::ScheduledLeak>, StoreError> {
        self.inner.scheduled_leaks().await
    }
}

/// Every instance record of a store (all are older than `u64::MAX`).
async fn all_records(store: &dyn FleetStore) -> Vec<SandboxInstanceRecord> {
    let mut records = store.list_stale(u64::MAX, 100_000).await.unwrap();
    records.sort_by(|left, right| left.key.cmp(&right.key));
    records
}

fn invalid_field(result: Result<impl std::fmt::Debug, ReclaimError>) -> String {
    match result {
        Err(ReclaimError::InvalidOption(InvalidOption { field, message, .. })) => {
            assert!(message.contains(&field), "the refusal names its field: {message}");
            field
        }
        other => panic!("expected InvalidOption, got {other:?}"),
    }
}

/// `(reason, result)` of every action, by sandbox id.
fn results(report: &ReconcileReport) -> BTreeMap<String, (ActionReason, ActionResult)> {
    report.actions.iter().map(|action| (action.provider_sandbox_id.clone(), (action.reason, action.result))).collect()
}

const HOST: &str = "fleet-test-host";

fn options<'a>(providers: Vec<&'a dyn SandboxProvider>, store: &'a dyn FleetStore) -> ReconcileOptions<'a> {
    ReconcileOptions { host: Some(HOST.to_owned()), ..ReconcileOptions::new(providers, store) }
}

// ---------------------------------------------------------------- reclaim_all

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reclaim_all_reclaims_200_records_at_concurrency_32() {
    let db = TempDb::new("reclaim-200");
    let store = db.open().await;
    let provider = ScriptedProvider::new("docker", Duration::from_millis(25));
    let mut runs = Vec::new();
    for index in 0..200 {
        let key = format!("k{index:03}");
        store.upsert(&instance(&key, "docker", &format!("ctr-{index:03}"), 1)).await.unwrap();
        runs.push(run(index, Some(&key)));
    }
    let options = FleetOptions { concurrency: 32, ..FleetOptions::new(vec![&provider], &store) };
    let started = Instant::now();
    let report = reclaim_all(&runs, options).await.unwrap();
    let elapsed = started.elapsed();

    assert_eq!(report.total, 200);
    assert_eq!(report.counts.destroyed, 200, "{:?}", report.counts);
    assert_eq!(report.records.len(), 200);
    for (index, record) in report.records.iter().enumerate() {
        assert_eq!(record.run_id, format!("run-{index}"), "records are reported in the order given");
        assert_eq!(record.outcome, RecordOutcome::Destroyed);
        assert_eq!(record.error, None);
    }
    let calls = provider.calls();
    assert_eq!(calls.len(), 200);
    assert!(calls.values().all(|&count| count == 1), "every sandbox destroyed exactly once");
    for index in 0..200 {
        assert_eq!(store.get(&format!("k{index:03}")).await.unwrap(), None, "record k{index:03} is gone");
    }
    assert_eq!(store.list_leaks(None).await.unwrap(), Vec::new(), "nothing leaked");
    let max = provider.max_in_flight.load(Ordering::SeqCst);
    assert!(max <= 32, "at most 32 destroys at once, saw {max}");
    assert!(max >= 16, "records ran side by side: at most {max} destroys at once");
    // One at a time would take 200 × 25 ms = 5 s.
    assert!(elapsed < Duration::from_millis(2500), "took {elapsed:?}");
    eprintln!("reclaimed 200 records at concurrency 32 in {elapsed:?} (max {max} destroys in flight)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reclaim_all_routes_each_record_to_the_provider_its_instance_names() {
    let db = TempDb::new("reclaim-routing");
    let store = db.open().await;
    let alpha = ScriptedProvider::new("alpha", Duration::from_millis(20));
    let beta = ScriptedProvider::new("beta", Duration::from_millis(20));
    let mut runs = Vec::new();
    for index in 0..20 {
        let provider = if index % 2 == 0 { "alpha" } else { "beta" };
        let key = format!("k{index:02}");
        store.upsert(&instance(&key, provider, &format!("{provider}-{index:02}"), 1)).await.unwrap();
        runs.push(run(index, Some(&key)));
    }
    // A provider this pass does not know, a run without a sandbox, a key with
    // no record, and a key given twice.
    store.upsert(&instance("stranger", "gamma", "gamma-1", 1)).await.unwrap();
    runs.push(run(20, Some("stranger")));
    runs.push(run(21, None));
    runs.push(run(22, Some("gone")));
    runs.push(run(23, Some("k00")));

    let options = FleetOptions {
        concurrency: 16,
        per_provider_concurrency: Some(3),
        ..FleetOptions::new(vec![&alpha, &beta], &store)
    };
    let report = reclaim_all(&runs, options).await.unwrap();

    let outcomes: Vec<RecordOutcome> = report.records.iter().map(|record| record.outcome).collect();
    let mut expected = vec![RecordOutcome::Destroyed; 20];
    expected.extend([
        RecordOutcome::ProviderMismatch,
        RecordOutcome::NoSandboxKey,
        RecordOutcome::NotFound,
        RecordOutcome::Duplicate,
    ]);
    assert_eq!(outcomes, expected);
    let alpha_ids: Vec<String> = (0..20).step_by(2).map(|index| format!("alpha-{index:02}")).collect();
    let beta_ids: Vec<String> = (1..20).step_by(2).map(|index| format!("beta-{index:02}")).collect();
    assert_eq!(alpha.calls().into_keys().collect::<Vec<_>>(), alpha_ids, "alpha destroyed alpha's only");
    assert_eq!(beta.calls().into_keys().collect::<Vec<_>>(), beta_ids, "beta destroyed beta's only");
    assert!(alpha.calls().values().chain(beta.calls().values()).all(|&count| count == 1));
    for provider in [&alpha, &beta] {
        let max = provider.max_in_flight.load(Ordering::SeqCst);
        assert!(max <= 3, "{}: at most 3 destroys at once per provider, saw {max}", provider.name);
    }
    // The stranger's record is left for its own provider.
    assert_eq!(store.get("stranger").await.unwrap(), Some(instance("stranger", "gamma", "gamma-1", 1)));
    assert_eq!(store.get("k00").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reclaim_all_reports_a_failing_store_read_on_that_record_only() {
    let db = TempDb::new("reclaim-get-fails");
    let mut spy = Spy::new(db.open().await);
    spy.fail_get = Some("k07".to_owned());
    let provider = ScriptedProvider::new("docker", Duration::from_millis(5));
    let mut runs = Vec::new();
    for index in 0..15 {
        let key = format!("k{index:02}");
        spy.inner.upsert(&instance(&key, "docker", &format!("ctr-{index:02}"), 1)).await.unwrap();
        runs.push(run(index, Some(&key)));
    }
    let options = FleetOptions { concurrency: 4, ..FleetOptions::new(vec![&provider], &spy) };
    let report = reclaim_all(&runs, options).await.unwrap();

    assert_eq!(report.counts.error, 1);
    assert_eq!(report.counts.destroyed, 14);
    let failed = &report.records[7];
    assert_eq!(failed.outcome, RecordOutcome::Error);
    assert_eq!(failed.error.as_deref(), Some("instance store failed: disk I/O error reading k07"));
    assert!(!provider.calls().contains_key("ctr-07"), "nothing destroyed for the unreadable record");
    assert_eq!(spy.inner.get("k07").await.unwrap(), Some(instance("k07", "docker", "ctr-07", 1)));
    for (index, record) in report.records.iter().enumerate().filter(|(index, _)| *index != 7) {
        assert_eq!(record.outcome, RecordOutcome::Destroyed, "record {index}");
        assert_eq!(spy.inner.get(&format!("k{index:02}")).await.unwrap(), None);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reclaim_all_stopped_mid_pass_finishes_what_runs_and_defers_the_rest() {
    let db = TempDb::new("reclaim-stop");
    let store = db.open().await;
    let provider = ScriptedProvider::new("docker", Duration::from_millis(100));
    let mut runs = Vec::new();
    for index in 0..100 {
        let key = format!("k{index:03}");
        store.upsert(&instance(&key, "docker", &format!("ctr-{index:03}"), 1)).await.unwrap();
        runs.push(run(index, Some(&key)));
    }
    let stop = StopSignal::new();
    let options = FleetOptions { concurrency: 8, stop: Some(&stop), ..FleetOptions::new(vec![&provider], &store) };
    let stopper = async {
        while provider.total_calls() < 12 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        stop.stop();
        Instant::now()
    };
    let (report, stopped_at) = tokio::join!(reclaim_all(&runs, options), stopper);
    let report = report.unwrap();
    let after_stop = stopped_at.elapsed();

    let calls = provider.calls();
    assert!(calls.values().all(|&count| count == 1));
    assert_eq!(provider.cancelled.load(Ordering::SeqCst), 0, "no destroy in flight was cancelled");
    assert_eq!(report.counts.destroyed as usize, calls.len(), "every destroy that started finished");
    assert_eq!(report.counts.destroyed + report.counts.deferred, 100, "{:?}", report.counts);
    assert!(report.counts.deferred >= 50, "the rest was deferred: {:?}", report.counts);
    for (index, record) in report.records.iter().enumerate() {
        let key = format!("k{index:03}");
        let id = format!("ctr-{index:03}");
        match record.outcome {
            RecordOutcome::Destroyed => {
                assert!(calls.contains_key(&id));
                assert_eq!(store.get(&key).await.unwrap(), None, "{key}");
            }
            RecordOutcome::Deferred => {
                assert!(!calls.contains_key(&id), "{id} was deferred but destroyed");
                assert_eq!(store.get(&key).await.unwrap(), Some(instance(&key, "docker", &id, 1)), "{key} kept");
            }
            other => panic!("record {index}: {other:?}"),
        }
    }
    // What ran after the stop were the destroys in flight (one round of 100 ms).
    assert!(after_stop < Duration::from_millis(900), "the pass ended {after_stop:?} after the stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reclaim_all_refuses_invalid_options_before_any_call() {
    let db = TempDb::new("reclaim-invalid");
    let spy = Spy::new(db.open().await);
    spy.inner.upsert(&instance("k", "docker", "ctr", 1)).await.unwrap();
    let provider = ScriptedProvider::new("docker", Duration::ZERO);
    let twin = ScriptedProvider::new("docker", Duration::ZERO);
    let runs = vec![run(0, Some("k"))];
    let base = || FleetOptions::new(vec![&provider], &spy);
    let cases: Vec<(FleetOptions<'_>, &str)> = vec![
        (FleetOptions { concurrency: 0, ..base() }, "concurrency"),
        (FleetOptions { per_provider_concurrency: Some(0), ..base() }, "perProviderConcurrency"),
        (FleetOptions { providers: Vec::new(), ..base() }, "providers"),
        (FleetOptions { providers: vec![&provider, &twin], ..base() }, "providers"),
        (FleetOptions { destroy_timeout: Some(Duration::ZERO), ..base() }, "destroyTimeoutMs"),
        (FleetOptions { budget: Some(Duration::ZERO), ..base() }, "budgetMs"),
        (FleetOptions { budget: Some(Duration::from_micros(999)), ..base() }, "budgetMs"),
    ];
    for (options, field) in cases {
        assert_eq!(invalid_field(reclaim_all(&runs, options).await), field);
    }
    assert_eq!(spy.calls(), Vec::<String>::new(), "no store call");
    assert_eq!(provider.total_calls() + twin.total_calls(), 0, "no provider call");
    assert_eq!(spy.inner.get("k").await.unwrap(), Some(instance("k", "docker", "ctr", 1)));
}

// ---------------------------------------------------------------- reconcile

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_refuses_invalid_options_before_any_call() {
    let db = TempDb::new("reconcile-invalid");
    let spy = Spy::new(db.open().await);
    let provider = ScriptedProvider::listing("docker", vec![listed("ctr-old", 1, sandbox_reclaim::DEFAULT_OWNER)]);
    let twin = ScriptedProvider::new("docker", Duration::ZERO);
    let base = || options(vec![&provider], &spy);
    let cases: Vec<(ReconcileOptions<'_>, &str)> = vec![
        (ReconcileOptions { concurrency: 0, ..base() }, "concurrency"),
        (ReconcileOptions { per_provider_concurrency: Some(0), ..base() }, "perProviderConcurrency"),
        (ReconcileOptions { providers: Vec::new(), ..base() }, "providers"),
        (ReconcileOptions { providers: vec![&provider, &twin], ..base() }, "providers"),
        (ReconcileOptions { destroy_timeout: Some(Duration::ZERO), ..base() }, "destroyTimeoutMs"),
        (ReconcileOptions { budget: Some(Duration::ZERO), ..base() }, "budgetMs"),
        (ReconcileOptions { max_idle: Some(Duration::ZERO), ..base() }, "maxIdleMs"),
        (ReconcileOptions { limit: 0, ..base() }, "limit"),
        (ReconcileOptions { lease: Duration::ZERO, ..base() }, "leaseMs"),
        // The checks every host's options take (Node's, the command's): a
        // duration past JavaScript's safe integers is refused, not saturated.
        (ReconcileOptions { registry_retention: Duration::from_secs(u64::MAX), ..base() }, "registryRetentionMs"),
        (ReconcileOptions { orphan_grace: Duration::from_millis(1 << 53), ..base() }, "orphanGraceMs"),
    ];
    for (options, field) in cases {
        assert_eq!(invalid_field(reconcile(options).await), field);
    }
    assert_eq!(spy.calls(), Vec::<String>::new(), "no store call");
    assert_eq!(provider.lists.load(Ordering::SeqCst), 0, "no listing");
    assert_eq!(provider.total_calls() + twin.total_calls(), 0, "no destroy");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_retries_a_leak_with_backoff_until_it_is_resolved() {
    let db = TempDb::new("reconcile-leak");
    let store = db.open().await;
    store.upsert(&instance("k1", "docker", "ctr-1", 1)).await.unwrap();
    store.delete_recording_leak("k1", new_leak("k1", "docker", "ctr-1", now_millis())).await.unwrap();
    assert_eq!(store.get("k1").await.unwrap(), None);
    let provider = ScriptedProvider::new("docker", Duration::from_millis(10));
    provider.fail_ids.lock().unwrap().push("ctr-1".to_owned());
    // The entry's second failure waits backoff × 2^(2 − 1) = 400 ms.
    let backoff = Duration::from_millis(200);
    let pass = || ReconcileOptions { backoff, ..options(vec![&provider], &store) };

    // 1. The retry fails: the entry stays, one attempt more, due after the backoff.
    let before = now_millis();
    let first = reconcile(pass()).await.unwrap();
    let after = now_millis();
    assert_eq!(first.providers[0].leaks.due, 1);
    assert_eq!(first.providers[0].leaks.failed, 1);
    let action = &first.actions[0];
    assert_eq!((action.reason, action.result), (ActionReason::LeakRetry, ActionResult::Failed));
    assert_eq!(action.key.as_deref(), Some("k1"));
    assert_eq!(action.error.as_deref(), Some("destroy of ctr-1 failed: engine unreachable"));
    assert!(first.still_leaking());
    let leaks = store.list_leaks(None).await.unwrap();
    assert_eq!(leaks.len(), 1);
    assert_eq!((leaks[0].attempts, leaks[0].last_error.as_str()), (2, "destroy of ctr-1 failed: engine unreachable"));
    let due = store.due_leaks("docker", 10, None, after + 400).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].reason, LeakReason::DestroyFailed);
    assert!(
        (before + 400..=after + 400).contains(&due[0].next_attempt_at),
        "{} not 400 ms after the failure",
        due[0].next_attempt_at
    );

    // 2. Before it is due again, a pass leaves it alone.
    provider.fail_ids.lock().unwrap().clear();
    let early = reconcile(pass()).await.unwrap();
    assert_eq!(early.providers[0].leaks.due, 0);
    assert_eq!(early.actions, Vec::new());
    assert_eq!(provider.calls()["ctr-1"], 1, "not retried before due");

    // 3. Once due, it is destroyed and the entry resolved.
    tokio::time::sleep(Duration::from_millis(450)).await;
    let last = reconcile(pass()).await.unwrap();
    assert_eq!(results(&last)["ctr-1"], (ActionReason::LeakRetry, ActionResult::Destroyed));
    assert!(!last.still_leaking());
    assert_eq!(provider.calls()["ctr-1"], 2);
    assert_eq!(store.list_leaks(None).await.unwrap(), Vec::new(), "the ledger is empty");

    let audit = store.list_audit(None, 100).await.unwrap();
    let rows: Vec<(&str, &str, &str, Option<&str>)> = audit
        .iter()
        .map(|row| (row.provider_sandbox_id.as_str(), row.reason.as_str(), row.result.as_str(), row.error.as_deref()))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("ctr-1", "leak-retry", "failed", Some("destroy of ctr-1 failed: engine unreachable")),
            ("ctr-1", "leak-retry", "destroyed", None),
        ]
    );
    assert!(audit.iter().all(|row| row.host == HOST && row.provider == "docker" && row.key.as_deref() == Some("k1")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_cuts_a_hanging_destroy_at_its_deadline_and_defers_it_with_backoff() {
    let db = TempDb::new("reconcile-hang");
    let store = db.open().await;
    let now = now_millis();
    for (key, id) in [("k-hang", "ctr-hang"), ("k-ok", "ctr-ok")] {
        store.delete_recording_leak(key, new_leak(key, "docker", id, now)).await.unwrap();
    }
    let provider = ScriptedProvider {
        hang_ids: vec!["ctr-hang".to_owned()],
        ..ScriptedProvider::new("docker", Duration::from_millis(10))
    };
    let pass = || ReconcileOptions {
        destroy_timeout: Some(Duration::from_millis(300)),
        // The entry's second failure waits backoff × 2 = 60 s.
        backoff: Duration::from_secs(30),
        ..options(vec![&provider], &store)
    };

    let started = Instant::now();
    let before = now_millis();
    let report = reconcile(pass()).await.unwrap();
    let after = now_millis();
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(290) && elapsed < Duration::from_secs(3), "pass took {elapsed:?}");
    let timeout_message = messages::destroy_timeout_message("ctr-hang", 300);
    let by_id = results(&report);
    assert_eq!(by_id["ctr-hang"], (ActionReason::LeakRetry, ActionResult::Failed));
    assert_eq!(by_id["ctr-ok"], (ActionReason::LeakRetry, ActionResult::Destroyed));
    let hung = report.actions.iter().find(|action| action.provider_sandbox_id == "ctr-hang").unwrap();
    assert_eq!(hung.error.as_deref(), Some(timeout_message.as_str()));
    assert_eq!(provider.cancelled.load(Ordering::SeqCst), 1, "the hanging destroy's future was dropped");

    let leaks = store.list_leaks(None).await.unwrap();
    assert_eq!(leaks.len(), 1);
    assert_eq!((leaks[0].provider_sandbox_id.as_str(), leaks[0].attempts), ("ctr-hang", 2));
    assert_eq!(leaks[0].last_error, timeout_message);
    let due = store.due_leaks("docker", 10, None, after + 60_000).await.unwrap();
    assert_eq!(due.len(), 1);
    assert!((before + 60_000..=after + 60_000).contains(&due[0].next_attempt_at), "backoff 2 × 30 s");

    // A second pass right away does not retry it: it is not due.
    let second = reconcile(pass()).await.unwrap();
    assert_eq!(second.providers[0].leaks.due, 0);
    assert_eq!(second.actions, Vec::new());
    assert_eq!(provider.calls(), BTreeMap::from([("ctr-hang".to_owned(), 1), ("ctr-ok".to_owned(), 1)]));

    let audit = store.list_audit(None, 100).await.unwrap();
    let mut rows: Vec<(String, String, Option<String>)> =
        audit.into_iter().map(|row| (row.provider_sandbox_id, row.result, row.error)).collect();
    rows.sort();
    assert_eq!(
        rows,
        vec![
            ("ctr-hang".to_owned(), "timeout".to_owned(), Some(timeout_message.clone())),
            ("ctr-ok".to_owned(), "destroyed".to_owned(), None),
        ]
    );
}

/// What a store holds, as plain values.
#[derive(Debug, PartialEq)]
struct Snapshot {
    records: Vec<SandboxInstanceRecord>,
    leaks: Vec<LeakEntry>,
    due: Vec<DueLeak>,
    audit: Vec<AuditEntry>,
}

async fn snapshot(store: &SqliteSandboxInstanceStore) -> Snapshot {
    Snapshot {
        records: all_records(store).await,
        leaks: store.list_leaks(None).await.unwrap(),
        due: store.due_leaks("docker", 1000, None, u64::MAX >> 12).await.unwrap(),
        audit: store.list_audit(None, 1000).await.unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_dry_run_plans_and_changes_nothing() {
    let db = TempDb::new("reconcile-dry");
    let store = db.open().await;
    let now = now_millis();
    let hour = 3_600_000;
    let owner = sandbox_reclaim::DEFAULT_OWNER;
    store.upsert(&instance("k-stale", "docker", "ctr-stale", now - 3 * hour)).await.unwrap();
    store.upsert(&instance("k-fresh", "docker", "ctr-fresh", now)).await.unwrap();
    store.delete_recording_leak("k-leak", new_leak("k-leak", "docker", "ctr-leak", now - hour)).await.unwrap();
    store
        .append_audit(&[AuditEntry {
            at: now - hour,
            host: "earlier".to_owned(),
            provider: "docker".to_owned(),
            provider_sandbox_id: "ctr-earlier".to_owned(),
            key: None,
            reason: "orphan".to_owned(),
            result: "destroyed".to_owned(),
            error: None,
        }])
        .await
        .unwrap();
    let provider = ScriptedProvider::listing(
        "docker",
        vec![
            listed("ctr-stale", now - 3 * hour, owner),
            listed("ctr-fresh", now - 3 * hour, owner),
            listed("ctr-leak", now - 3 * hour, owner),
            listed("ctr-orphan", now - 3 * hour, owner),
            listed("ctr-young", now, owner),
        ],
    );
    let before = snapshot(&store).await;

    let report = reconcile(ReconcileOptions {
        dry_run: true,
        max_idle: Some(Duration::from_secs(3600)),
        ..options(vec![&provider], &store)
    })
    .await
    .unwrap();

    assert!(report.dry_run);
    assert_eq!(
        results(&report),
        BTreeMap::from([
            ("ctr-stale".to_owned(), (ActionReason::Idle, ActionResult::Planned)),
            ("ctr-leak".to_owned(), (ActionReason::LeakRetry, ActionResult::Planned)),
            ("ctr-orphan".to_owned(), (ActionReason::Orphan, ActionResult::Planned)),
        ])
    );
    assert_eq!(report.counts.planned, 3);
    assert_eq!((report.idle.stale, report.idle.expired), (1, 1));
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept);
    assert_eq!((orphans.listed, orphans.referenced, orphans.young, orphans.found), (5, 3, 1, 1));
    assert_eq!(provider.total_calls(), 0, "a dry run destroys nothing");
    assert_eq!(snapshot(&store).await, before, "a dry run writes nothing");
    // It took no sweep lease (nor released one): anyone can sweep now.
    assert!(store.claim_sweep("docker", "someone-else", 60_000, now_millis()).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_expires_idle_records_but_spares_one_updated_meanwhile() {
    let db = TempDb::new("reconcile-idle");
    let spy = Spy::new(db.open().await);
    let now = now_millis();
    let hour = 3_600_000;
    for (index, key) in ["k-a", "k-b", "k-c"].into_iter().enumerate() {
        spy.inner.upsert(&instance(key, "docker", &format!("ctr-{key}"), now - 5 * hour + index as u64)).await.unwrap();
    }
    spy.inner.upsert(&instance("k-fresh", "docker", "ctr-k-fresh", now)).await.unwrap();
    // A record of a provider this pass does not run: never expired here.
    spy.inner.upsert(&instance("k-other", "elsewhere", "ctr-k-other", now - 5 * hour)).await.unwrap();
    let resumed = instance("k-b", "docker", "ctr-k-b", now + 1);
    *spy.touch_after_list_stale.lock().unwrap() = Some(resumed.clone());
    let provider = ScriptedProvider::new("docker", Duration::from_millis(10));

    let report =
        reconcile(ReconcileOptions { max_idle: Some(Duration::from_secs(3600)), ..options(vec![&provider], &spy) })
            .await
            .unwrap();

    let idle = report.idle;
    assert!(idle.enabled);
    assert_eq!((idle.stale, idle.expired, idle.touched, idle.skipped), (4, 2, 1, 1), "{idle:?}");
    assert_eq!(
        results(&report),
        BTreeMap::from([
            ("ctr-k-a".to_owned(), (ActionReason::Idle, ActionResult::Destroyed)),
            ("ctr-k-b".to_owned(), (ActionReason::Idle, ActionResult::Touched)),
            ("ctr-k-c".to_owned(), (ActionReason::Idle, ActionResult::Destroyed)),
        ])
    );
    assert_eq!((report.counts.destroyed, report.counts.touched), (2, 1));
    assert_eq!(provider.destroyed(), vec!["ctr-k-a", "ctr-k-c"]);
    assert!(provider.calls().values().all(|&count| count == 1));
    let keys: Vec<String> = all_records(&spy.inner).await.into_iter().map(|record| record.key).collect();
    assert_eq!(keys, vec!["k-b", "k-fresh", "k-other"]);
    assert_eq!(spy.inner.get("k-b").await.unwrap(), Some(resumed), "the resumed record is untouched");
    assert_eq!(spy.inner.list_leaks(None).await.unwrap(), Vec::new(), "expired, destroyed and resolved");
    let calls = spy.calls();
    let position = |call: &str| calls.iter().position(|made| made == call).unwrap();
    assert!(position("list_stale") < position("expire_idle") && position("expire_idle") < position("due_leaks"));

    let audit = spy.inner.list_audit(None, 100).await.unwrap();
    let mut rows: Vec<(String, Option<String>, String, String)> = audit
        .iter()
        .map(|row| (row.provider_sandbox_id.clone(), row.key.clone(), row.reason.clone(), row.result.clone()))
        .collect();
    rows.sort();
    let row = |key: &str| (format!("ctr-{key}"), Some(key.to_owned()), "idle".to_owned(), "destroyed".to_owned());
    assert_eq!(rows, vec![row("k-a"), row("k-c")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_writes_one_audit_row_per_destroy_attempt() {
    let db = TempDb::new("reconcile-audit");
    let store = db.open().await;
    let now = now_millis();
    let hour = 3_600_000;
    let owner = sandbox_reclaim::DEFAULT_OWNER;
    store.delete_recording_leak("k-ok", new_leak("k-ok", "docker", "ctr-ok", now - hour)).await.unwrap();
    store.delete_recording_leak("k-bad", new_leak("k-bad", "docker", "ctr-bad", now - hour)).await.unwrap();
    store.upsert(&instance("k-idle", "docker", "ctr-idle", now - 2 * hour)).await.unwrap();
    let provider = ScriptedProvider::listing(
        "docker",
        vec![
            listed("ctr-ok", now - 2 * hour, owner),
            listed("ctr-bad", now - 2 * hour, owner),
            listed("ctr-idle", now - 2 * hour, owner),
            ListedSandbox { key: Some("k-orphan".to_owned()), ..listed("ctr-orphan", now - 2 * hour, owner) },
            listed("ctr-orphan-bad", now - 2 * hour, owner),
            listed("ctr-foreign", now - 2 * hour, "someone-else"),
        ],
    );
    let provider = ScriptedProvider { delay: Duration::from_millis(100), ..provider };
    provider.fail_ids.lock().unwrap().extend(["ctr-bad".to_owned(), "ctr-orphan-bad".to_owned()]);
    let progress = Mutex::new(Vec::new());
    let on_progress = |event: &serde_json::Value| progress.lock().unwrap().push(event.clone());

    let report = reconcile(ReconcileOptions {
        max_idle: Some(Duration::from_secs(3600)),
        on_progress: Some(&on_progress),
        ..options(vec![&provider], &store)
    })
    .await
    .unwrap();

    assert_eq!(
        results(&report),
        BTreeMap::from([
            ("ctr-ok".to_owned(), (ActionReason::LeakRetry, ActionResult::Destroyed)),
            ("ctr-bad".to_owned(), (ActionReason::LeakRetry, ActionResult::Failed)),
            ("ctr-idle".to_owned(), (ActionReason::Idle, ActionResult::Destroyed)),
            ("ctr-orphan".to_owned(), (ActionReason::Orphan, ActionResult::Destroyed)),
            ("ctr-orphan-bad".to_owned(), (ActionReason::Orphan, ActionResult::Failed)),
        ])
    );
    let orphans = &report.providers[0].orphans;
    assert_eq!((orphans.status, orphans.foreign, orphans.found, orphans.failed), (SweepStatus::Swept, 1, 2, 1));
    assert_eq!(progress.lock().unwrap().len(), 5, "one progress event per settled destroy");

    let audit = store.list_audit(None, 100).await.unwrap();
    assert_eq!(audit.len(), 5, "{audit:#?}");
    assert!(audit.windows(2).all(|pair| pair[0].at <= pair[1].at), "oldest first");
    assert!(audit
        .iter()
        .all(|row| row.host == HOST && row.provider == "docker" && (now..=now_millis()).contains(&row.at)));
    let by_id: HashMap<&str, &AuditEntry> = audit.iter().map(|row| (row.provider_sandbox_id.as_str(), row)).collect();
    let check = |id: &str, key: Option<&str>, reason: &str, result: &str, error: Option<&str>| {
        let row = by_id[id];
        assert_eq!(
            (row.key.as_deref(), row.reason.as_str(), row.result.as_str(), row.error.as_deref()),
            (key, reason, result, error),
            "{id}"
        );
    };
    check("ctr-ok", Some("k-ok"), "leak-retry", "destroyed", None);
    check("ctr-bad", Some("k-bad"), "leak-retry", "failed", Some("destroy of ctr-bad failed: engine unreachable"));
    check("ctr-idle", Some("k-idle"), "idle", "destroyed", None);
    check("ctr-orphan", Some("k-orphan"), "orphan", "destroyed", None);
    check("ctr-orphan-bad", None, "orphan", "failed", Some("destroy of ctr-orphan-bad failed: engine unreachable"));

    // `since` and `limit` select rows.
    let last_at = audit.last().unwrap().at;
    let since = store.list_audit(Some(last_at), 100).await.unwrap();
    assert!(!since.is_empty() && since.iter().all(|row| row.at >= last_at));
    assert_eq!(store.list_audit(None, 2).await.unwrap(), audit[..2].to_vec());
    assert_eq!(store.list_audit(Some(now_millis() + 1), 100).await.unwrap(), Vec::new());

    // The failed orphan went to the ledger (reason orphan), next to the failed leak.
    let mut leaks: Vec<(String, u32)> = store
        .list_leaks(None)
        .await
        .unwrap()
        .into_iter()
        .map(|leak| (leak.provider_sandbox_id, leak.attempts))
        .collect();
    leaks.sort();
    assert_eq!(leaks, vec![("ctr-bad".to_owned(), 2), ("ctr-orphan-bad".to_owned(), 1)]);
    let due = store.due_leaks("docker", 10, None, u64::MAX >> 12).await.unwrap();
    let orphan = due.iter().find(|due| due.entry.provider_sandbox_id == "ctr-orphan-bad").unwrap();
    assert_eq!(orphan.reason, LeakReason::Orphan);
}

/// The orphan sweep reads what it lists and what the store references at
/// two moments. A leak another host destroys and resolves in between must
/// not look like an orphan: the sweep may only destroy a sandbox that was
/// unreferenced *before* it was listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_never_sweeps_a_leak_another_host_resolved_during_the_sweep() {
    let db = TempDb::new("reconcile-sweep-race");
    let spy = Spy::new(db.open().await);
    let now = now_millis();
    let hour = 3_600_000;
    let owner = sandbox_reclaim::DEFAULT_OWNER;
    spy.inner.delete_recording_leak("k-leak", new_leak("k-leak", "docker", "ctr-leak", now - hour)).await.unwrap();
    // Another host claimed the entry: this pass gets nothing due.
    let claimed = spy.inner.due_leaks("docker", 10, Some(300_000), now_millis()).await.unwrap();
    assert_eq!(claimed.len(), 1);
    let provider = Arc::new(ScriptedProvider::listing(
        "docker",
        vec![listed("ctr-leak", now - 2 * hour, owner), listed("ctr-orphan", now - 2 * hour, owner)],
    ));
    *spy.other_host_resolves.lock().unwrap() = Some((claimed[0].entry.clone(), Arc::clone(&provider)));

    let report = reconcile(options(vec![provider.as_ref()], &spy)).await.unwrap();

    assert_eq!(report.providers[0].leaks.due, 0);
    assert_eq!(results(&report).get("ctr-orphan"), Some(&(ActionReason::Orphan, ActionResult::Destroyed)));
    assert_eq!(
        provider.calls(),
        BTreeMap::from([("ctr-leak".to_owned(), 1), ("ctr-orphan".to_owned(), 1)]),
        "ctr-leak was destroyed twice: once by the host that held its entry, once more by this sweep, \
         which listed it before that host resolved the entry and read the references after (report: {:?})",
        results(&report)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passes_stopped_before_they_start_touch_nothing() {
    let db = TempDb::new("stopped-before");
    let spy = Spy::new(db.open().await);
    spy.inner.upsert(&instance("k", "docker", "ctr", 1)).await.unwrap();
    spy.inner.delete_recording_leak("k-leak", new_leak("k-leak", "docker", "ctr-leak", 1)).await.unwrap();
    let provider = ScriptedProvider::listing("docker", vec![listed("ctr-old", 1, sandbox_reclaim::DEFAULT_OWNER)]);
    let stop = StopSignal::new();
    stop.stop();

    let runs = vec![run(0, Some("k")), run(1, Some("k-other"))];
    let fleet = FleetOptions { stop: Some(&stop), ..FleetOptions::new(vec![&provider], &spy) };
    let report = reclaim_all(&runs, fleet).await.unwrap();
    assert_eq!(report.counts.deferred, 2, "{:?}", report.counts);

    let report = reconcile(ReconcileOptions {
        stop: Some(&stop),
        max_idle: Some(Duration::from_secs(1)),
        orphan_grace: Duration::ZERO,
        ..options(vec![&provider], &spy)
    })
    .await
    .unwrap();
    assert!(report.cut_short);
    assert_eq!(report.actions, Vec::new());
    assert_eq!(report.providers[0].orphans.status, SweepStatus::Skipped);

    assert_eq!(spy.calls(), Vec::<String>::new(), "no store call");
    assert_eq!((provider.total_calls(), provider.lists.load(Ordering::SeqCst)), (0, 0), "no provider call");
    assert_eq!(spy.inner.get("k").await.unwrap(), Some(instance("k", "docker", "ctr", 1)));
}

/// A cloud listing is not a set: it repeats an item across pages and keeps
/// listing what was just deleted. Each sandbox is destroyed once per pass
/// (o1 listed twice; l1 both a due leak and listed), and a pass right after
/// on another host spares everything the first destroyed (the audit log).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_destroys_each_sandbox_once_however_the_listing_repeats_or_lags() {
    let db = TempDb::new("lagging-listing");
    let store = db.open().await;
    let old = now_millis() - 3_600_000;
    store.record_leak(new_leak("k1", "cloud", "l1", old), LeakReason::DestroyFailed, 0).await.unwrap();
    let owner = sandbox_reclaim::DEFAULT_OWNER;
    let listing =
        vec![listed("o1", old, owner), listed("o1", old, owner), listed("o2", old, owner), listed("l1", old, owner)];
    let provider = ScriptedProvider { lagging: true, ..ScriptedProvider::listing("cloud", listing) };

    let mut options = ReconcileOptions::new(vec![&provider], &store);
    options.host = Some("host-a".to_owned());
    let first = reconcile(options).await.unwrap();
    let once: BTreeMap<String, u32> = [("l1", 1), ("o1", 1), ("o2", 1)].map(|(id, n)| (id.to_owned(), n)).into();
    assert_eq!(provider.calls(), once, "{first:#?}");
    assert_eq!((first.counts.destroyed, first.providers[0].orphans.listed), (3, 3), "{first:#?}");
    assert!(!first.still_leaking());

    let mut options = ReconcileOptions::new(vec![&provider], &store);
    options.host = Some("host-b".to_owned());
    let second = reconcile(options).await.unwrap();
    assert_eq!(provider.calls(), once, "the next pass destroyed nothing again: {second:#?}");
    let orphans = &second.providers[0].orphans;
    assert_eq!((orphans.listed, orphans.referenced, orphans.found), (3, 3, 0), "{second:#?}");
    assert!(!second.still_leaking());
}

/// A dry run that plans destroys is still leaking: nothing it planned happened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_that_plans_a_destroy_is_still_leaking() {
    let db = TempDb::new("dry-run-leaking");
    let store = db.open().await;
    let old = now_millis() - 3_600_000;
    let provider = ScriptedProvider::listing("cloud", vec![listed("o1", old, sandbox_reclaim::DEFAULT_OWNER)]);
    let mut options = ReconcileOptions::new(vec![&provider], &store);
    options.dry_run = true;
    let report = reconcile(options).await.unwrap();
    assert_eq!(report.counts.planned, 1);
    assert!(report.still_leaking() && report.still_leaking, "{report:#?}");
    assert_eq!(provider.total_calls(), 0);
}
