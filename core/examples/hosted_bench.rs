//! `make bench`: `reconcile` over 10,000 listed E2B sandboxes on the local
//! fake (tests/fakes/e2b.mjs under node): pages of 100, 20 ms per request,
//! destroys 20 ms, concurrency 64. Prints the wall time against the ideal
//! (pages × 20 ms + 10,000 × 20 ms / 64) and the pass's peak memory.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sandbox_reclaim::{
    reconcile, E2bConfig, E2bProvider, InMemorySandboxInstanceStore, ReconcileOptions, SandboxProvider,
};
use serde_json::{json, Value};

const SANDBOXES: usize = 10_000;
const PAGE: u32 = 100;
const LATENCY_MS: u64 = 20;
const CONCURRENCY: usize = 64;

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

#[tokio::main]
async fn main() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fakes/e2b.mjs");
    let mut fake = Command::new("node")
        .args([script, "--key", "e2b_bench"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("hosted_bench needs `node` on PATH for the E2B fake");
    let mut line = String::new();
    BufReader::new(fake.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = serde_json::from_str::<Value>(&line).unwrap()["url"].as_str().unwrap().to_owned();

    let http = reqwest::Client::new();
    let post = |route: &str, body: Value| http.post(format!("{url}/_fake/{route}")).body(body.to_string()).send();
    let sandboxes: Vec<Value> = (0..SANDBOXES)
        .map(|index| {
            json!({ "sandboxID": format!("sbx{index:05}"), "startedAt": "2026-01-01T00:00:00Z",
                    "metadata": { "io.sandbox-reclaim.owner": "sandbox-reclaim" } })
        })
        .collect();
    post("sandboxes", Value::Array(sandboxes)).await.expect("seed the fake");
    post("faults", json!({ "latencyMs": LATENCY_MS })).await.expect("set the latency");

    let config = E2bConfig {
        api_key: Some("e2b_bench".into()),
        api_url: Some(url.clone()),
        page_size: PAGE,
        ..E2bConfig::default()
    };
    let provider = E2bProvider::new(config).unwrap();
    let store = InMemorySandboxInstanceStore::with_ledger();
    let mut options = ReconcileOptions::new(vec![&provider as &dyn SandboxProvider], &store);
    options.concurrency = CONCURRENCY;
    options.orphan_grace = Duration::from_secs(60);
    let rss_before = peak_rss_mib();
    let started = Instant::now();
    let report = reconcile(options).await.expect("the pass");
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    let pages = SANDBOXES.div_ceil(PAGE as usize) as f64;
    let ideal = pages * LATENCY_MS as f64 + SANDBOXES as f64 * LATENCY_MS as f64 / CONCURRENCY as f64;
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.destroyed, SANDBOXES as u64, "{orphans:?}");
    println!(
        "  reconcile  E2B fake   {SANDBOXES} sandboxes, pages of {PAGE}, {LATENCY_MS} ms per request, at {CONCURRENCY}: \
         {wall:>7.1} ms   {:.3}× ideal ({ideal:.1} ms; target ≤ 1.3×); peak RSS {:.1} MiB (before the pass {:.1} MiB)",
        wall / ideal,
        peak_rss_mib().unwrap_or(f64::NAN),
        rss_before.unwrap_or(f64::NAN),
    );
    let _ = fake.kill();
    let _ = fake.wait();
}
