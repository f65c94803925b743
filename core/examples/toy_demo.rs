//! Reclaims a few sandboxes from an in-memory store with a toy provider and
//! prints each outcome. Run: `cargo run -p sandbox-reclaim --example toy_demo`.

use async_trait::async_trait;
use sandbox_reclaim::{
    sandbox_reclaimer, InMemorySandboxInstanceStore, LogMeta, LogValue, ProviderError, ReclaimLogger, ReclaimOptions,
    RunRecord, RunStatus, SandboxInstanceRecord, SandboxInstanceStore, SandboxProvider,
};

/// Pretends to destroy sandboxes; refuses the ones whose id starts with `stuck`.
struct ToyProvider;

#[async_trait]
impl SandboxProvider for ToyProvider {
    fn name(&self) -> &str {
        "toy"
    }
    async fn destroy(&self, id: &str) -> Result<(), ProviderError> {
        if id.starts_with("stuck") {
            return Err(ProviderError::backend(format!("{id} does not answer")));
        }
        Ok(())
    }
}

struct PrintLogger;

impl PrintLogger {
    fn print(&self, level: &str, message: &str, meta: &LogMeta<'_>) {
        let meta: Vec<String> = meta
            .iter()
            .map(|(key, value)| match value {
                LogValue::Text(text) => format!("{key}={text:?}"),
                LogValue::Error(error) => format!("{key}=<{error}>"),
            })
            .collect();
        println!("  [{level}] {message} {{{}}}", meta.join(", "));
    }
}

impl ReclaimLogger for PrintLogger {
    fn warn(&self, message: &str, meta: &LogMeta<'_>) {
        self.print("warn", message, meta)
    }
    fn errors(&self, message: &str, meta: &LogMeta<'_>) {
        self.print("errors", message, meta)
    }
    fn sandbox(&self, message: &str, meta: &LogMeta<'_>) {
        self.print("sandbox", message, meta)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let store = InMemorySandboxInstanceStore::new();
    for (key, provider, id) in [("t1:sb", "toy", "box-1"), ("t2:sb", "daytona", "dt-7"), ("t3:sb", "toy", "stuck-3")] {
        let record = SandboxInstanceRecord {
            key: key.into(),
            provider: provider.into(),
            provider_sandbox_id: id.into(),
            latest_snapshot_id: None,
            thread_id: key.split(':').next().unwrap_or_default().into(),
            latest_run_id: None,
            updated_at: 1_700_000_000_000,
        };
        store.upsert(&record).await.expect("valid record");
    }
    let runs = [
        RunRecord::new("run-1", "t1", RunStatus::Completed).with_sandbox_key("t1:sb"),
        RunRecord::new("run-2", "t2", RunStatus::Failed).with_sandbox_key("t2:sb"),
        RunRecord::new("run-3", "t3", RunStatus::Aborted).with_sandbox_key("t3:sb"),
        RunRecord::new("run-4", "t4", RunStatus::Completed).with_sandbox_key("t4:sb"),
        RunRecord::new("run-5", "t5", RunStatus::Completed),
    ];
    let options =
        ReclaimOptions { provider: &ToyProvider, instances: &store, logger: Some(&PrintLogger), destroy_timeout: None };
    for run in &runs {
        println!("{}:", run.run_id);
        match sandbox_reclaimer(run, options).await {
            Ok(()) => println!("  -> reclaimed (or nothing to reclaim)"),
            Err(error) => println!("  -> FAILED: {error}"),
        }
    }
    println!("records left: {:?}", store.records().iter().map(|r| &r.key).collect::<Vec<_>>());
}
