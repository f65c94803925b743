//! The orphan sweep of `reconcile` against real sandboxes: `LocalProvider`
//! directories and process trees, and podman containers through
//! `DockerProvider`, with the SQLite store holding the references.
//!
//! Each scenario creates, under the provider's owner: a sandbox an instance
//! record references, one only a (not yet due) ledger entry references, an
//! old unreferenced one and a young unreferenced one; plus one of a provider
//! with another owner and a stranger's (a directory / a container without
//! labels). Exactly the old unreferenced sandbox may be destroyed.
//!
//! The Docker tests need `DOCKER_HOST` (and `SANDBOX_RECLAIM_TEST_IMAGE`,
//! default `sandbox-reclaim/busybox:latest`): `eval "$(scripts/podman.sh start
//! /tmp/sr-podman)"`. Without them they FAIL: a missing engine is never a pass.
#![cfg(feature = "sqlite")]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sandbox_reclaim::runtime::clock::now_millis;
use sandbox_reclaim::{
    reconcile, ActionReason, ActionResult, FleetStore, LeakLedger, LeakReason, NewLeak, ReconcileOptions,
    ReconcileReport, SandboxInstanceRecord, SandboxInstanceStore, SandboxProvider, SqliteSandboxInstanceStore,
    SweepStatus,
};

/// Sandboxes younger than this are spared; the "old" ones are this much
/// plus half a second older than the young one when the pass runs.
const GRACE: Duration = Duration::from_secs(2);

/// A SQLite file of its own, removed (with its WAL files) when dropped.
struct TempDb {
    path: PathBuf,
}

impl TempDb {
    fn new(test: &str) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join("sandbox-reclaim-fleet-tests");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!(
            "{test}-{}-{}-{}.db",
            std::process::id(),
            now_millis(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        Self { path }
    }

    async fn open(&self) -> SqliteSandboxInstanceStore {
        SqliteSandboxInstanceStore::open(&self.path).await.expect("open SQLite")
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.path.display()));
        }
    }
}

/// The provider-side ids of one scenario's sandboxes.
#[derive(Debug, Clone)]
struct Scenario {
    referenced: String,
    ledgered: String,
    old: String,
    young: String,
    /// Created by a provider with another owner.
    foreign: String,
}

/// Makes the store reference `referenced` (an instance record) and
/// `ledgered` (a leak entry due only in an hour).
async fn reference(store: &SqliteSandboxInstanceStore, provider: &str, scenario: &Scenario) {
    let now = now_millis();
    store
        .upsert(&SandboxInstanceRecord {
            key: "k-referenced".into(),
            provider: provider.into(),
            provider_sandbox_id: scenario.referenced.clone(),
            latest_snapshot_id: None,
            thread_id: "thread".into(),
            latest_run_id: None,
            updated_at: now,
        })
        .await
        .unwrap();
    let leak = NewLeak {
        key: "k-ledgered".into(),
        provider: provider.into(),
        provider_sandbox_id: scenario.ledgered.clone(),
        run_id: "run".into(),
        error_message: "engine unreachable".into(),
        failed_at: now,
    };
    store.record_leak(leak, LeakReason::DestroyFailed, now + 3_600_000).await.unwrap();
}

/// One pass by `host` with the test's grace.
async fn sweep(provider: &dyn SandboxProvider, store: &SqliteSandboxInstanceStore, host: &str) -> ReconcileReport {
    let options = ReconcileOptions {
        orphan_grace: GRACE,
        host: Some(host.to_owned()),
        ..ReconcileOptions::new(vec![provider], store)
    };
    reconcile(options).await.unwrap()
}

/// The first pass destroyed exactly `scenario.old`, and said so.
fn check_report(report: &ReconcileReport, scenario: &Scenario) {
    assert_eq!(report.actions.len(), 1, "{:#?}", report.actions);
    let action = &report.actions[0];
    assert_eq!((action.reason, action.result), (ActionReason::Orphan, ActionResult::Destroyed));
    assert_eq!(action.provider_sandbox_id, scenario.old);
    assert_eq!(action.key.as_deref(), Some("k-old"));
    let provider = &report.providers[0];
    assert_eq!(provider.leaks.due, 0, "the ledger entry is not due yet");
    let orphans = &provider.orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    // Listed under our owner: referenced, ledgered, old, young.
    assert_eq!(
        (orphans.listed, orphans.referenced, orphans.young, orphans.found, orphans.destroyed),
        (4, 2, 1, 1, 1),
        "{orphans:?}"
    );
    assert!(!report.still_leaking());
}

/// The audit holds one row, the orphan's; the sweep lease was given back:
/// another host's pass sweeps at once (and, with a longer grace, spares
/// everything), and a third holder can claim it directly.
async fn check_audit_and_lease(
    provider: &dyn SandboxProvider,
    store: &SqliteSandboxInstanceStore,
    scenario: &Scenario,
) {
    let audit = store.list_audit(None, 100).await.unwrap();
    assert_eq!(audit.len(), 1, "{audit:#?}");
    let row = &audit[0];
    assert_eq!(
        (row.host.as_str(), row.provider.as_str(), row.provider_sandbox_id.as_str(), row.key.as_deref()),
        ("host-a", provider.name(), scenario.old.as_str(), Some("k-old"))
    );
    assert_eq!((row.reason.as_str(), row.result.as_str(), row.error.as_deref()), ("orphan", "destroyed", None));

    let options = ReconcileOptions {
        orphan_grace: Duration::from_secs(3600),
        host: Some("host-b".to_owned()),
        ..ReconcileOptions::new(vec![provider], store)
    };
    let second = reconcile(options).await.unwrap();
    assert_eq!(second.providers[0].orphans.status, SweepStatus::Swept, "the first pass released its sweep lease");
    assert_eq!(second.actions, Vec::new());
    assert!(store.claim_sweep(provider.name(), "host-c/holder", 60_000, now_millis()).await.unwrap());
    store.release_sweep(provider.name(), "host-c/holder").await.unwrap();
    assert_eq!(store.list_audit(None, 100).await.unwrap().len(), 1);
    // The references are untouched.
    assert!(store.get("k-referenced").await.unwrap().is_some());
    let leaks = store.list_leaks(None).await.unwrap();
    assert_eq!(leaks.len(), 1);
    assert_eq!(leaks[0].provider_sandbox_id, scenario.ledgered);
}

// ---------------------------------------------------------------- local

#[cfg(all(feature = "local", unix))]
mod local {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU32, Ordering};

    use sandbox_reclaim::providers::local::DIR_ENV;
    use sandbox_reclaim::{Labels, LocalConfig, LocalProvider, ManagedSandboxProvider, SweepStatus};

    use super::*;

    /// A fresh base directory; on drop, every process still carrying its
    /// marker is killed and the directory removed (also when a test fails).
    struct BaseDir(PathBuf);

    impl BaseDir {
        fn new(test: &str) -> Self {
            static COUNTER: AtomicU32 = AtomicU32::new(0);
            let path = std::env::temp_dir().join(format!(
                "sr-fleet-{test}-{}-{}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&path);
            Self(path)
        }

        fn config(&self, owner: &str) -> LocalConfig {
            LocalConfig { owner: owner.into(), ..LocalConfig::new(&self.0) }
        }
    }

    impl Drop for BaseDir {
        fn drop(&mut self) {
            let base = self.0.canonicalize().unwrap_or_else(|_| self.0.clone());
            let pids: Vec<String> = marked_pids(&base).iter().map(i32::to_string).collect();
            if !pids.is_empty() {
                let _ = std::process::Command::new("kill").arg("-9").args(&pids).status();
            }
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn is_live(pid: i32) -> bool {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
        let state = stat.rfind(')').and_then(|end| stat[end + 1..].split_whitespace().next());
        !matches!(state, None | Some("Z" | "X"))
    }

    /// Live processes whose sandbox marker points under `base`.
    fn marked_pids(base: &Path) -> Vec<i32> {
        let prefix = format!("{DIR_ENV}={}", base.display()).into_bytes();
        let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
        entries
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&pid| pid != std::process::id() as i32 && is_live(pid))
            .filter(|&pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|environ| environ.split(|&byte| byte == 0).any(|entry| entry.starts_with(&prefix)))
            })
            .collect()
    }

    /// The pids a sandbox's owner file records.
    fn recorded_pids(dir: &Path) -> Vec<i32> {
        let owner: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("owner.json")).unwrap()).unwrap();
        ["supervisor", "init"].iter().filter_map(|field| owner[field]["pid"].as_i64()).map(|pid| pid as i32).collect()
    }

    /// A sandbox is alive: its directory is there and every recorded process runs.
    fn alive(provider: &LocalProvider, id: &str) -> bool {
        let dir = provider.base_dir().join(id);
        dir.join("owner.json").exists() && {
            let pids = recorded_pids(&dir);
            !pids.is_empty() && pids.iter().all(|&pid| is_live(pid))
        }
    }

    async fn create(provider: &LocalProvider, key: &str) -> String {
        provider.create(key, &Labels::new()).await.unwrap().id
    }

    async fn make(ours: &LocalProvider, theirs: &LocalProvider) -> Scenario {
        let referenced = create(ours, "k-referenced").await;
        let ledgered = create(ours, "k-ledgered").await;
        let old = create(ours, "k-old").await;
        let foreign = create(theirs, "k-old").await;
        tokio::time::sleep(GRACE + Duration::from_millis(500)).await;
        let young = create(ours, "k-young").await;
        Scenario { referenced, ledgered, old, young, foreign }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn local_sweep_destroys_exactly_the_old_unreferenced_sandbox() {
        let base = BaseDir::new("sweep");
        // Not the pass's default owner: the provider's own owner decides.
        let ours = LocalProvider::new(base.config("team-a")).unwrap();
        let theirs = LocalProvider::new(base.config("someone-else")).unwrap();
        assert_eq!((ours.owner(), theirs.owner()), (Some("team-a"), Some("someone-else")));
        eprintln!("local sandboxes isolated by {:?}", ours.isolation());
        // A stranger's things in the base directory: another tool's sandbox
        // directory (its own owner file), and a plain file.
        let stranger = ours.base_dir().join("acme-build-cache");
        std::fs::create_dir_all(stranger.join("objects")).unwrap();
        std::fs::write(stranger.join("owner.json"), br#"{"owner":"acme-ci","key":"cache","createdAt":1}"#).unwrap();
        std::fs::write(ours.base_dir().join("NOTES.txt"), b"not a sandbox").unwrap();

        let scenario = make(&ours, &theirs).await;
        let db = TempDb::new("orphans-local");
        let store = db.open().await;
        reference(&store, ours.name(), &scenario).await;
        let old_pids = recorded_pids(&ours.base_dir().join(&scenario.old));
        assert!(alive(&ours, &scenario.old));

        let report = sweep(&ours, &store, "host-a").await;

        check_report(&report, &scenario);
        assert!(!ours.base_dir().join(&scenario.old).exists(), "the old orphan's directory is gone");
        assert!(old_pids.iter().all(|&pid| !is_live(pid)), "the old orphan's processes are dead");
        for id in [&scenario.referenced, &scenario.ledgered, &scenario.young] {
            assert!(alive(&ours, id), "{id} must survive");
        }
        assert!(alive(&theirs, &scenario.foreign), "another owner's sandbox must survive");
        assert!(stranger.join("objects").exists() && ours.base_dir().join("NOTES.txt").exists());
        let mut left: Vec<String> = ours.list().await.unwrap().into_iter().map(|handle| handle.id).collect();
        left.sort();
        let mut expected = vec![scenario.referenced.clone(), scenario.ledgered.clone(), scenario.young.clone()];
        expected.sort();
        assert_eq!(left, expected);
        check_audit_and_lease(&ours, &store, &scenario).await;

        for id in [&scenario.referenced, &scenario.ledgered, &scenario.young] {
            ours.destroy(id).await.unwrap();
        }
        theirs.destroy(&scenario.foreign).await.unwrap();
        assert_eq!(marked_pids(ours.base_dir()), Vec::<i32>::new());
    }

    /// A directory nobody can tell the owner of (no owner file) makes the
    /// local sweep fail closed: nothing is destroyed until it is gone.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn local_sweep_fails_closed_on_a_directory_without_owner_file() {
        let base = BaseDir::new("closed");
        let ours = LocalProvider::new(base.config(sandbox_reclaim::DEFAULT_OWNER)).unwrap();
        let old = ours.create("k-old", &Labels::new()).await.unwrap().id;
        let stray = ours.base_dir().join("someones-data");
        std::fs::create_dir_all(&stray).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let db = TempDb::new("orphans-local-closed");
        let store = db.open().await;
        let options = || ReconcileOptions {
            orphan_grace: Duration::from_millis(100),
            ..ReconcileOptions::new(vec![&ours], &store)
        };

        let report = reconcile(options()).await.unwrap();
        let orphans = &report.providers[0].orphans;
        assert_eq!(orphans.status, SweepStatus::Unavailable);
        assert_eq!(
            orphans.error.as_deref(),
            Some(sandbox_reclaim::report::messages::unknown_created_at("someones-data").as_str())
        );
        assert_eq!(report.actions, Vec::new());
        assert!(report.still_leaking());
        assert!(alive(&ours, &old) && stray.exists());
        assert_eq!(store.list_audit(None, 10).await.unwrap(), Vec::new());

        std::fs::remove_dir(&stray).unwrap();
        let report = reconcile(options()).await.unwrap();
        assert_eq!(report.providers[0].orphans.status, SweepStatus::Swept);
        assert_eq!(report.counts.destroyed, 1);
        assert!(!ours.base_dir().join(&old).exists());
    }
}

// ---------------------------------------------------------------- docker

#[cfg(feature = "docker")]
mod docker {
    use std::process::Command;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Mutex;

    use bollard::models::{ContainerCreateBody, HostConfig};
    use bollard::query_parameters::{CreateContainerOptions, InspectContainerOptions, StartContainerOptions};
    use bollard::Docker;
    use sandbox_reclaim::providers::{LABEL_KEY, LABEL_OWNER};
    use sandbox_reclaim::{DockerConfig, DockerProvider, Labels, ManagedSandboxProvider, SweepStatus};

    use super::*;

    fn docker_host() -> String {
        match std::env::var("DOCKER_HOST") {
            Ok(host) if !host.is_empty() => host,
            _ => panic!(
                "DOCKER_HOST is not set: the Docker orphan-sweep tests need a Docker Engine API. \
                 Start podman's with `eval \"$(scripts/podman.sh start /tmp/sr-podman)\"` (or run `make test`)."
            ),
        }
    }

    fn image() -> String {
        std::env::var("SANDBOX_RECLAIM_TEST_IMAGE").unwrap_or_else(|_| "sandbox-reclaim/busybox:latest".into())
    }

    /// A namespace no other test (or earlier run) uses.
    fn unique(test: &str) -> String {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        format!("sr-fleet-{test}-{}-{nanos}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
    }

    fn provider(owner: &str) -> DockerProvider {
        DockerProvider::new(DockerConfig { owner: owner.into(), ..DockerConfig::new(image()) }).unwrap_or_else(
            |error| panic!("cannot reach the Docker Engine API at DOCKER_HOST={}: {error}", docker_host()),
        )
    }

    fn engine() -> Docker {
        Docker::connect_with_host(&docker_host()).expect("connect to DOCKER_HOST")
    }

    /// Every container a test made, and every container of its owners,
    /// removed on drop (also when the test fails).
    struct Containers {
        ids: Mutex<Vec<String>>,
        owners: Vec<String>,
    }

    impl Containers {
        fn add(&self, id: &str) -> String {
            self.ids.lock().unwrap().push(id.to_owned());
            id.to_owned()
        }
    }

    impl Drop for Containers {
        fn drop(&mut self) {
            let podman = || {
                let mut command = Command::new("podman");
                command.arg("--url").arg(docker_host());
                command
            };
            let mut ids = self.ids.lock().unwrap().clone();
            for owner in &self.owners {
                let filter = format!("label={LABEL_OWNER}={owner}");
                if let Ok(output) = podman().args(["ps", "-a", "-q", "--no-trunc", "--filter", &filter]).output() {
                    ids.extend(String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned));
                }
            }
            if !ids.is_empty() {
                let _ = podman().args(["rm", "-f", "-t", "0"]).args(&ids).output();
            }
        }
    }

    /// `Some(running)` for a container that exists, `None` once it is gone.
    async fn state(id: &str) -> Option<bool> {
        match engine().inspect_container(id, None::<InspectContainerOptions>).await {
            Ok(found) => Some(found.state.and_then(|state| state.running).unwrap_or(false)),
            Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => None,
            Err(error) => panic!("inspect {id}: {error}"),
        }
    }

    /// Creates and starts a container through the engine API directly, as
    /// something other than the provider would, carrying exactly `labels`.
    async fn stranger(name: &str, labels: &[(&str, &str)]) -> String {
        let body = ContainerCreateBody {
            image: Some(image()),
            cmd: Some(vec!["sleep".into(), "infinity".into()]),
            labels: Some(labels.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect()),
            host_config: Some(HostConfig { network_mode: Some("none".into()), ..Default::default() }),
            ..Default::default()
        };
        let options = CreateContainerOptions { name: Some(name.into()), ..Default::default() };
        let docker = engine();
        let id = docker.create_container(Some(options), body).await.expect("create a stranger's container").id;
        docker.start_container(&id, None::<StartContainerOptions>).await.expect("start the stranger's container");
        id
    }

    async fn create(provider: &DockerProvider, key: &str) -> String {
        provider.create(key, &Labels::new()).await.unwrap().id
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn docker_sweep_destroys_exactly_the_old_unreferenced_container() {
        let (owner, other) = (unique("ours"), unique("theirs"));
        let made = Containers { ids: Mutex::new(Vec::new()), owners: vec![owner.clone(), other.clone()] };
        let (ours, theirs) = (provider(&owner), provider(&other));
        assert_eq!(ours.owner(), Some(owner.as_str()), "the sweep goes by the provider's own owner");
        ours.ping().await.expect("the engine answers /_ping");
        let stranger_id = made.add(&stranger(&unique("stranger"), &[]).await);

        let referenced = made.add(&create(&ours, "k-referenced").await);
        let ledgered = made.add(&create(&ours, "k-ledgered").await);
        let old = made.add(&create(&ours, "k-old").await);
        let foreign = made.add(&create(&theirs, "k-old").await);
        tokio::time::sleep(GRACE + Duration::from_millis(500)).await;
        let young = made.add(&create(&ours, "k-young").await);
        let scenario = Scenario { referenced, ledgered, old, young, foreign };

        let db = TempDb::new("orphans-docker");
        let store = db.open().await;
        reference(&store, ours.name(), &scenario).await;
        assert_eq!(state(&scenario.old).await, Some(true));

        let report = sweep(&ours, &store, "host-a").await;

        check_report(&report, &scenario);
        assert_eq!(state(&scenario.old).await, None, "the old orphan's container is gone");
        for id in [&scenario.referenced, &scenario.ledgered, &scenario.young, &scenario.foreign, &stranger_id] {
            assert_eq!(state(id).await, Some(true), "{id} must survive, running");
        }
        let mut left: Vec<String> =
            ours.list_sandboxes().await.unwrap().into_iter().map(|sandbox| sandbox.id).collect();
        left.sort();
        let mut expected = vec![scenario.referenced.clone(), scenario.ledgered.clone(), scenario.young.clone()];
        expected.sort();
        assert_eq!(left, expected);
        check_audit_and_lease(&ours, &store, &scenario).await;

        for id in [&scenario.referenced, &scenario.ledgered, &scenario.young] {
            ours.destroy(id).await.unwrap();
        }
        theirs.destroy(&scenario.foreign).await.unwrap();
        assert_eq!(ours.list_sandboxes().await.unwrap(), Vec::new());
        assert_eq!(theirs.list_sandboxes().await.unwrap(), Vec::new());
    }

    /// A container under our owner label whose creation time is unknown
    /// makes the Docker sweep fail closed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn docker_sweep_fails_closed_on_a_container_of_unknown_age() {
        let owner = unique("closed");
        let made = Containers { ids: Mutex::new(Vec::new()), owners: vec![owner.clone()] };
        let ours = provider(&owner);
        let old = made.add(&ours.create("k-old", &Labels::new()).await.unwrap().id);
        let undated = made.add(&stranger(&unique("undated"), &[(LABEL_OWNER, &owner), (LABEL_KEY, "k-undated")]).await);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let db = TempDb::new("orphans-docker-closed");
        let store = db.open().await;
        let options =
            ReconcileOptions { orphan_grace: Duration::from_millis(100), ..ReconcileOptions::new(vec![&ours], &store) };

        let report = reconcile(options).await.unwrap();
        let orphans = &report.providers[0].orphans;
        assert_eq!(orphans.status, SweepStatus::Unavailable);
        assert_eq!(
            orphans.error.as_deref(),
            Some(sandbox_reclaim::report::messages::unknown_created_at(&undated).as_str())
        );
        assert_eq!(report.actions, Vec::new());
        assert_eq!(state(&old).await, Some(true));
        assert_eq!(state(&undated).await, Some(true));
        ours.destroy(&old).await.unwrap();
        ours.destroy(&undated).await.unwrap();
    }
}
