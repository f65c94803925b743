//! `make demo`: the main job on embedded defaults.
//!
//! A `LocalProvider` and a SQLite store in a temporary directory. Sandboxes
//! are created for a dozen runs, the runs finish, one provider destroy is made
//! to fail, every terminal run is reclaimed, the leak ledger shows the sandbox
//! that failed, a retry empties it, and finally nothing is left: no sandbox
//! process and no sandbox directory.
//!
//! Run: `cargo run -p sandbox-reclaim --features local,sqlite --example demo`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use sandbox_reclaim::{
    reclaim_sandbox, retry_leaks, LeakLedger, LocalConfig, LocalProvider, ManagedSandboxProvider, ProviderError,
    ReclaimOptions, RetryOptions, RunRecord, RunStatus, SandboxInstanceRecord, SandboxInstanceStore, SandboxProvider,
    SqliteSandboxInstanceStore,
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

    // The runs finish: most complete, some fail or are aborted; one is still running.
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
    let options = ReclaimOptions { provider: &flaky, instances: &store, logger: None, destroy_timeout: None };

    println!("{:<8} {:<11} {:<26} outcome", "run", "status", "sandbox key");
    for run in &runs {
        let outcome = if run.status.is_terminal() {
            reclaim_sandbox(run, options).await?.to_string()
        } else {
            "(still running: not reclaimed)".to_owned()
        };
        let key = run.sandbox_key.as_deref().unwrap_or("-");
        println!("{:<8} {:<11} {:<26} {outcome}", run.run_id, run.status.as_str(), key);
    }

    println!("\nleak ledger:");
    for leak in store.list_leaks(None).await? {
        println!(
            "  {} ({}) run {} attempts {}: {}",
            leak.key, leak.provider_sandbox_id, leak.run_id, leak.attempts, leak.last_error
        );
    }
    let summary = retry_leaks(&provider, &store, RetryOptions::default()).await?;
    println!(
        "retry: {} retried, {} destroyed, {} still failing; ledger now holds {} entries",
        summary.retried,
        summary.destroyed,
        summary.still_failing,
        store.count_leaks(None).await?
    );

    // The still-running run's sandbox is the operator's to keep; the demo tears it down too.
    let still_running = runs.iter().find(|run| !run.status.is_terminal()).and_then(|run| run.sandbox_key.clone());
    if let Some(key) = still_running {
        let mut run = RunRecord::new("run-11", "thread-11", RunStatus::Completed).with_sandbox_key(key);
        run.finished_at = Some(0.0);
        println!("run-11 finishes later: {}", reclaim_sandbox(&run, options).await?);
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
