//! Many hosts, one PostgreSQL: four OS processes run `reconcile` at once on
//! one schema holding 300 due leaks and 100 idle records, with a provider
//! that lists 200 unreferenced old sandboxes besides those (and 50 in use).
//! Every leak, idle and orphan sandbox must be destroyed exactly once, and
//! nothing else. The hosts are this test binary re-run on its ignored
//! `multihost_child`; their provider destroys by appending `<id>\n` to a
//! shared file (O_APPEND) and lists a shared file minus what was destroyed.
//!
//! Needs `SANDBOX_RECLAIM_PG_URL`; without it the test FAILS (never skips).
#![cfg(all(feature = "sqlite", feature = "postgres"))]

mod store_support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use sandbox_reclaim::runtime::clock::now_millis;
use sandbox_reclaim::{
    reconcile, FleetStore, LeakLedger, LeakReason, ListedSandbox, NewLeak, PostgresSandboxInstanceStore, ProviderError,
    ReconcileOptions, ReconcileReport, SandboxInstanceRecord, SandboxInstanceStore, SandboxProvider, SweepStatus,
    DEFAULT_OWNER,
};
use store_support::{drop_schema, pg_options, pg_url, unique};

const SCHEMA_VAR: &str = "FLEET_MULTIHOST_SCHEMA";
const DIR_VAR: &str = "FLEET_MULTIHOST_DIR";
const HOST_VAR: &str = "FLEET_MULTIHOST_HOST";

const PROVIDER: &str = "fleet";
const HOSTS: usize = 4;
const LEAKS: usize = 300;
const IDLE: usize = 100;
const ORPHANS: usize = 200;
/// Records in use: listed and referenced, never to be destroyed.
const LIVE: usize = 50;
const HOUR: u64 = 3_600_000;
/// Ledger entries claimed (and stale records read) per pass.
const LIMIT: usize = 40;
/// Passes a host runs at most; it stops earlier once a pass finds nothing.
const MAX_PASSES: usize = 30;

/// The shared files of one run.
struct Shared {
    dir: PathBuf,
}

impl Shared {
    fn sandboxes(&self) -> PathBuf {
        self.dir.join("sandboxes")
    }
    fn destroyed(&self) -> PathBuf {
        self.dir.join("destroyed")
    }
    fn go(&self) -> PathBuf {
        self.dir.join("go")
    }
    fn ready(&self, host: &str) -> PathBuf {
        self.dir.join(format!("ready-{host}"))
    }
    fn report(&self, host: &str) -> PathBuf {
        self.dir.join(format!("report-{host}.json"))
    }
    fn stderr(&self, host: &str) -> PathBuf {
        self.dir.join(format!("stderr-{host}"))
    }
}

/// Destroys by appending `<id>\n` to the shared file after 5–20 ms; lists
/// the shared sandbox set minus every id appended so far.
struct FileProvider {
    shared: Shared,
}

fn destroy_delay(id: &str) -> Duration {
    let hash =
        id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3));
    Duration::from_millis(5 + hash % 16)
}

fn read_lines(path: &Path) -> Vec<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => text.lines().map(str::to_owned).collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(error) => panic!("read {}: {error}", path.display()),
    }
}

#[async_trait]
impl SandboxProvider for FileProvider {
    fn name(&self) -> &str {
        PROVIDER
    }

    async fn destroy(&self, provider_sandbox_id: &str) -> Result<(), ProviderError> {
        tokio::time::sleep(destroy_delay(provider_sandbox_id)).await;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(self.shared.destroyed())
            .map_err(ProviderError::backend)?;
        // One write(2) on an O_APPEND file: lines never interleave.
        file.write_all(format!("{provider_sandbox_id}\n").as_bytes()).map_err(ProviderError::backend)?;
        Ok(())
    }

    fn can_list(&self) -> bool {
        true
    }

    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        let destroyed: BTreeSet<String> = read_lines(&self.shared.destroyed()).into_iter().collect();
        Ok(read_lines(&self.shared.sandboxes())
            .into_iter()
            .filter_map(|line| {
                let (id, created_at) = line.split_once(' ')?;
                (!destroyed.contains(id)).then(|| ListedSandbox {
                    id: id.to_owned(),
                    created_at: created_at.parse().ok(),
                    owner: Some(DEFAULT_OWNER.to_owned()),
                    key: None,
                    deleting: false,
                })
            })
            .collect())
    }
}

fn pass_options<'a>(
    provider: &'a FileProvider,
    store: &'a PostgresSandboxInstanceStore,
    host: &str,
) -> ReconcileOptions<'a> {
    ReconcileOptions {
        max_idle: Some(Duration::from_secs(3600)),
        orphan_grace: Duration::from_secs(60),
        host: Some(host.to_owned()),
        // Small claims, so the hosts share the ledger over many passes.
        limit: LIMIT,
        ..ReconcileOptions::new(vec![provider], store)
    }
}

/// One host: connects, says it is ready, waits for the start signal, runs
/// passes until one finds nothing, and writes their reports.
#[test]
#[ignore = "child process of fleet_multihost, run by it"]
fn multihost_child() {
    let schema = std::env::var(SCHEMA_VAR).expect("run by four_hosts_reconcile_one_postgres_schema only");
    let shared = Shared { dir: std::env::var(DIR_VAR).unwrap().into() };
    let host = std::env::var(HOST_VAR).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let store = PostgresSandboxInstanceStore::connect(&pg_url(), pg_options(&schema)).await.unwrap();
        std::fs::write(shared.ready(&host), b"").unwrap();
        let waiting = Instant::now();
        while !shared.go().exists() {
            assert!(waiting.elapsed() < Duration::from_secs(30), "no start signal");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let provider = FileProvider { shared: Shared { dir: shared.dir.clone() } };
        let mut reports = Vec::new();
        while reports.len() < MAX_PASSES {
            let report = reconcile(pass_options(&provider, &store, &host)).await.unwrap();
            let quiet = report.actions.is_empty();
            reports.push(report);
            if quiet {
                break;
            }
        }
        std::fs::write(shared.report(&host), serde_json::to_vec(&reports).unwrap()).unwrap();
        store.close().await;
    });
}

/// Kills the children still running, drops the schema and removes the
/// shared files, also when the test fails.
struct Cleanup {
    schema: String,
    dir: PathBuf,
    children: Vec<Child>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let schema = self.schema.clone();
        // Its own thread and runtime: drop may run inside the test's runtime.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(drop_schema(&schema));
        })
        .join();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn record(key: &str, id: &str, updated_at: u64) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: key.to_owned(),
        provider: PROVIDER.to_owned(),
        provider_sandbox_id: id.to_owned(),
        latest_snapshot_id: None,
        thread_id: format!("thread-{key}"),
        latest_run_id: None,
        updated_at,
    }
}

fn child_stderr(shared: &Shared, host: &str) -> String {
    std::fs::read_to_string(shared.stderr(host)).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_hosts_reconcile_one_postgres_schema_destroying_each_sandbox_once() {
    let started = Instant::now();
    let schema = unique("fleet_multihost");
    let dir = std::env::temp_dir().join(format!("sr-fleet-multihost-{schema}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cleanup = Cleanup { schema: schema.clone(), dir: dir.clone(), children: Vec::new() };
    let shared = Shared { dir: dir.clone() };

    // Seed: the schema (migrated once, before any host connects), leaks,
    // idle and live records, and the provider's listing of everything.
    let store =
        PostgresSandboxInstanceStore::connect(&pg_url(), pg_options(&schema)).await.expect("connect to PostgreSQL");
    let now = now_millis();
    let mut listing = String::new();
    let mut expected: BTreeMap<String, &str> = BTreeMap::new();
    for index in 0..LEAKS {
        let id = format!("leak-{index:03}");
        let leak = NewLeak {
            key: format!("k-leak-{index:03}"),
            provider: PROVIDER.to_owned(),
            provider_sandbox_id: id.clone(),
            run_id: format!("run-{index}"),
            error_message: "engine unreachable".to_owned(),
            failed_at: now - HOUR,
        };
        store.record_leak(leak, LeakReason::DestroyFailed, now - HOUR).await.unwrap();
        expected.insert(id, "leak-retry");
    }
    for index in 0..IDLE {
        let id = format!("idle-{index:03}");
        store.upsert(&record(&format!("k-idle-{index:03}"), &id, now - 2 * HOUR)).await.unwrap();
        expected.insert(id, "idle");
    }
    for index in 0..ORPHANS {
        expected.insert(format!("orphan-{index:03}"), "orphan");
    }
    let live: Vec<String> = (0..LIVE).map(|index| format!("live-{index:03}")).collect();
    for (index, id) in live.iter().enumerate() {
        store.upsert(&record(&format!("k-live-{index:03}"), id, now)).await.unwrap();
    }
    for id in expected.keys().chain(&live) {
        listing.push_str(&format!("{id} {}\n", now - 3 * HOUR));
    }
    std::fs::write(shared.sandboxes(), listing).unwrap();
    eprintln!("seeded in {:?}", started.elapsed());

    // Four hosts, started together.
    let hosts: Vec<String> = (0..HOSTS).map(|index| format!("host-{index}")).collect();
    for host in &hosts {
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "multihost_child", "--nocapture", "--test-threads=1"])
            .env(SCHEMA_VAR, &schema)
            .env(DIR_VAR, &dir)
            .env(HOST_VAR, host)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(shared.stderr(host)).unwrap())
            .spawn()
            .unwrap();
        cleanup.children.push(child);
    }
    let waiting = Instant::now();
    while !hosts.iter().all(|host| shared.ready(host).exists()) {
        for (child, host) in cleanup.children.iter_mut().zip(&hosts) {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("{host} exited ({status}) before it was ready:\n{}", child_stderr(&shared, host));
            }
        }
        assert!(waiting.elapsed() < Duration::from_secs(30), "hosts not ready after 30 s");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    std::fs::write(shared.go(), b"").unwrap();
    let passes_started = Instant::now();
    for (child, host) in cleanup.children.iter_mut().zip(&hosts) {
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(status.success(), "{host} failed ({status}):\n{}", child_stderr(&shared, host));
                break;
            }
            assert!(passes_started.elapsed() < Duration::from_secs(40), "{host} still running after 40 s");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let concurrent = passes_started.elapsed();
    // Every pass of every host, as its JSON report.
    let mut reports: Vec<serde_json::Value> = Vec::new();
    for host in &hosts {
        let passes: Vec<serde_json::Value> =
            serde_json::from_slice(&std::fs::read(shared.report(host)).unwrap()).unwrap();
        let total = |field: &str| passes.iter().map(|pass| pass["counts"][field].as_u64().unwrap()).sum::<u64>();
        let sweeps: Vec<&str> =
            passes.iter().map(|pass| pass["providers"][0]["orphans"]["status"].as_str().unwrap()).collect();
        eprintln!(
            "{host}: {} passes, destroyed {}, touched {}, deferred {}; sweeps {sweeps:?}",
            passes.len(),
            total("destroyed"),
            total("touched"),
            total("deferred")
        );
        reports.extend(passes);
    }

    // If a pass left work deferred, run passes until one finds nothing.
    let provider = FileProvider { shared: Shared { dir: dir.clone() } };
    let mut extra: Vec<ReconcileReport> = Vec::new();
    loop {
        let report = reconcile(pass_options(&provider, &store, "host-final")).await.unwrap();
        let quiet = report.actions.is_empty();
        extra.push(report);
        if quiet {
            break;
        }
        assert!(extra.len() < 5, "still finding work after 4 extra passes: {:?}", extra.last().unwrap().counts);
    }
    eprintln!(
        "4 hosts ran concurrently for {concurrent:?}; {} extra pass(es) until quiet; {:?} in all",
        extra.len(),
        started.elapsed()
    );

    // Every leak, idle and orphan sandbox destroyed exactly once; nothing else.
    let lines = read_lines(&shared.destroyed());
    let mut destroys: BTreeMap<&str, usize> = BTreeMap::new();
    for id in &lines {
        *destroys.entry(id.as_str()).or_default() += 1;
    }
    let audit = store.list_audit(None, 10_000).await.unwrap();
    // A sandbox destroyed twice, with who destroyed it why (from the audit).
    let twice: Vec<(&str, Vec<String>)> = destroys
        .iter()
        .filter(|(_, &count)| count > 1)
        .map(|(id, _)| {
            let by = audit.iter().filter(|row| row.provider_sandbox_id == *id);
            (*id, by.map(|row| format!("{} {} at {}", row.host, row.reason, row.at)).collect())
        })
        .collect();
    assert_eq!(twice, Vec::new(), "sandboxes destroyed more than once");
    let missed: Vec<&String> = expected.keys().filter(|id| !destroys.contains_key(id.as_str())).collect();
    assert_eq!(missed, Vec::<&String>::new(), "sandboxes never destroyed");
    let unexpected: Vec<&&str> = destroys.keys().filter(|id| !expected.contains_key(**id)).collect();
    assert_eq!(unexpected, Vec::<&&str>::new(), "sandboxes destroyed that were in use");
    assert_eq!(lines.len(), LEAKS + IDLE + ORPHANS);

    // The ledger is empty; only the live records are left.
    assert_eq!(store.list_leaks(None).await.unwrap(), Vec::new(), "the ledger is empty");
    let mut left: Vec<String> = store
        .list_stale(u64::MAX, 10_000)
        .await
        .unwrap()
        .into_iter()
        .map(|record| record.provider_sandbox_id)
        .collect();
    left.sort();
    assert_eq!(left, live);

    // One audit row per destroy, with its reason; no failure.
    assert_eq!(audit.len(), lines.len(), "one audit row per destroy");
    let mut audited: BTreeMap<String, &str> = BTreeMap::new();
    for row in &audit {
        assert_eq!((row.result.as_str(), row.provider.as_str()), ("destroyed", PROVIDER), "{row:?}");
        assert!(hosts.contains(&row.host) || row.host == "host-final", "{row:?}");
        let before = audited.insert(row.provider_sandbox_id.clone(), expected[&row.provider_sandbox_id]);
        assert!(before.is_none(), "two audit rows for {}", row.provider_sandbox_id);
        assert_eq!(row.reason, expected[&row.provider_sandbox_id], "{row:?}");
    }

    // The reports add up to the same destroys; some host swept.
    let reported: u64 = reports.iter().map(|report| report["counts"]["destroyed"].as_u64().unwrap()).sum::<u64>()
        + extra.iter().map(|report| report.counts.destroyed).sum::<u64>();
    assert_eq!(reported as usize, lines.len());
    let swept = reports.iter().filter(|report| report["providers"][0]["orphans"]["status"] == "swept").count();
    assert!(swept >= 1, "no host swept");
    assert!(extra.iter().all(|report| report.providers[0].orphans.status == SweepStatus::Swept));
    store.close().await;
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
}
