//! `make bench`: `reconcile` over 10,000 listed sandboxes for every hosted
//! vendor entry (E2B, Daytona, Vercel, Sprites, Runloop, Blaxel, Modal), each
//! on its local fake (tests/fakes/<vendor>.mjs under node; Modal's gRPC fake,
//! modal_fake.py, under `SANDBOX_RECLAIM_FAKE_PYTHON`, default `.venv`'s
//! python): pages of 100 (or the vendor's largest page, when smaller; Modal's
//! page is the server's, 100 on the fake), 20 ms per request, destroys 20 ms,
//! concurrency 64. Prints one line per vendor: the wall time against the
//! ideal (its requests in sequence × 20 ms + 10,000 × 20 ms / 64) and the
//! pass's peak memory.
//!
//! Modal has two rows. The Python fake (grpclib) is the proven one, but one
//! core of pure-Python HTTP/2 cannot serve the calls a second the ideal
//! needs, so its row is fake-bound; the second row runs the same pass
//! against an in-process tonic fake (`modal_grpc_fake.rs`, on a thread of its
//! own), which measures our side. Its peak RSS includes that fake's state.
//!
//! Each vendor runs in a child process of this example (`hosted_bench
//! --vendor <key>`), so each line's peak RSS (VmHWM) is that vendor's pass
//! alone, not the high-water mark of the vendors before it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod modal_grpc_fake;

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

/// Which fake a row runs against.
#[derive(PartialEq)]
enum Fake {
    /// tests/fakes/<key>.mjs under node.
    Node,
    /// tests/fakes/modal_fake.py under `SANDBOX_RECLAIM_FAKE_PYTHON`.
    Python,
    /// `modal_grpc_fake`, in this process.
    Tonic,
}

/// One vendor's row: its fake, its credential flags and its seed format.
struct Bench {
    vendor: HostedVendor,
    key: &'static str,
    label: &'static str,
    fake: Fake,
    /// What the line says of the fake, after `fake`.
    fake_note: &'static str,
    /// The fake's command-line flags (credential, team, workspace).
    flags: &'static [&'static str],
    /// What the client's `api_url` adds to the fake's `url`.
    suffix: &'static str,
    /// Seed item `index`: ours, created long ago, in a live status that bills.
    item: fn(usize) -> Value,
    /// Requests the listing makes beyond one per page (Modal: its auth
    /// token, and the empty page that ends a listing).
    extra_requests: usize,
}

/// Modal's fake puts sandboxes seeded without an app in this one.
const MODAL_APP: &str = "ap-SandboxReclaimFakeApp0";

/// A V2 Modal id (`sb-` and a ULID minted at 2026-01-01), as Modal mints them.
fn modal_id(index: usize) -> String {
    const CROCKFORD: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let time: String =
        (0..10).rev().map(|digit| CROCKFORD[((LONG_AGO_MS >> (digit * 5)) & 31) as usize] as char).collect();
    format!("sb-{time}{index:016}")
}

const BENCHES: [Bench; 8] = [
    Bench {
        vendor: HostedVendor::E2b,
        key: "e2b",
        label: "E2B",
        fake: Fake::Node,
        fake_note: "",
        flags: &["--key", "e2b_bench"],
        suffix: "",
        item: |index| json!({ "sandboxID": format!("sbx{index:05}"), "startedAt": LONG_AGO, "metadata": { OWNER_LABEL: OWNER } }),
        extra_requests: 0,
    },
    Bench {
        vendor: HostedVendor::Daytona,
        key: "daytona",
        label: "Daytona",
        fake: Fake::Node,
        fake_note: "",
        flags: &["--key", "daytona_bench"],
        suffix: "",
        item: |index| {
            json!({ "id": format!("sbx{index:05}"), "labels": { OWNER_LABEL: OWNER }, "state": "started",
                    "createdAt": "2026-01-01T00:00:00.000Z" })
        },
        extra_requests: 0,
    },
    Bench {
        vendor: HostedVendor::Vercel,
        key: "vercel",
        label: "Vercel",
        fake: Fake::Node,
        fake_note: "",
        flags: &["--token", "vercel_bench", "--team", "team_bench", "--project", "prj_bench"],
        suffix: "",
        item: |index| {
            json!({ "name": format!("sbx{index:05}"), "tags": { OWNER_LABEL: OWNER }, "status": "running",
                    "createdAt": LONG_AGO_MS })
        },
        extra_requests: 0,
    },
    Bench {
        vendor: HostedVendor::Sprites,
        key: "sprites",
        label: "Sprites",
        fake: Fake::Node,
        fake_note: "",
        flags: &["--key", "sprites_bench"],
        suffix: "",
        item: |index| {
            json!({ "name": format!("sbx{index:05}"), "labels": [format!("{OWNER_LABEL}={OWNER}")], "status": "running",
                    "createdAt": LONG_AGO })
        },
        extra_requests: 0,
    },
    Bench {
        vendor: HostedVendor::Runloop,
        key: "runloop",
        label: "Runloop",
        fake: Fake::Node,
        fake_note: "",
        flags: &["--key", "runloop_bench"],
        suffix: "",
        item: |index| {
            json!({ "id": format!("dbx_{index:05}"), "metadata": { OWNER_LABEL: OWNER }, "status": "running",
                    "createTimeMs": LONG_AGO_MS })
        },
        extra_requests: 0,
    },
    Bench {
        vendor: HostedVendor::Blaxel,
        key: "blaxel",
        label: "Blaxel",
        fake: Fake::Node,
        fake_note: "",
        flags: &["--key", "bl_bench", "--workspace", "ws-bench"],
        suffix: "/v0",
        item: |index| {
            json!({ "name": format!("sbx{index:05}"), "labels": { OWNER_LABEL: OWNER }, "status": "DEPLOYED",
                    "createdAt": LONG_AGO })
        },
        extra_requests: 0,
    },
    Bench {
        vendor: HostedVendor::Modal,
        key: "modal",
        label: "Modal",
        fake: Fake::Python,
        fake_note: " (Python gRPC, fake-bound)",
        flags: &["--token-id", "ak-bench", "--token-secret", "as-bench"],
        suffix: "",
        item: |index| {
            // Modal pages by creation time: each sandbox a second apart.
            json!({ "id": modal_id(index), "appId": MODAL_APP, "tags": { OWNER_LABEL: OWNER },
                    "createdAt": LONG_AGO_MS / 1000 + index as u64 })
        },
        extra_requests: 2,
    },
    Bench {
        vendor: HostedVendor::Modal,
        key: "modal-tonic",
        label: "Modal",
        fake: Fake::Tonic,
        fake_note: " (in-process tonic)",
        flags: &["--token-id", "ak-bench", "--token-secret", "as-bench"],
        suffix: "",
        item: |index| {
            // Modal pages by creation time: each sandbox a second apart.
            json!({ "id": modal_id(index), "appId": MODAL_APP, "tags": { OWNER_LABEL: OWNER },
                    "createdAt": LONG_AGO_MS / 1000 + index as u64 })
        },
        extra_requests: 2,
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

/// A started fake: a child process, or the in-process one.
enum Running {
    Process(Child),
    InProcess(modal_grpc_fake::ModalGrpcFake),
}

/// Starts `bench`'s fake, seeded with the sandboxes, 20 ms per request: its
/// url, and the fake.
async fn start_fake(bench: &Bench, sandboxes: Vec<Value>) -> (String, Running) {
    if bench.fake == Fake::Tonic {
        let credential = |name| flag(bench.flags, name).expect("the bench's credential");
        let config = modal_grpc_fake::Config {
            token_id: credential("--token-id"),
            token_secret: credential("--token-secret"),
            latency: Duration::from_millis(LATENCY_MS),
            page_size: PAGE as usize,
        };
        let fake = modal_grpc_fake::start(config, &sandboxes);
        return (fake.url.clone(), Running::InProcess(fake));
    }
    let fakes = format!("{}/../tests/fakes", env!("CARGO_MANIFEST_DIR"));
    let (program, script) = if bench.fake == Fake::Python {
        let python = std::env::var("SANDBOX_RECLAIM_FAKE_PYTHON")
            .unwrap_or_else(|_| format!("{}/../.venv/bin/python", env!("CARGO_MANIFEST_DIR")));
        (python, format!("{fakes}/modal_fake.py"))
    } else {
        ("node".to_owned(), format!("{fakes}/{}.mjs", bench.key))
    };
    let mut fake = Command::new(&program)
        .arg(&script)
        .args(bench.flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("hosted_bench needs {program} for the {} fake: {error}", bench.label));
    let mut line = String::new();
    BufReader::new(fake.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let started: Value = serde_json::from_str(&line)
        .unwrap_or_else(|_| panic!("the {} fake did not start under {program}: {line:?}", bench.label));
    let url = started["url"].as_str().unwrap().to_owned();
    // The gRPC fake serves its control routes on a port of their own.
    let control = started["control"].as_str().unwrap_or(&url).to_owned();

    let http = reqwest::Client::new();
    let post = |route: &str, body: Value| http.post(format!("{control}/_fake/{route}")).body(body.to_string()).send();
    let seeded = post("sandboxes", Value::Array(sandboxes)).await.expect("seed the fake");
    assert!(seeded.status().is_success(), "{} seed: {}", bench.label, seeded.text().await.unwrap_or_default());
    let faults = if bench.vendor == HostedVendor::Modal {
        json!({ "latencyMs": LATENCY_MS, "pageSize": PAGE })
    } else {
        json!({ "latencyMs": LATENCY_MS })
    };
    post("faults", faults).await.expect("set the latency");
    (url, Running::Process(fake))
}

/// One vendor's pass, in this (child) process; prints its line.
async fn run(bench: &Bench) {
    let sandboxes: Vec<Value> = (0..SANDBOXES).map(bench.item).collect();
    let (url, fake) = start_fake(bench, sandboxes).await;

    // Modal's listing has no page size (the server's: 100 on the fake).
    let page = if bench.vendor == HostedVendor::Modal { PAGE } else { PAGE.min(bench.vendor.max_page_size()) };
    let mut settings = HostedSettings::defaults(bench.vendor);
    settings.api_key = flag(bench.flags, "--key").or_else(|| flag(bench.flags, "--token"));
    settings.api_url = Some(format!("{url}{}", bench.suffix));
    settings.team_id = flag(bench.flags, "--team");
    settings.project_id = flag(bench.flags, "--project");
    settings.workspace = flag(bench.flags, "--workspace");
    settings.token_id = flag(bench.flags, "--token-id");
    settings.token_secret = flag(bench.flags, "--token-secret");
    if bench.vendor == HostedVendor::Modal {
        settings.app_id = Some(MODAL_APP.to_owned());
    } else {
        settings.page_size = page;
    }
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
    let pages = (SANDBOXES.div_ceil(page as usize) + bench.extra_requests) as f64;
    let ideal = pages * LATENCY_MS as f64 + SANDBOXES as f64 * LATENCY_MS as f64 / CONCURRENCY as f64;
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.destroyed, SANDBOXES as u64, "{}: {orphans:?}", bench.label);
    let capped = if page < PAGE { format!(" ({} serves at most {page})", bench.label) } else { String::new() };
    println!(
        "  reconcile  {:<7} fake{} {SANDBOXES} sandboxes, pages of {page}{capped}, {LATENCY_MS} ms per request, at {CONCURRENCY}: \
         {wall:>7.1} ms   {:.3}× ideal ({ideal:.1} ms; target ≤ 1.3×){}; peak RSS {:.1} MiB (RSS {:.1} → {:.1} MiB over the pass)",
        bench.label,
        bench.fake_note,
        wall / ideal,
        if wall / ideal > 1.3 { "  ABOVE TARGET" } else { "" },
        status_mib("VmHWM:").unwrap_or(f64::NAN),
        rss_before.unwrap_or(f64::NAN),
        rss_after.unwrap_or(f64::NAN),
    );
    match fake {
        Running::Process(mut fake) => {
            drop(fake.stdin.take());
            let _ = fake.kill();
            let _ = fake.wait();
        }
        Running::InProcess(fake) => assert_eq!(fake.terminated(), SANDBOXES as u64, "the fake's count"),
    }
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
