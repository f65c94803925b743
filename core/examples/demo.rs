//! `make demo`: the main job on embedded defaults.
//!
//! A `LocalProvider` and a SQLite store in a temporary directory. Sandboxes
//! are created for a dozen runs; one more loses its record (an orphan) and
//! one thread goes idle. The runs finish and are reclaimed together
//! (`reclaim_all`, one destroy made to fail, so the ledger holds a leak);
//! then one `reconcile` pass (dry run first) retries the leak, destroys the
//! orphan and expires the idle sandbox, and the audit log shows it. Finally
//! nothing is left: no sandbox process and no sandbox directory.
//!
//! Run: `cargo run -p sandbox-reclaim --features local,sqlite --example demo`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use sandbox_reclaim::{
    reclaim_all, reconcile, FleetOptions, FleetStore, LeakLedger, LocalConfig, LocalProvider, ManagedSandboxProvider,
    ProviderError, ReconcileOptions, ReconcileReport, RunRecord, RunStatus, SandboxInstanceRecord,
    SandboxInstanceStore, SandboxProvider, SqliteSandboxInstanceStore,
};

type DemoResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Wraps the real provider and fails the first destroy of one sandbox, the way
/// a provider API times out in production.
struct FailOnceProvider<'a> {
    inner: &'a LocalProvider,
    unlucky_id: String,
    failed: AtomicBool,
}

#[async_trait]
impl SandboxProvider for FailOnceProvider<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    async fn destroy(&self, id: &str) -> Result<(), ProviderError> {
        if id == self.unlucky_id && !self.failed.swap(true, Ordering::SeqCst) {
            return Err(ProviderError::backend("simulated: the provider API timed out"));
        }
        self.inner.destroy(id).await
    }
}

/// Processes whose environment names the demo's base directory (every
/// sandbox process carries its sandbox directory there).
fn sandbox_processes(base_dir: &Path) -> Vec<u32> {
    let needle = base_dir.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|stat| !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'));
            alive && String::from_utf8_lossy(&environ).contains(&needle)
        })
        .collect()
}

fn print_actions(report: &ReconcileReport) {
    for action in &report.actions {
        let reason = action.reason.as_str();
        let result = serde_json::to_value(action.result).unwrap_or_default();
        let key = action.key.as_deref().unwrap_or("-");
        println!("  {reason:<10} {:<62} {key:<26} {}", action.provider_sandbox_id, result.as_str().unwrap_or_default());
    }
}

fn temp_dir() -> DemoResult<PathBuf> {
    let dir = std::env::temp_dir().join(format!("sandbox-reclaim-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

#[tokio::main]
async fn main() -> DemoResult<()> {
    let dir = temp_dir()?;
    let base_dir = dir.join("sandboxes");
    let provider = LocalProvider::new(LocalConfig::new(&base_dir))?;
    let store = SqliteSandboxInstanceStore::open(dir.join("instances.sqlite")).await?;
    println!("workspace:  {}", dir.display());
    println!("provider:   local ({} isolation)", provider.isolation().as_str());
    if let Some(reason) = provider.fallback_reason() {
        println!("            fallback because: {reason}");
    }
    println!("store:      SQLite, {}\n", store.path().display());

    // Twelve runs; eleven ran in a sandbox, one never did.
    let mut runs = Vec::new();
    for n in 1..=12 {
        let thread = format!("thread-{n:02}");
        let mut run = RunRecord::new(format!("run-{n:02}"), &thread, RunStatus::Running);
        if n != 12 {
            let key = format!("{thread}:workspace");
            let handle = provider.create(&key, &Default::default()).await?;
            let hello = provider.exec(&handle.id, &["sh".into(), "-c".into(), "echo hello from $$".into()]).await?;
            store
                .upsert(&SandboxInstanceRecord {
                    key: key.clone(),
                    provider: provider.name().into(),
                    provider_sandbox_id: handle.id.clone(),
                    latest_snapshot_id: None,
                    thread_id: thread.clone(),
                    latest_run_id: Some(run.run_id.clone()),
                    updated_at: handle.created_at,
                })
                .await?;
            println!("created {:<26} for {} (sandbox says: {})", handle.id, run.run_id, hello.stdout_text().trim());
            run.sandbox_key = Some(key);
        }
        runs.push(run);
    }
    println!(
        "\n{} sandboxes running, {} processes\n",
        provider.list().await?.len(),
        sandbox_processes(&base_dir).len()
    );

    // A host crashed between creating a sandbox and writing its record: an orphan.
    let lost = provider.create("thread-99:lost-workspace", &Default::default()).await?;
    println!("created {:<26} and lost its record (a crashed host)", lost.id);
    // run-11's thread went quiet three hours ago and never came back: idle.
    let mut idle = store.get("thread-11:workspace").await?.ok_or("missing record")?;
    idle.updated_at -= 3 * 3_600_000;
    store.upsert(&idle).await?;

    // The runs finish: most complete, some fail or are aborted; run-11 never does.
    for (index, run) in runs.iter_mut().enumerate() {
        run.status = match index {
            10 => RunStatus::Running,
            3 | 7 => RunStatus::Failed,
            5 => RunStatus::Aborted,
            _ => RunStatus::Completed,
        };
    }

    let unlucky = store.get("thread-04:workspace").await?.ok_or("missing record")?;
    let flaky = FailOnceProvider { inner: &provider, unlucky_id: unlucky.provider_sandbox_id, failed: false.into() };
    let terminal: Vec<RunRecord> = runs.iter().filter(|run| run.status.is_terminal()).cloned().collect();
    let mut fleet = FleetOptions::new(vec![&flaky], &store);
    fleet.concurrency = 4;
    let report = reclaim_all(&terminal, fleet).await?;
    println!("reclaimAll of {} terminal runs, 4 at a time ({} ms):", report.total, report.elapsed_ms);
    println!("  {:<8} {:<26} {:<16} error", "run", "sandbox key", "outcome");
    for line in &report.records {
        let key = line.sandbox_key.as_deref().unwrap_or("-");
        let outcome = serde_json::to_value(line.outcome)?;
        let error = line.error.as_deref().unwrap_or("");
        println!("  {:<8} {:<26} {:<16} {error}", line.run_id, key, outcome.as_str().unwrap_or_default());
    }

    println!("\nleak ledger:");
    for leak in store.list_leaks(None).await? {
        println!(
            "  {} ({}) run {} attempts {}: {}",
            leak.key, leak.provider_sandbox_id, leak.run_id, leak.attempts, leak.last_error
        );
    }

    // One reconcile pass finds what is still billing. The demo's orphan is
    // seconds old, so the grace period (10 minutes by default) is 0 here.
    let mut pass = ReconcileOptions::new(vec![&provider], &store);
    pass.orphan_grace = std::time::Duration::ZERO;
    pass.max_idle = Some(std::time::Duration::from_secs(3600));
    pass.dry_run = true;
    let plan = reconcile(pass.clone()).await?;
    println!("\nreconcile --dry-run plans {} destroys:", plan.counts.planned);
    print_actions(&plan);
    pass.dry_run = false;
    let done = reconcile(pass).await?;
    println!("reconcile ({} ms): {} destroyed, {} failed", done.elapsed_ms, done.counts.destroyed, done.counts.failed);
    print_actions(&done);
    println!("\naudit log:");
    for row in store.list_audit(None, 100).await? {
        let key = row.key.as_deref().unwrap_or("-");
        println!("  {} {:<10} {:<62} {:<26} {}", row.host, row.reason, row.provider_sandbox_id, key, row.result);
    }

    let left_dirs = std::fs::read_dir(&base_dir)?.count();
    let left_processes = sandbox_processes(&base_dir);
    println!(
        "\nleft behind: {} sandboxes listed, {left_dirs} sandbox directories, {} sandbox processes",
        provider.list().await?.len(),
        left_processes.len()
    );
    store.close().await;
    std::fs::remove_dir_all(&dir)?;
    if left_dirs != 0 || !left_processes.is_empty() {
        return Err("sandboxes were left behind".into());
    }
    Ok(())
}
