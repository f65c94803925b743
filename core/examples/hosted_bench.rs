//! `make bench`: `reconcile` over 10,000 listed sandboxes for every hosted
//! vendor entry (E2B, Daytona, Vercel, Sprites, Runloop, Blaxel), each on its
//! local fake (tests/fakes/<vendor>.mjs under node): pages of 100 (or the
//! vendor's largest page, when smaller), 20 ms per request, destroys 20 ms,
//! concurrency 64. Prints one line per vendor: the wall time against the
//! ideal (pages × 20 ms + 10,000 × 20 ms / 64) and the pass's peak memory.
//!
//! Each vendor runs in a child process of this example (`hosted_bench
//! --vendor <key>`), so each line's peak RSS (VmHWM) is that vendor's pass
//! alone, not the high-water mark of the vendors before it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sandbox_reclaim::options::provider::{HostedSettings, HostedVendor};
use sandbox_reclaim::providers::build_hosted;
use sandbox_reclaim::{reconcile, InMemorySandboxInstanceStore, ReconcileOptions, SandboxProvider};
use serde_json::{json, Value};

const SANDBOXES: usize = 10_000;
const PAGE: u32 = 100;
const LATENCY_MS: u64 = 20;
const CONCURRENCY: usize = 64;
const OWNER_LABEL: &str = "io.sandbox-reclaim.owner";
const OWNER: &str = "sandbox-reclaim";
/// 2026-01-01T00:00:00Z: long past the 60 s orphan grace.
const LONG_AGO: &str = "2026-01-01T00:00:00Z";
const LONG_AGO_MS: u64 = 1_767_225_600_000;

/// One vendor's row: its fake, its credential flags and its seed format.
struct Bench {
    vendor: HostedVendor,
    key: &'static str,
    label: &'static str,
    /// The fake's command-line flags (credential, team, workspace).
    flags: &'static [&'static str],
    /// What the client's `api_url` adds to the fake's `url`.
    suffix: &'static str,
    /// Seed item `index`: ours, created long ago, in a live status that bills.
    item: fn(usize) -> Value,
}

const BENCHES: [Bench; 6] = [
    Bench {
        vendor: HostedVendor::E2b,
        key: "e2b",
        label: "E2B",
        flags: &["--key", "e2b_bench"],
        suffix: "",
        item: |index| json!({ "sandboxID": format!("sbx{index:05}"), "startedAt": LONG_AGO, "metadata": { OWNER_LABEL: OWNER } }),
    },
    Bench {
        vendor: HostedVendor::Daytona,
        key: "daytona",
        label: "Daytona",
        flags: &["--key", "daytona_bench"],
        suffix: "",
        item: |index| {
            json!({ "id": format!("sbx{index:05}"), "labels": { OWNER_LABEL: OWNER }, "state": "started",
                    "createdAt": "2026-01-01T00:00:00.000Z" })
        },
    },
    Bench {
        vendor: HostedVendor::Vercel,
        key: "vercel",
        label: "Vercel",
        flags: &["--token", "vercel_bench", "--team", "team_bench", "--project", "prj_bench"],
        suffix: "",
        item: |index| {
            json!({ "name": format!("sbx{index:05}"), "tags": { OWNER_LABEL: OWNER }, "status": "running",
                    "createdAt": LONG_AGO_MS })
        },
    },
    Bench {
        vendor: HostedVendor::Sprites,
        key: "sprites",
        label: "Sprites",
        flags: &["--key", "sprites_bench"],
        suffix: "",
        item: |index| {
            json!({ "name": format!("sbx{index:05}"), "labels": [format!("{OWNER_LABEL}={OWNER}")], "status": "running",
                    "createdAt": LONG_AGO })
        },
    },
    Bench {
        vendor: HostedVendor::Runloop,
        key: "runloop",
        label: "Runloop",
        flags: &["--key", "runloop_bench"],
        suffix: "",
        item: |index| {
            json!({ "id": format!("dbx_{index:05}"), "metadata": { OWNER_LABEL: OWNER }, "status": "running",
                    "createTimeMs": LONG_AGO_MS })
        },
    },
    Bench {
        vendor: HostedVendor::Blaxel,
        key: "blaxel",
        label: "Blaxel",
        flags: &["--key", "bl_bench", "--workspace", "ws-bench"],
        suffix: "/v0",
        item: |index| {
            json!({ "name": format!("sbx{index:05}"), "labels": { OWNER_LABEL: OWNER }, "status": "DEPLOYED",
                    "createdAt": LONG_AGO })
        },
    },
];

/// `field` of /proc/self/status (`VmHWM`, `VmRSS`) in MiB.
fn status_mib(field: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn flag(flags: &[&'static str], name: &str) -> Option<String> {
    let at = flags.iter().position(|flag| *flag == name)?;
    flags.get(at + 1).map(|value| (*value).to_owned())
}

/// One vendor's pass, in this (child) process; prints its line.
async fn run(bench: &Bench) {
    let script = format!("{}/../tests/fakes/{}.mjs", env!("CARGO_MANIFEST_DIR"), bench.key);
    let mut fake = Command::new("node")
        .arg(&script)
        .args(bench.flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("hosted_bench needs `node` on PATH for the {} fake: {error}", bench.label));
    let mut line = String::new();
    BufReader::new(fake.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = serde_json::from_str::<Value>(&line).unwrap()["url"].as_str().unwrap().to_owned();

    let http = reqwest::Client::new();
    let post = |route: &str, body: Value| http.post(format!("{url}/_fake/{route}")).body(body.to_string()).send();
    let sandboxes: Vec<Value> = (0..SANDBOXES).map(bench.item).collect();
    let seeded = post("sandboxes", Value::Array(sandboxes)).await.expect("seed the fake");
    assert!(seeded.status().is_success(), "{} seed: {}", bench.label, seeded.text().await.unwrap_or_default());
    post("faults", json!({ "latencyMs": LATENCY_MS })).await.expect("set the latency");

    let page = PAGE.min(bench.vendor.max_page_size());
    let mut settings = HostedSettings::defaults(bench.vendor);
    settings.api_key = flag(bench.flags, "--key").or_else(|| flag(bench.flags, "--token"));
    settings.api_url = Some(format!("{url}{}", bench.suffix));
    settings.team_id = flag(bench.flags, "--team");
    settings.project_id = flag(bench.flags, "--project");
    settings.workspace = flag(bench.flags, "--workspace");
    settings.page_size = page;
    let provider = build_hosted(bench.vendor, settings).unwrap();
    let store = InMemorySandboxInstanceStore::with_ledger();
    let mut options = ReconcileOptions::new(vec![&*provider as &dyn SandboxProvider], &store);
    options.concurrency = CONCURRENCY;
    options.orphan_grace = Duration::from_secs(60);
    let rss_before = status_mib("VmRSS:");
    let started = Instant::now();
    let report = reconcile(options).await.expect("the pass");
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    let rss_after = status_mib("VmRSS:");
    let pages = SANDBOXES.div_ceil(page as usize) as f64;
    let ideal = pages * LATENCY_MS as f64 + SANDBOXES as f64 * LATENCY_MS as f64 / CONCURRENCY as f64;
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.destroyed, SANDBOXES as u64, "{}: {orphans:?}", bench.label);
    let capped = if page < PAGE { format!(" ({} serves at most {page})", bench.label) } else { String::new() };
    println!(
        "  reconcile  {:<7} fake {SANDBOXES} sandboxes, pages of {page}{capped}, {LATENCY_MS} ms per request, at {CONCURRENCY}: \
         {wall:>7.1} ms   {:.3}× ideal ({ideal:.1} ms; target ≤ 1.3×){}; peak RSS {:.1} MiB (RSS {:.1} → {:.1} MiB over the pass)",
        bench.label,
        wall / ideal,
        if wall / ideal > 1.3 { "  ABOVE TARGET" } else { "" },
        status_mib("VmHWM:").unwrap_or(f64::NAN),
        rss_before.unwrap_or(f64::NAN),
        rss_after.unwrap_or(f64::NAN),
    );
    drop(fake.stdin.take());
    let _ = fake.kill();
    let _ = fake.wait();
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|arg| arg == "--vendor") {
        let key = args.get(at + 1).expect("--vendor <key>");
        let bench = BENCHES.iter().find(|bench| bench.key == key).unwrap_or_else(|| panic!("no vendor {key}"));
        run(bench).await;
        return;
    }
    // Each vendor in its own process: a fresh heap, so VmHWM is that pass's peak.
    let me = std::env::current_exe().expect("this example's path");
    let mut failed = Vec::new();
    for bench in &BENCHES {
        let status = Command::new(&me).args(["--vendor", bench.key]).status().expect("run a vendor's pass");
        if !status.success() {
            failed.push(bench.label);
        }
    }
    assert!(failed.is_empty(), "hosted_bench failed for {failed:?}");
}
