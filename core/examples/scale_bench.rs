//! `make bench`, scale part (issue #38): a reconcile pass must cost what it
//! lists, not what the store has accumulated.
//!
//! For SQLite and (with `SANDBOX_RECLAIM_PG_URL`) PostgreSQL, a store is
//! seeded with N live records (N = 10,000, then 1,000,000) plus 4·N registry
//! rows of deleted records, 100,000 ledger entries (not yet due) and
//! 1,000,000 audit rows, all within their retentions. Then the same pass runs
//! over 200 listed sandboxes and over 10,000 (half named by a live record,
//! half too young to sweep, so nothing is destroyed and the pass is the
//! store's work), with a provider that also looks registered sandboxes up by
//! id (it answers every one gone). Each measurement runs in a child process
//! of its own, so its peak memory is its own: the median of `SCALE_PASSES`
//! passes (default 5) and the largest growth of resident memory during one.
//!
//! Seeding writes rows with SQL, as the package writes them: records through
//! the instances table (its triggers register them), the rest in the shape
//! the triggers and the ledger write (a deleted record's registry row is in
//! the lookup queue; a failed destroy's, whose ledger entry names it, is
//! not). So both sizes do the same work: each pass looks up 1,000 queued
//! candidates (answered gone) and writes that back. The provider hands over its
//! listing in one answer: a vendor's pages of 100 change nothing here.
//!
//! Run: `cargo run --release -p sandbox-reclaim --features sqlite,postgres --example scale_bench [sizes...]`
//! (`SCALE_KEEP=1` keeps the stores, to look at them afterwards; `SCALE_ONLY=sqlite` or `postgres`
//! runs one store; `SCALE_VERBOSE=1` times each seeding statement).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use sandbox_reclaim::runtime::clock::now_millis;
use sandbox_reclaim::{
    reconcile, FleetStore, ListedSandbox, PostgresOptions, PostgresSandboxInstanceStore, ProviderError,
    ReconcileOptions, SandboxProvider, SqliteSandboxInstanceStore, DEFAULT_OWNER,
};

const LEDGER: u64 = 100_000;
const AUDIT: u64 = 1_000_000;
const SCHEMA: &str = "scale_bench";

/// Lists `listed`; every sandbox looked up by id is gone.
struct Provider {
    listed: Vec<ListedSandbox>,
}

#[async_trait]
impl SandboxProvider for Provider {
    fn name(&self) -> &str {
        "bench"
    }
    async fn destroy(&self, _id: &str) -> Result<(), ProviderError> {
        Ok(())
    }
    fn can_list(&self) -> bool {
        true
    }
    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        Ok(self.listed.clone())
    }
    fn can_lookup(&self) -> bool {
        true
    }
    async fn lookup_sandboxes(&self, _ids: &[String]) -> Result<Vec<ListedSandbox>, ProviderError> {
        Ok(Vec::new())
    }
}

/// Half the listing is named by live records (`live-N`), half was created
/// just now (`young-N`): referenced and young, nothing to destroy.
fn listing(count: u64, now: u64) -> Vec<ListedSandbox> {
    let sandbox = |id: String, created_at: u64| ListedSandbox {
        id,
        created_at: Some(created_at),
        owner: Some(DEFAULT_OWNER.into()),
        key: None,
        deleting: false,
    };
    (0..count / 2)
        .map(|n| sandbox(format!("live-{n}"), now - 3_600_000))
        .chain((0..count / 2).map(|n| sandbox(format!("young-{n}"), now)))
        .collect()
}

fn status_kib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|line| line.starts_with(field)).unwrap_or("");
    line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).unwrap_or(f64::NAN)
}

/// Starts a new peak-memory window (Linux: resets VmHWM to the current RSS).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn passes() -> usize {
    std::env::var("SCALE_PASSES").ok().and_then(|value| value.parse().ok()).filter(|&n| n > 0).unwrap_or(5)
}

/// One measurement (in a child process): `passes()` passes over `listed`;
/// prints the median milliseconds and the largest memory growth in MiB.
async fn measure(store: &dyn FleetStore, listed: u64) {
    let provider = Provider { listed: listing(listed, now_millis()) };
    let (mut times, mut growth) = (Vec::new(), 0.0f64);
    for _ in 0..passes() {
        reset_peak();
        let before = status_kib("VmRSS:");
        let started = Instant::now();
        let report = reconcile(ReconcileOptions::new(vec![&provider], store)).await.expect("reconcile");
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        if std::env::var_os("SCALE_VERBOSE").is_some() {
            eprintln!("    pass {}: {:.1} ms", times.len(), times[times.len() - 1]);
        }
        growth = growth.max((status_kib("VmHWM:") - before) / 1024.0);
        let orphans = &report.providers[0].orphans;
        assert_eq!((orphans.referenced, orphans.young, orphans.found), (listed / 2, listed / 2, 0), "{orphans:?}");
    }
    times.sort_by(f64::total_cmp);
    println!("{:.3} {:.3}", times[times.len() / 2], growth);
}

async fn child(args: &[String]) {
    let (backend, target, listed) = (&args[0], &args[1], args[2].parse().unwrap());
    if backend == "sqlite" {
        let store = SqliteSandboxInstanceStore::open(target).await.expect("sqlite");
        measure(&store, listed).await;
    } else {
        let options = PostgresOptions { schema: SCHEMA.into(), ..PostgresOptions::default() };
        let store = PostgresSandboxInstanceStore::connect(target, options).await.expect("postgres");
        measure(&store, listed).await;
    }
}

async fn seed_sqlite(path: &PathBuf, records: u64) -> Duration {
    let _ = std::fs::remove_file(path);
    SqliteSandboxInstanceStore::open(path).await.expect("create the store").close().await;
    let started = Instant::now();
    let url = format!("sqlite://{}", path.display());
    let pool = sqlx::SqlitePool::connect(&url).await.expect("seed connection");
    let now = now_millis() as i64;
    let series =
        |count: u64| format!("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {count} - 1)");
    let statements = [
        format!(
            "{} INSERT INTO sandbox_instances (sandbox_key, provider, provider_sandbox_id, latest_snapshot_id, \
             thread_id, latest_run_id, updated_at) SELECT 'thread-' || i || ':sandbox', 'bench', 'live-' || i, NULL, \
             'thread-' || i, 'run-' || i, {now} - 60000 FROM n",
            series(records)
        ),
        // A deleted record's row: last seen at its deletion, marked deleted, queued for lookup.
        format!(
            "{} INSERT INTO sandbox_registry (provider, provider_sandbox_id, sandbox_key, first_seen, last_seen, \
             deleted_seq, lookup_at) SELECT 'bench', 'gone-' || i, 'old-' || i || ':sandbox', {now} - i * 10 - 5000, \
             {now} - i * 10, {} - i, -({now} - i * 10) FROM n",
            series(4 * records),
            4 * records
        ),
        // The deletion count the triggers would have reached.
        format!("UPDATE sandbox_marks SET deletions = {} WHERE id = 1", 4 * records),
        // What a failed destroy's reclaim leaves: a registry row marked
        // deleted and, its ledger entry naming it, not queued.
        format!(
            "{} INSERT INTO sandbox_registry (provider, provider_sandbox_id, sandbox_key, first_seen, last_seen, \
             deleted_seq) SELECT 'bench', 'leaked-' || i, 'leaked-' || i || ':sandbox', {now} - 120000, \
             {now} - 60000, 1 FROM n",
            series(LEDGER)
        ),
        format!(
            "{} INSERT INTO sandbox_leaks (provider, provider_sandbox_id, sandbox_key, run_id, last_error, failed_at, \
             attempts, reason, next_attempt_at) SELECT 'bench', 'leaked-' || i, 'leaked-' || i || ':sandbox', \
             'run-' || i, 'boom', {now} - 60000, 1, 'destroy-failed', {now} + 86400000 FROM n",
            series(LEDGER)
        ),
        format!(
            "{} INSERT INTO sandbox_audit (at, host, provider, provider_sandbox_id, sandbox_key, reason, result, error) \
             SELECT {now} - i * 1000, 'host-a', 'bench', 'audited-' || i, NULL, 'orphan', 'destroyed', NULL FROM n",
            series(AUDIT)
        ),
    ];
    let mut tx = pool.begin().await.expect("seed transaction");
    for statement in &statements {
        sqlx::query(statement).execute(&mut *tx).await.expect("seeding SQLite");
    }
    tx.commit().await.expect("seed commit");
    pool.close().await;
    let seeded = started.elapsed();
    // The seed's gigabyte reaches the disk before anything is measured: the
    // kernel writing it back during a pass made passes vary by half.
    let _ = Command::new("sync").status();
    seeded
}

async fn seed_postgres(url: &str, records: u64) -> Duration {
    let pool = sqlx::PgPool::connect(url).await.expect("seed connection");
    sqlx::query(&format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")).execute(&pool).await.expect("drop schema");
    let options = PostgresOptions { schema: SCHEMA.into(), ..PostgresOptions::default() };
    PostgresSandboxInstanceStore::connect(url, options).await.expect("create the store").close().await;
    let started = Instant::now();
    let now = now_millis() as i64;
    let hash = |provider: &str, id: &str| {
        format!("sha256(convert_to(length({provider})::text || ':' || {provider} || {id}, 'UTF8'))")
    };
    let statements = [
        format!(
            "INSERT INTO {SCHEMA}.sandbox_instances (key_hash, sandbox_key, provider, provider_sandbox_id, \
             latest_snapshot_id, thread_id, latest_run_id, updated_at) SELECT \
             sha256(convert_to('thread-' || i || ':sandbox', 'UTF8')), 'thread-' || i || ':sandbox', 'bench', \
             'live-' || i, NULL, 'thread-' || i, 'run-' || i, {now} - 60000 FROM generate_series(0, {records} - 1) i"
        ),
        format!(
            "INSERT INTO {SCHEMA}.sandbox_registry (sandbox_hash, provider, provider_sandbox_id, sandbox_key, \
             first_seen, last_seen, deleted_xid, lookup_at) SELECT {}, 'bench', 'gone-' || i, 'old-' || i || ':sandbox', \
             {now} - i * 10 - 5000, {now} - i * 10, 1, -({now} - i * 10) FROM generate_series(0, {} - 1) i",
            hash("'bench'", "'gone-' || i"),
            4 * records
        ),
        format!(
            "INSERT INTO {SCHEMA}.sandbox_registry (sandbox_hash, provider, provider_sandbox_id, sandbox_key, \
             first_seen, last_seen, deleted_xid) SELECT {}, 'bench', 'leaked-' || i, 'leaked-' || i || ':sandbox', \
             {now} - 120000, {now} - 60000, 1 FROM generate_series(0, {LEDGER} - 1) i",
            hash("'bench'", "'leaked-' || i")
        ),
        // What autovacuum does for a registry that grew, before the ledger's
        // trigger (which unqueues each entry's registry row) plans its update:
        // without statistics it may walk the 4·N-row queue's partial index
        // once per entry instead of reading the row by key.
        format!("ANALYZE {SCHEMA}.sandbox_registry"),
        format!(
            "INSERT INTO {SCHEMA}.sandbox_leaks (sandbox_hash, provider, provider_sandbox_id, sandbox_key, run_id, \
             last_error, failed_at, attempts, reason, next_attempt_at) SELECT {}, 'bench', 'leaked-' || i, \
             'leaked-' || i || ':sandbox', 'run-' || i, 'boom', {now} - 60000, 1, 'destroy-failed', \
             {now} + 86400000 FROM generate_series(0, {LEDGER} - 1) i",
            hash("'bench'", "'leaked-' || i")
        ),
        format!(
            "INSERT INTO {SCHEMA}.sandbox_audit (at, host, provider, provider_sandbox_id, sandbox_key, reason, result, \
             error) SELECT {now} - i * 1000, 'host-a', 'bench', 'audited-' || i, NULL, 'orphan', 'destroyed', NULL \
             FROM generate_series(0, {AUDIT} - 1) i"
        ),
        // What autovacuum does for a store that grew: the planner's statistics.
        format!("ANALYZE {SCHEMA}.sandbox_instances, {SCHEMA}.sandbox_registry, {SCHEMA}.sandbox_leaks, {SCHEMA}.sandbox_audit"),
        // The seed written out before anything is measured (as SQLite's `sync`):
        // a checkpoint of it running beside the passes moved them by half.
        "CHECKPOINT".to_owned(),
    ];
    for statement in &statements {
        let began = Instant::now();
        sqlx::query(statement).execute(&pool).await.expect("seeding PostgreSQL");
        if std::env::var_os("SCALE_VERBOSE").is_some() {
            eprintln!("{:>8.1} s  {}", began.elapsed().as_secs_f64(), &statement[..statement.len().min(90)]);
        }
    }
    pool.close().await;
    started.elapsed()
}

/// Runs one measurement in a child process: (median ms, growth MiB).
fn run_child(backend: &str, target: &str, listed: u64) -> (f64, f64) {
    let exe = std::env::current_exe().expect("own path");
    let output = Command::new(exe).args(["child", backend, target, &listed.to_string()]).output().expect("child");
    assert!(output.status.success(), "child failed: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    let mut fields = text.split_whitespace().map(|field| field.parse::<f64>().expect("a number"));
    (fields.next().unwrap(), fields.next().unwrap())
}

fn report(backend: &str, rows: &[(u64, u64, f64, f64)]) {
    for listed in [200u64, 10_000] {
        let of = |records: u64| rows.iter().find(|row| row.0 == records && row.1 == listed).copied();
        for row in rows.iter().filter(|row| row.1 == listed) {
            println!(
                "  {backend:<10} {:>9} records, {:>8} registry rows: pass over {listed:>6} listed {:>8.1} ms, peak growth {:>6.1} MiB",
                row.0,
                4 * row.0,
                row.2,
                row.3
            );
        }
        if let (Some(small), Some(large)) = (of(10_000), of(1_000_000)) {
            println!(
                "  {backend:<10} {listed} listed: 1,000,000 / 10,000 records = {:.2}× pass time (target ≤ 1.5×), peak growth {:.1} MiB (target ≤ 64 MiB)",
                large.2 / small.2,
                large.3
            );
        }
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("child") {
        return child(&args[1..]).await;
    }
    let sizes: Vec<u64> = if args.is_empty() {
        vec![10_000, 1_000_000]
    } else {
        args.iter().map(|arg| arg.parse().expect("a record count")).collect()
    };
    println!(
        "each store: N records + 4·N registry rows of deleted records + {LEDGER} ledger entries + {AUDIT} audit rows; \
         a pass over 200 and over 10,000 listed (half referenced, half young); median of {} passes",
        passes()
    );
    let dir = std::env::temp_dir().join(format!("sandbox-reclaim-scale-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut rows = Vec::new();
    let only = std::env::var("SCALE_ONLY").unwrap_or_default();
    for &records in sizes.iter().filter(|_| only != "postgres") {
        let path = dir.join(format!("scale-{records}.sqlite"));
        let seeded = seed_sqlite(&path, records).await;
        let size = std::fs::metadata(&path).map(|meta| meta.len()).unwrap_or(0) as f64 / 1_048_576.0;
        println!("  SQLite     seeded {records} records in {:.1} s ({size:.0} MiB file)", seeded.as_secs_f64());
        for listed in [200u64, 10_000] {
            let (ms, growth) = run_child("sqlite", &path.display().to_string(), listed);
            rows.push((records, listed, ms, growth));
        }
        if std::env::var_os("SCALE_KEEP").is_none() {
            let _ = std::fs::remove_file(&path);
        }
    }
    report("SQLite", &rows);
    let url = std::env::var("SANDBOX_RECLAIM_PG_URL").ok().filter(|url| !url.is_empty() && only != "sqlite");
    if let Some(url) = url {
        let mut rows = Vec::new();
        for &records in &sizes {
            let seeded = seed_postgres(&url, records).await;
            println!("  PostgreSQL seeded {records} records in {:.1} s", seeded.as_secs_f64());
            for listed in [200u64, 10_000] {
                let (ms, growth) = run_child("postgres", &url, listed);
                rows.push((records, listed, ms, growth));
            }
        }
        report("PostgreSQL", &rows);
        if std::env::var_os("SCALE_KEEP").is_none() {
            let pool = sqlx::PgPool::connect(&url).await.expect("cleanup connection");
            let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")).execute(&pool).await;
        }
    }
    if std::env::var_os("SCALE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
