//! Store throughput: sequential get / upsert / delete per second for the
//! in-memory (baseline), SQLite and PostgreSQL stores, measured in one run.
//!
//! ```sh
//! SANDBOX_RECLAIM_PG_URL=postgres://... \
//!   cargo run --release -p sandbox-reclaim --features sqlite,postgres --example store_bench [ops]
//! ```
//!
//! Prints one line per store and operation: `store op ops ops_per_sec`.

use std::time::Instant;

use sandbox_reclaim::{
    InMemorySandboxInstanceStore, PostgresOptions, PostgresSandboxInstanceStore, SandboxInstanceRecord,
    SandboxInstanceStore, SqliteSandboxInstanceStore,
};

fn record(index: usize) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: format!("bench-key-{index}"),
        provider: "docker".to_owned(),
        provider_sandbox_id: format!("ctr-{index:08}"),
        latest_snapshot_id: Some(format!("snap-{index}")),
        thread_id: "thread-bench".to_owned(),
        latest_run_id: Some(format!("run-{index}")),
        updated_at: 1_700_000_000_000 + index as u64,
    }
}

fn report(store: &str, op: &str, ops: usize, started: Instant) {
    let per_sec = ops as f64 / started.elapsed().as_secs_f64();
    println!("{store:<8} {op:<7} {ops:>7} {per_sec:>12.0} ops/s");
}

async fn bench(name: &str, store: &dyn SandboxInstanceStore, ops: usize) {
    let records: Vec<_> = (0..ops).map(record).collect();
    let started = Instant::now();
    for written in &records {
        store.upsert(written).await.expect("upsert");
    }
    report(name, "upsert", ops, started);
    let started = Instant::now();
    for written in &records {
        let read = store.get(&written.key).await.expect("get");
        assert!(read.as_ref() == Some(written), "read back what was written");
    }
    report(name, "get", ops, started);
    let started = Instant::now();
    for written in &records {
        store.delete(&written.key).await.expect("delete");
    }
    report(name, "delete", ops, started);
}

#[tokio::main]
async fn main() {
    let ops: usize = std::env::args().nth(1).map_or(2_000, |arg| arg.parse().expect("ops must be a number"));
    let Ok(url) = std::env::var("SANDBOX_RECLAIM_PG_URL") else {
        eprintln!("store_bench: SANDBOX_RECLAIM_PG_URL is not set (start one with scripts/postgres.sh start DIR)");
        std::process::exit(2);
    };
    println!("{:<8} {:<7} {:>7} {:>16}", "store", "op", "ops", "throughput");

    bench("memory", &InMemorySandboxInstanceStore::new(), ops).await;

    let dir = std::env::temp_dir().join(format!("sandbox-reclaim-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sqlite = SqliteSandboxInstanceStore::open(dir.join("bench.db")).await.expect("open SQLite");
    bench("sqlite", &sqlite, ops).await;
    sqlite.close().await;
    let _ = std::fs::remove_dir_all(&dir);

    let schema = format!("bench_{}", std::process::id());
    let options = PostgresOptions { schema: schema.clone(), ..PostgresOptions::default() };
    let postgres = PostgresSandboxInstanceStore::connect(&url, options).await.expect("connect to PostgreSQL");
    bench("postgres", &postgres, ops).await;
    postgres.close().await;
    let cleanup = drop_schema(&url, &schema).await;
    if let Err(error) = cleanup {
        eprintln!("store_bench: could not drop schema {schema}: {error}");
    }
}

/// Drops the bench schema (sqlx is a dev-dependency, so examples may use it).
async fn drop_schema(url: &str, schema: &str) -> Result<(), sqlx::Error> {
    let pool = sqlx::postgres::PgPoolOptions::new().max_connections(1).connect(url).await?;
    sqlx::raw_sql(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE")).execute(&pool).await?;
    pool.close().await;
    Ok(())
}
