//! `make bench`, fleet part (Rust): wall time of fleet passes against their
//! ideal, side by side in one process.
//!
//! 1. `reclaim_all` of N records (default 2,000) at concurrency 64 against a
//!    provider whose destroy takes 20 ms, with the in-memory store, SQLite
//!    and (with `SANDBOX_RECLAIM_PG_URL` set) PostgreSQL. Ideal: ⌈N / 64⌉ waves
//!    of 20 ms (a pass cannot run the 2,000th record in a 32nd of a wave);
//!    with destroys of 15–25 ms, N × 20 ms / 64. Each pass runs
//!    `FLEET_PASSES` times (default 5) and prints its median and range: one
//!    pass on a small shared host swings by ±5%.
//! 2. `reconcile` over 10,000 orphans (a LocalProvider-shaped listing: owner,
//!    creation time, key) with SQLite: seconds and peak memory.
//!
//! Run: `cargo run --release -p sandbox-reclaim --features sqlite,postgres --example fleet_bench [records]`.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use sandbox_reclaim::{
    reclaim_all, reconcile, FleetOptions, InMemorySandboxInstanceStore, ListedSandbox, PostgresOptions,
    PostgresSandboxInstanceStore, ProviderError, ReconcileOptions, RunRecord, RunStatus, SandboxInstanceRecord,
    SandboxInstanceStore, SandboxProvider, SqliteSandboxInstanceStore,
};

const LATENCY: Duration = Duration::from_millis(20);
const CONCURRENCY: usize = 64;

/// A provider whose destroy takes `LATENCY` (or, `varied`, 15–25 ms by
/// sandbox, mean `LATENCY`) and whose listing is `listed`.
struct ScriptedProvider {
    listed: Vec<ListedSandbox>,
    varied: bool,
}

/// 15–25 ms for `sbx-N`, spread evenly over N (mean 20 ms): a real provider's
/// destroys never end in lockstep, as a fixed latency makes them.
fn varied_latency(id: &str) -> Duration {
    let n: u64 = id.rsplit('-').next().and_then(|tail| tail.parse().ok()).unwrap_or(0);
    Duration::from_millis(15 + (n * 7919) % 11)
}

#[async_trait]
impl SandboxProvider for ScriptedProvider {
    fn name(&self) -> &str {
        "bench"
    }
    async fn destroy(&self, id: &str) -> Result<(), ProviderError> {
        tokio::time::sleep(if self.varied { varied_latency(id) } else { LATENCY }).await;
        Ok(())
    }
    fn can_list(&self) -> bool {
        true
    }
    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        Ok(self.listed.clone())
    }
}

fn instance(n: usize) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: format!("thread-{n}:sandbox"),
        provider: "bench".into(),
        provider_sandbox_id: format!("sbx-{n}"),
        latest_snapshot_id: None,
        thread_id: format!("thread-{n}"),
        latest_run_id: Some(format!("run-{n}")),
        updated_at: 1_700_000_000_000,
    }
}

fn records(count: usize) -> Vec<RunRecord> {
    (0..count)
        .map(|n| {
            RunRecord::new(format!("run-{n}"), format!("thread-{n}"), RunStatus::Completed)
                .with_sandbox_key(format!("thread-{n}:sandbox"))
        })
        .collect()
}

async fn fill(store: &dyn SandboxInstanceStore, count: usize) {
    for n in 0..count {
        store.upsert(&instance(n)).await.expect("seeding the store");
    }
}

/// Peak resident memory of this process (Linux), in MiB.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// How many times each reclaimAll pass runs (`FLEET_PASSES`, default 5).
fn passes() -> usize {
    std::env::var("FLEET_PASSES").ok().and_then(|value| value.parse().ok()).filter(|&n| n > 0).unwrap_or(5)
}

/// The best a perfect scheduler does: ⌈N / concurrency⌉ waves of `LATENCY`
/// when every destroy takes it; N × mean / concurrency when they vary.
fn ideal(count: usize, varied: bool) -> Duration {
    if varied {
        LATENCY * count as u32 / CONCURRENCY as u32
    } else {
        LATENCY * count.div_ceil(CONCURRENCY) as u32
    }
}

async fn reclaim_all_pass(name: &str, store: &dyn SandboxInstanceStore, count: usize, varied: bool) {
    let provider = ScriptedProvider { listed: Vec::new(), varied };
    let mut elapsed = Vec::new();
    for _ in 0..passes() {
        fill(store, count).await;
        let mut options = FleetOptions::new(vec![&provider], store);
        options.concurrency = CONCURRENCY;
        let started = Instant::now();
        let report = reclaim_all(&records(count), options).await.expect("reclaim_all");
        elapsed.push(started.elapsed().as_secs_f64());
        assert_eq!(report.counts.destroyed, count as u64, "every record destroyed");
    }
    elapsed.sort_by(f64::total_cmp);
    let (median, ideal) = (elapsed[elapsed.len() / 2], ideal(count, varied).as_secs_f64());
    let name = if varied { format!("{name}, destroy 15–25 ms") } else { name.to_owned() };
    println!(
        "  reclaimAll {name:<10} {count} records: {:>7.1} ms   {:.3}× ideal (median of {}; {:.3}–{:.3}×)",
        median * 1000.0,
        median / ideal,
        elapsed.len(),
        elapsed[0] / ideal,
        elapsed[elapsed.len() - 1] / ideal
    );
}

#[tokio::main]
async fn main() {
    let count: usize = std::env::args().nth(1).and_then(|arg| arg.parse().ok()).unwrap_or(2000);
    let dir = std::env::temp_dir().join(format!("sandbox-reclaim-fleet-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    println!(
        "destroy latency {} ms, concurrency {CONCURRENCY}; ideal = ⌈N / concurrency⌉ × latency = {:.1} ms \
         (15–25 ms destroys: N × 20 ms / concurrency = {:.1} ms)",
        LATENCY.as_millis(),
        ideal(count, false).as_secs_f64() * 1000.0,
        ideal(count, true).as_secs_f64() * 1000.0
    );

    reclaim_all_pass("in-memory", &InMemorySandboxInstanceStore::with_ledger(), count, false).await;
    let sqlite = SqliteSandboxInstanceStore::open(dir.join("reclaim.sqlite")).await.expect("sqlite");
    reclaim_all_pass("SQLite", &sqlite, count, false).await;
    sqlite.close().await;
    // PostgreSQL, in a schema of its own (make bench starts a server).
    if let Some(url) = std::env::var("SANDBOX_RECLAIM_PG_URL").ok().filter(|url| !url.is_empty()) {
        let schema = format!("fleet_bench_{}", std::process::id());
        let options = PostgresOptions { schema, max_connections: 16, ..PostgresOptions::default() };
        let postgres = PostgresSandboxInstanceStore::connect(&url, options).await.expect("postgres");
        reclaim_all_pass("PostgreSQL", &postgres, count, false).await;
        // The same passes with destroys that do not end in lockstep (same mean).
        reclaim_all_pass("in-memory", &InMemorySandboxInstanceStore::with_ledger(), count, true).await;
        reclaim_all_pass("PostgreSQL", &postgres, count, true).await;
        postgres.close().await;
    }

    let orphans = 10_000;
    let now = sandbox_reclaim::runtime::clock::now_millis();
    let listed = (0..orphans)
        .map(|n| ListedSandbox {
            id: format!("sr-orphan-{n:05}"),
            created_at: Some(now - 3_600_000),
            owner: Some(sandbox_reclaim::DEFAULT_OWNER.into()),
            key: Some(format!("lost-{n}")),
            deleting: false,
        })
        .collect();
    let provider = ScriptedProvider { listed, varied: false };
    let store = SqliteSandboxInstanceStore::open(dir.join("reconcile.sqlite")).await.expect("sqlite");
    let mut options = ReconcileOptions::new(vec![&provider], &store);
    options.concurrency = CONCURRENCY;
    let rss_before = peak_rss_mib();
    let started = Instant::now();
    let report = reconcile(options).await.expect("reconcile");
    let elapsed = started.elapsed();
    assert_eq!(report.counts.destroyed, orphans as u64);
    let sweep_ideal = ideal(orphans, false);
    println!(
        "  reconcile  SQLite     {orphans} orphans: {:>7.1} ms   {:.3}× ideal ({:.1} ms); peak RSS {:.1} MiB (before the pass {:.1} MiB)",
        elapsed.as_secs_f64() * 1000.0,
        elapsed.as_secs_f64() / sweep_ideal.as_secs_f64(),
        sweep_ideal.as_secs_f64() * 1000.0,
        peak_rss_mib().unwrap_or(f64::NAN),
        rss_before.unwrap_or(f64::NAN),
    );
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
