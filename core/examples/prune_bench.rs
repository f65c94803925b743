//! `make bench`, prune part (issue #38): pruning millions of expired rows
//! runs in bounded batches, each its own short write transaction, so another
//! process's upserts keep their latency while it runs.
//!
//! A SQLite store is seeded with 10,000 live records, 4,000,000 registry rows
//! and 1,000,000 audit rows past their retention (SQL shaped as the package
//! writes rows). One child process then upserts records one after another
//! (each an upsert of a live record: its own write transaction, through the
//! registry's trigger; 1 ms apart, as an app's writes come, or back to back
//! with `PRUNE_WRITER_PAUSE_MS=0`), first alone (the baseline), then while a second
//! child prunes everything expired (`FleetStore::prune`, called until
//! nothing expired is left, as successive passes would). The upserts' p50,
//! p99 and largest latency both ways, and the prune's rows per second and
//! longest call, are printed.
//!
//! Run: `cargo run --release -p sandbox-reclaim --features sqlite,postgres --example prune_bench`
//! (`PRUNE_REGISTRY` / `PRUNE_AUDIT` change the seeded counts; `PRUNE_WRITER_PAUSE_MS` the writer's pace).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sandbox_reclaim::runtime::clock::now_millis;
use sandbox_reclaim::stores::sqlite::{PRUNE_BATCH, PRUNE_MAX_BATCHES};
use sandbox_reclaim::{FleetStore, SandboxInstanceRecord, SandboxInstanceStore, SqliteSandboxInstanceStore};

const LIVE: u64 = 10_000;
const DAY_MS: u64 = 86_400_000;
/// The retention the prune is given; every seeded registry and audit row is older.
const RETENTION_MS: u64 = 30 * DAY_MS;
const BASELINE: Duration = Duration::from_secs(3);

fn count(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|value| value.parse().ok()).unwrap_or(default)
}

fn record(n: u64) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: format!("thread-{n}:sandbox"),
        provider: "bench".into(),
        provider_sandbox_id: format!("live-{n}"),
        latest_snapshot_id: None,
        thread_id: format!("thread-{n}"),
        latest_run_id: Some(format!("run-{n}")),
        updated_at: now_millis(),
    }
}

/// Child: upserts live records one after another until `stop` exists (or,
/// without one, for the baseline's time); prints count, p50, p99 and max in ms.
async fn upserts(path: &str, stop: Option<&str>) {
    let store = SqliteSandboxInstanceStore::open(path).await.expect("open the store");
    let pace = Duration::from_millis(count("PRUNE_WRITER_PAUSE_MS", 1));
    let started = Instant::now();
    let mut times = Vec::new();
    for n in 0.. {
        let done = match stop {
            Some(stop) => Path::new(stop).exists(),
            None => started.elapsed() >= BASELINE,
        };
        if done {
            break;
        }
        let at = Instant::now();
        store.upsert(&record(n % LIVE)).await.expect("upsert");
        times.push(at.elapsed().as_secs_f64() * 1000.0);
        if !pace.is_zero() {
            tokio::time::sleep(pace).await;
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |share: f64| times[((times.len() - 1) as f64 * share) as usize];
    println!("{} {:.3} {:.3} {:.3}", times.len(), at(0.5), at(0.99), at(1.0));
}

/// Child: prunes until nothing expired is left; prints the calls, the
/// seconds taken and the longest call in ms.
async fn prune(path: &str) {
    let store = SqliteSandboxInstanceStore::open(path).await.expect("open the store");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{path}")).await.expect("check connection");
    let before = now_millis() - RETENTION_MS;
    let expired = || async {
        let left: (bool,) = sqlx::query_as(
            "SELECT EXISTS (SELECT 1 FROM sandbox_registry WHERE provider = 'bench' AND last_seen < ?1) \
             OR EXISTS (SELECT 1 FROM sandbox_audit WHERE provider = 'bench' AND at < ?1)",
        )
        .bind(before as i64)
        .fetch_one(&pool)
        .await
        .expect("rows left");
        left.0
    };
    let started = Instant::now();
    let (mut calls, mut longest) = (0, 0.0f64);
    while expired().await {
        let at = Instant::now();
        store.prune("bench", before, before).await.expect("prune");
        longest = longest.max(at.elapsed().as_secs_f64() * 1000.0);
        calls += 1;
    }
    println!("{calls} {:.3} {longest:.3}", started.elapsed().as_secs_f64());
}

async fn seed(path: &PathBuf, registry: u64, audit: u64) {
    let _ = std::fs::remove_file(path);
    SqliteSandboxInstanceStore::open(path).await.expect("create the store").close().await;
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display())).await.expect("seed connection");
    let now = now_millis() as i64;
    let expired = now - (RETENTION_MS + DAY_MS) as i64;
    let series =
        |count: u64| format!("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {count} - 1)");
    let statements = [
        // Live records, through the instances table (its triggers register them).
        format!(
            "{} INSERT INTO sandbox_instances (sandbox_key, provider, provider_sandbox_id, latest_snapshot_id, \
             thread_id, latest_run_id, updated_at) SELECT 'thread-' || i || ':sandbox', 'bench', 'live-' || i, NULL, \
             'thread-' || i, 'run-' || i, {now} FROM n",
            series(LIVE)
        ),
        // Deleted records' rows, last seen past the retention, never looked up.
        format!(
            "{} INSERT INTO sandbox_registry (provider, provider_sandbox_id, sandbox_key, first_seen, last_seen, \
             deleted_seq) SELECT 'bench', 'gone-' || i, 'old-' || i || ':sandbox', {expired} - i - 5000, \
             {expired} - i, 1 FROM n",
            series(registry)
        ),
        format!(
            "{} INSERT INTO sandbox_audit (at, host, provider, provider_sandbox_id, sandbox_key, reason, result, error) \
             SELECT {expired} - i, 'host-a', 'bench', 'audited-' || i, NULL, 'orphan', 'destroyed', NULL FROM n",
            series(audit)
        ),
    ];
    let mut tx = pool.begin().await.expect("seed transaction");
    for statement in &statements {
        sqlx::query(statement).execute(&mut *tx).await.expect("seeding SQLite");
    }
    tx.commit().await.expect("seed commit");
    pool.close().await;
}

fn spawn(args: &[&str]) -> Child {
    let exe = std::env::current_exe().expect("own path");
    Command::new(exe).args(args).stdout(Stdio::piped()).spawn().expect("child")
}

fn numbers(child: Child) -> Vec<f64> {
    let output = child.wait_with_output().expect("child");
    assert!(output.status.success(), "child failed");
    String::from_utf8_lossy(&output.stdout).split_whitespace().map(|field| field.parse().expect("a number")).collect()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("upserts") => return upserts(&args[1], args.get(2).map(String::as_str)).await,
        Some("prune") => return prune(&args[1]).await,
        _ => {}
    }
    let (registry, audit) = (count("PRUNE_REGISTRY", 4_000_000), count("PRUNE_AUDIT", 1_000_000));
    let dir = std::env::temp_dir().join(format!("sandbox-reclaim-prune-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("prune.sqlite");
    let seeding = Instant::now();
    seed(&path, registry, audit).await;
    let size = std::fs::metadata(&path).map(|meta| meta.len()).unwrap_or(0) as f64 / 1_048_576.0;
    println!(
        "  SQLite: {registry} expired registry rows + {audit} expired audit rows + {LIVE} live records, seeded in {:.1} s \
         ({size:.0} MiB); prune batches of {PRUNE_BATCH}, at most {PRUNE_MAX_BATCHES} a table per call",
        seeding.elapsed().as_secs_f64()
    );
    let file = path.display().to_string();
    let alone = numbers(spawn(&["upserts", &file]));
    let stop = dir.join("stop").display().to_string();
    let writer = spawn(&["upserts", &file, &stop]);
    let pruned = numbers(spawn(&["prune", &file]));
    std::fs::write(&stop, b"").expect("stop the writer");
    let beside = numbers(writer);
    let rows = (registry + audit) as f64;
    println!(
        "  prune: {rows} rows in {:.1} s ({:.0} rows/s), {} calls, longest call {:.0} ms",
        pruned[1],
        rows / pruned[1],
        pruned[0],
        pruned[2]
    );
    let line = |label: &str, numbers: &[f64]| {
        println!(
            "  upserts from another process, {label}: {} upserts, p50 {:.2} ms, p99 {:.2} ms, max {:.1} ms",
            numbers[0], numbers[1], numbers[2], numbers[3]
        )
    };
    line("alone       ", &alone);
    line("during prune", &beside);
    println!("  during prune / alone: p50 {:.2}×, p99 {:.2}×", beside[1] / alone[1], beside[2] / alone[2]);
    let _ = std::fs::remove_dir_all(&dir);
}
