//! `make bench`: `reconcile` over 10,000 listed sandboxes for every hosted
//! vendor entry (E2B, Daytona, Vercel, Sprites, Runloop, Blaxel, Modal,
//! Kubernetes, Upstash Box, Railway, boxd), each on its local fake
//! (tests/fakes/<vendor>.mjs under node; the gRPC fakes, modal_fake.py and
//! boxd_fake.py, under `SANDBOX_RECLAIM_FAKE_PYTHON`, default `.venv`'s
//! python; Modal and boxd also on an in-process one, below): pages of 100 (or the vendor's largest page, when smaller; Modal's
//! page is the server's, 100 on the fake; Upstash Box and boxd do not page:
//! one answer holds all 10,000), 20 ms per request, destroys 20 ms,
//! concurrency 64. Prints one line per vendor: the wall time against the
//! ideal (its requests in sequence × 20 ms + 10,000 × 20 ms / 64) and the
//! pass's peak memory.
//!
//! Kubernetes runs against HTTPS with the token kubeconfig its fake writes
//! (SandboxClaims, each with its Sandbox and Pod, deleted in the foreground).
//! Railway sandboxes carry no labels, so only the store's registry can name
//! them: the 10,000 are registered (each record written, then deleted, as a
//! destroy a TanStack provider swallowed leaves them) and the pass runs with
//! `sweep_unlabelled`, listing the environment. That is how a Railway user's
//! sweep reclaims 10,000 in one pass: the default (no `sweep_unlabelled`)
//! lists the whole environment too (Railway's owner filter is client-side)
//! and then reads registered ids by get, at most 1,000 candidates a pass.
//!
//! Modal and boxd have two rows each. Their Python fakes are the proven
//! ones, but their rows are fake-bound: for Modal, one core of pure-Python
//! HTTP/2 (grpclib) cannot serve the calls a second the ideal needs; boxd's
//! (grpc.aio behind a one-port Python proxy) spends four to five times our
//! side's CPU on the pass, more than a core at the ideal's pace
//! (docs/performance.md). Each vendor's second row runs the same pass
//! against an in-process tonic fake (`modal_grpc_fake.rs`,
//! `boxd_grpc_fake.rs`, on a thread of its own), which measures our side.
//! Its peak RSS includes that fake's state.
//!
//! Each vendor runs in a child process of this example (`hosted_bench
//! --vendor <key>`), so each line's peak RSS (VmHWM) is that vendor's pass
//! alone, not the high-water mark of the vendors before it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod boxd_grpc_fake;
mod modal_grpc_fake;

use sandbox_reclaim::options::provider::HostedSettings;
use sandbox_reclaim::providers::build_hosted;
use sandbox_reclaim::providers::hosted::upstash_box::UPSTASH_BOX_OWNER_LABEL_PREFIX;
use sandbox_reclaim::providers::hosted::{blaxel, boxd, kubernetes, modal, railway, vercel};
use sandbox_reclaim::providers::HostedVendor;
use sandbox_reclaim::{
    reconcile, InMemorySandboxInstanceStore, ReconcileOptions, SandboxInstanceRecord, SandboxInstanceStore,
    SandboxProvider,
};
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
    /// tests/fakes/<script> under `SANDBOX_RECLAIM_FAKE_PYTHON`.
    Python(&'static str),
    /// The vendor's tonic fake (`modal_grpc_fake`, `boxd_grpc_fake`), in this process.
    Tonic,
}

/// How a vendor's listing reads the 10,000.
#[derive(PartialEq)]
enum Listing {
    /// Pages of [`PAGE`], or the vendor's largest page when smaller.
    Pages,
    /// Pages the server sizes (Modal: [`PAGE`] on the fakes).
    ServerPages,
    /// One answer, no paging (Upstash Box, boxd).
    OneAnswer,
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
    /// The control route the seed is posted to (`/_fake/<route>`).
    seed_route: &'static str,
    /// The field of the fake's first line the client's `api_url` is made
    /// from (`url`; Railway's GraphQL `endpoint`); `None`: none (Kubernetes
    /// reads its server from the kubeconfig).
    url_field: Option<&'static str>,
    /// What the client's `api_url` adds to that field.
    suffix: &'static str,
    /// How the listing reads the sandboxes.
    listing: Listing,
    /// The vendor's own settings, from the fake's first line (a kubeconfig,
    /// an environment, an org, `sweep_unlabelled`).
    configure: fn(&mut HostedSettings, &Value),
    /// Whether the store's registry names the sandboxes (each record
    /// written, then deleted, before the pass): the only way a sweep finds
    /// a sandbox without labels (Railway).
    registered: bool,
    /// Seed item `index`: ours, created long ago, in a live status that bills.
    item: fn(usize) -> Value,
    /// Requests the listing makes beyond one per page (Modal: its auth
    /// token, and the empty page that ends a listing).
    extra_requests: usize,
}

/// The Railway environment the sandboxes live in.
const RAILWAY_ENVIRONMENT: &str = "env-bench";
/// The boxd org the machines are in (the caller is a member).
const BOXD_ORG: &str = "acme";

/// Modal's fake puts sandboxes seeded without an app in this one.
const MODAL_APP: &str = "ap-SandboxReclaimFakeApp0";

/// A V2 Modal id (`sb-` and a ULID minted at 2026-01-01), as Modal mints them.
fn modal_id(index: usize) -> String {
    const CROCKFORD: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let time: String =
        (0..10).rev().map(|digit| CROCKFORD[((LONG_AGO_MS >> (digit * 5)) & 31) as usize] as char).collect();
    format!("sb-{time}{index:016}")
}

const BENCHES: [Bench; 13] = [
    Bench {
        vendor: HostedVendor::E2b,
        key: "e2b",
        label: "E2B",
        fake: Fake::Node,
        fake_note: "",
        flags: &["--key", "e2b_bench"],
        seed_route: "sandboxes",
        url_field: Some("url"),
        suffix: "",
        listing: Listing::Pages,
        configure: |_, _| {},
        registered: false,
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
        seed_route: "sandboxes",
        url_field: Some("url"),
        suffix: "",
        listing: Listing::Pages,
        configure: |_, _| {},
        registered: false,
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
        seed_route: "sandboxes",
        url_field: Some("url"),
        suffix: "",
        listing: Listing::Pages,
        configure: |_, _| {},
        registered: false,
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
        seed_route: "sandboxes",
        url_field: Some("url"),
        suffix: "",
        listing: Listing::Pages,
        configure: |_, _| {},
        registered: false,
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
        seed_route: "sandboxes",
        url_field: Some("url"),
        suffix: "",
        listing: Listing::Pages,
        configure: |_, _| {},
        registered: false,
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
        seed_route: "sandboxes",
        url_field: Some("url"),
        suffix: "/v0",
        listing: Listing::Pages,
        configure: |_, _| {},
        registered: false,
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
        fake: Fake::Python("modal_fake.py"),
        fake_note: " (Python gRPC, fake-bound)",
        flags: &["--token-id", "ak-bench", "--token-secret", "as-bench"],
        seed_route: "sandboxes",
        url_field: Some("url"),
        suffix: "",
        listing: Listing::ServerPages,
        configure: |_, _| {},
        registered: false,
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
        seed_route: "sandboxes",
        url_field: Some("url"),
        suffix: "",
        listing: Listing::ServerPages,
        configure: |_, _| {},
        registered: false,
        item: |index| {
            // Modal pages by creation time: each sandbox a second apart.
            json!({ "id": modal_id(index), "appId": MODAL_APP, "tags": { OWNER_LABEL: OWNER },
                    "createdAt": LONG_AGO_MS / 1000 + index as u64 })
        },
        extra_requests: 2,
    },
    Bench {
        vendor: HostedVendor::Kubernetes,
        key: "kubernetes",
        label: "Kubernetes",
        fake: Fake::Node,
        fake_note: " (HTTPS)",
        flags: &[],
        seed_route: "sandboxes",
        url_field: None,
        suffix: "",
        listing: Listing::Pages,
        // The kubeconfig the fake writes (a bearer token, its CA): the server is its.
        configure: |settings, started| {
            settings.set_option(kubernetes::KUBECONFIG, started["kubeconfigToken"].as_str().map(str::to_owned))
        },
        registered: false,
        // A SandboxClaim; the fake gives each its Sandbox and Pod, deleted with it.
        item: |index| {
            json!({ "kind": "SandboxClaim", "namespace": "default", "name": format!("claim-{index:05}"),
                    "labels": { OWNER_LABEL: OWNER }, "creationTimestamp": LONG_AGO })
        },
        extra_requests: 0,
    },
    Bench {
        vendor: HostedVendor::UpstashBox,
        key: "upstash-box",
        label: "Upstash Box",
        fake: Fake::Node,
        fake_note: "",
        flags: &["--key", "box_bench"],
        seed_route: "boxes",
        url_field: Some("url"),
        suffix: "",
        listing: Listing::OneAnswer,
        configure: |_, _| {},
        registered: false,
        item: |index| {
            json!({ "id": format!("box_{index:05}"), "labels": [format!("{UPSTASH_BOX_OWNER_LABEL_PREFIX}{OWNER}")],
                    "status": "running", "created_at": LONG_AGO_MS / 1000 })
        },
        extra_requests: 0,
    },
    Bench {
        vendor: HostedVendor::Railway,
        key: "railway",
        label: "Railway",
        fake: Fake::Node,
        fake_note: " (GraphQL)",
        flags: &["--token", "railway_bench", "--environment", RAILWAY_ENVIRONMENT],
        seed_route: "sandboxes",
        url_field: Some("endpoint"),
        suffix: "",
        listing: Listing::Pages,
        // No labels: the registry names them, and the listing takes the whole environment.
        configure: |settings, _| {
            settings.set_option(railway::ENVIRONMENT_ID, Some(RAILWAY_ENVIRONMENT.to_owned()));
            settings.sweep_unlabelled = true;
        },
        registered: true,
        item: |index| json!({ "id": format!("sb{index:05}"), "status": "RUNNING", "createdAt": LONG_AGO }),
        extra_requests: 0,
    },
    Bench {
        vendor: HostedVendor::Boxd,
        key: "boxd",
        label: "boxd",
        fake: Fake::Python("boxd_fake.py"),
        // grpc.aio spends ~0.5 ms of CPU a call, more than a core at the ideal's pace.
        fake_note: " (Python gRPC, fake-bound)",
        // A session token (`BOXD_TOKEN`'s kind), sent as is: every call is gRPC.
        flags: &["--token", "boxd_bench", "--orgs", BOXD_ORG],
        seed_route: "vms",
        url_field: Some("url"),
        suffix: "",
        listing: Listing::OneAnswer,
        configure: |settings, _| settings.set_option(boxd::ORG, Some(BOXD_ORG.to_owned())),
        registered: false,
        item: |index| {
            json!({ "id": format!("0c0ffee0-0000-4000-8000-{index:012}"), "labels": { OWNER_LABEL: OWNER },
                    "org": BOXD_ORG, "created_at": LONG_AGO_MS / 1000 })
        },
        extra_requests: 0,
    },
    Bench {
        vendor: HostedVendor::Boxd,
        key: "boxd-tonic",
        label: "boxd",
        fake: Fake::Tonic,
        fake_note: " (in-process tonic)",
        // A session token (`BOXD_TOKEN`'s kind), sent as is: every call is gRPC.
        flags: &["--token", "boxd_bench", "--orgs", BOXD_ORG],
        seed_route: "vms",
        url_field: Some("url"),
        suffix: "",
        listing: Listing::OneAnswer,
        configure: |settings, _| settings.set_option(boxd::ORG, Some(BOXD_ORG.to_owned())),
        registered: false,
        item: |index| {
            json!({ "id": format!("0c0ffee0-0000-4000-8000-{index:012}"), "labels": { OWNER_LABEL: OWNER },
                    "org": BOXD_ORG, "created_at": LONG_AGO_MS / 1000 })
        },
        extra_requests: 0,
    },
];

/// `field` of /proc/self/status (`VmHWM`, `VmRSS`) in MiB.
fn status_mib(field: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// A record of `provider`'s sandbox `id` under `key`.
fn registered_record(key: &str, provider: &str, id: &str) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: key.to_owned(),
        provider: provider.to_owned(),
        provider_sandbox_id: id.to_owned(),
        latest_snapshot_id: None,
        thread_id: key.split(':').next().unwrap_or(key).to_owned(),
        latest_run_id: None,
        updated_at: 1,
    }
}

fn flag(flags: &[&'static str], name: &str) -> Option<String> {
    let at = flags.iter().position(|flag| *flag == name)?;
    flags.get(at + 1).map(|value| (*value).to_owned())
}

/// A started fake: a child process, or an in-process one.
enum Running {
    Process(Child),
    Modal(modal_grpc_fake::ModalGrpcFake),
    Boxd(boxd_grpc_fake::BoxdGrpcFake),
}

/// Starts `bench`'s fake, seeded with the sandboxes, 20 ms per request: the
/// line it printed when it started (`url`, a kubeconfig, ...), and the fake.
async fn start_fake(bench: &Bench, sandboxes: Vec<Value>) -> (Value, Running) {
    if bench.fake == Fake::Tonic {
        let credential = |name| flag(bench.flags, name).expect("the bench's credential");
        let latency = Duration::from_millis(LATENCY_MS);
        if bench.vendor == HostedVendor::Boxd {
            let orgs = flag(bench.flags, "--orgs").unwrap_or_default();
            let orgs = orgs.split(',').filter(|org| !org.is_empty()).map(str::to_owned).collect();
            let config = boxd_grpc_fake::Config { token: credential("--token"), orgs, latency };
            let fake = boxd_grpc_fake::start(config, &sandboxes);
            return (json!({ "url": fake.url }), Running::Boxd(fake));
        }
        let config = modal_grpc_fake::Config {
            token_id: credential("--token-id"),
            token_secret: credential("--token-secret"),
            latency,
            page_size: PAGE as usize,
        };
        let fake = modal_grpc_fake::start(config, &sandboxes);
        return (json!({ "url": fake.url }), Running::Modal(fake));
    }
    let fakes = format!("{}/../tests/fakes", env!("CARGO_MANIFEST_DIR"));
    let (program, script) = match bench.fake {
        Fake::Python(script) => {
            let python = std::env::var("SANDBOX_RECLAIM_FAKE_PYTHON")
                .unwrap_or_else(|_| format!("{}/../.venv/bin/python", env!("CARGO_MANIFEST_DIR")));
            (python, format!("{fakes}/{script}"))
        }
        _ => ("node".to_owned(), format!("{fakes}/{}.mjs", bench.key)),
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
    let url = started["url"].as_str().unwrap();
    // The gRPC fakes serve their control routes on a port of their own.
    let control = started["control"].as_str().unwrap_or(url).to_owned();

    // The Kubernetes fake is HTTPS under a CA of its own (its control routes too).
    let http = reqwest::Client::builder().danger_accept_invalid_certs(true).build().unwrap();
    let post = |route: &str, body: Value| http.post(format!("{control}/_fake/{route}")).body(body.to_string()).send();
    let seeded = post(bench.seed_route, Value::Array(sandboxes)).await.expect("seed the fake");
    assert!(seeded.status().is_success(), "{} seed: {}", bench.label, seeded.text().await.unwrap_or_default());
    let faults = if bench.vendor == HostedVendor::Modal {
        json!({ "latencyMs": LATENCY_MS, "pageSize": PAGE })
    } else {
        json!({ "latencyMs": LATENCY_MS })
    };
    let set = post("faults", faults).await.expect("set the latency");
    assert!(set.status().is_success(), "{} faults: {}", bench.label, set.text().await.unwrap_or_default());
    (started, Running::Process(fake))
}

/// One vendor's pass, in this (child) process; prints its line.
async fn run(bench: &Bench) {
    let sandboxes: Vec<Value> = (0..SANDBOXES).map(bench.item).collect();
    // A registered row's seed items are listed under their `id`.
    let ids: Vec<String> = match bench.registered {
        true => sandboxes.iter().map(|sandbox| sandbox["id"].as_str().unwrap().to_owned()).collect(),
        false => Vec::new(),
    };
    let (started, fake) = start_fake(bench, sandboxes).await;

    // Modal's listing has no page size (the server's: 100 on the fake);
    // Upstash Box and boxd answer every match at once.
    let page = match bench.listing {
        Listing::Pages => Some(PAGE.min(bench.vendor.max_page_size())),
        Listing::ServerPages => Some(PAGE),
        Listing::OneAnswer => None,
    };
    let mut settings = HostedSettings::defaults(bench.vendor);
    settings.api_key = ["--key", "--token", "--api-key"].iter().find_map(|name| flag(bench.flags, name));
    settings.api_url = bench.url_field.map(|field| format!("{}{}", started[field].as_str().unwrap(), bench.suffix));
    settings.set_option(vercel::TEAM_ID, flag(bench.flags, "--team"));
    settings.set_option(vercel::PROJECT_ID, flag(bench.flags, "--project"));
    settings.set_option(blaxel::WORKSPACE, flag(bench.flags, "--workspace"));
    settings.set_option(modal::TOKEN_ID, flag(bench.flags, "--token-id"));
    settings.set_option(modal::TOKEN_SECRET, flag(bench.flags, "--token-secret"));
    if bench.vendor == HostedVendor::Modal {
        settings.set_option(modal::APP_ID, Some(MODAL_APP.to_owned()));
    }
    // Each vendor reads only its own options: the others' stay unread.
    settings.options.retain(|key, _| bench.vendor.spec().own_options().any(|option| option.name.node == *key));
    if let (Listing::Pages, Some(page)) = (&bench.listing, page) {
        settings.page_size = page;
    }
    (bench.configure)(&mut settings, &started);
    let provider = build_hosted(bench.vendor, settings).unwrap();
    let store = InMemorySandboxInstanceStore::with_ledger();
    if bench.registered {
        // Each record written, then deleted: the registry names the sandbox.
        for (index, id) in ids.iter().enumerate() {
            let key = format!("thread-{index}:sandbox");
            store.upsert(&registered_record(&key, provider.name(), id)).await.expect("write a record");
            store.delete(&key).await.expect("delete the record");
        }
    }
    let mut options = ReconcileOptions::new(vec![&*provider as &dyn SandboxProvider], &store);
    options.concurrency = CONCURRENCY;
    options.orphan_grace = Duration::from_secs(60);
    let rss_before = status_mib("VmRSS:");
    let started = Instant::now();
    let report = reconcile(options).await.expect("the pass");
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    let rss_after = status_mib("VmRSS:");
    let pages = (page.map_or(1, |page| SANDBOXES.div_ceil(page as usize)) + bench.extra_requests) as f64;
    let ideal = pages * LATENCY_MS as f64 + SANDBOXES as f64 * LATENCY_MS as f64 / CONCURRENCY as f64;
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.destroyed, SANDBOXES as u64, "{}: {orphans:?}", bench.label);
    let listing = match page {
        Some(page) if page < PAGE => format!("pages of {page} ({} serves at most {page})", bench.label),
        Some(page) => format!("pages of {page}"),
        None => "one answer (no paging)".to_owned(),
    };
    let registered = if bench.registered { ", registry-named, sweep_unlabelled" } else { "" };
    println!(
        "  reconcile  {:<11} fake{} {SANDBOXES} sandboxes{registered}, {listing}, {LATENCY_MS} ms per request, at {CONCURRENCY}: \
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
        Running::Modal(fake) => assert_eq!(fake.terminated(), SANDBOXES as u64, "the fake's count"),
        Running::Boxd(fake) => assert_eq!(fake.destroyed(), SANDBOXES as u64, "the fake's count"),
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
