//! `LocalProvider` against the real kernel: namespaces (as root) and the
//! process-group fallback. Run with `cargo test -p sandbox-reclaim --features local`.
#![cfg(feature = "local")]

mod service_support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sandbox_reclaim::providers::local::DIR_ENV;
use sandbox_reclaim::{
    reclaim_sandbox, InMemorySandboxInstanceStore, InvalidInput, Isolation, IsolationRequest, Labels, ListedSandbox,
    LocalConfig, LocalProvider, ManagedSandboxProvider, ProviderError, ReclaimOptions, ReclaimOutcome, RunRecord,
    RunStatus, SandboxInstanceRecord, SandboxInstanceStore, SandboxProvider,
};

/// A fresh base directory, removed (after its sandboxes) when dropped.
struct BaseDir(PathBuf);

impl BaseDir {
    fn new(test: &str) -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "sr-local-{test}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        Self(path)
    }

    fn config(&self, isolation: IsolationRequest) -> LocalConfig {
        LocalConfig { isolation, ..LocalConfig::new(&self.0) }
    }
}

impl Drop for BaseDir {
    fn drop(&mut self) {
        // Best effort for failed tests: kill whatever still carries our marker.
        for pid in live_pids_with_marker_prefix(&self.0) {
            unsafe { libc_kill(pid) };
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

unsafe fn libc_kill(pid: i32) {
    extern "C" {
        fn kill(pid: i32, signal: i32) -> i32;
    }
    kill(pid, 9);
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| status.lines().find(|line| line.starts_with("Uid:")).map(str::to_string))
        .is_some_and(|line| line.split_whitespace().nth(2) == Some("0"))
}

/// Both modes where namespaces are possible; the namespace mode is demanded
/// as root so a broken probe cannot silently test only the fallback.
fn modes() -> Vec<IsolationRequest> {
    if is_root() {
        vec![IsolationRequest::Namespaces, IsolationRequest::ProcessGroup]
    } else {
        eprintln!("not root: testing the process-group fallback only (and Auto)");
        vec![IsolationRequest::Auto, IsolationRequest::ProcessGroup]
    }
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| word.to_string()).collect()
}

fn state_of(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].split_whitespace().next()?.chars().next()
}

fn is_live(pid: i32) -> bool {
    state_of(pid).is_some_and(|state| !matches!(state, 'Z' | 'X'))
}

fn all_pids() -> Vec<i32> {
    std::fs::read_dir("/proc").unwrap().filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok()).collect()
}

/// Live processes whose command line is exactly `words`.
fn live_pids_with_cmdline(words: &[&str]) -> Vec<i32> {
    let wanted: Vec<u8> = words.iter().flat_map(|word| word.bytes().chain([0])).collect();
    all_pids()
        .into_iter()
        .filter(|&pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| cmdline == wanted))
        .filter(|&pid| is_live(pid))
        .collect()
}

/// Live processes whose sandbox marker points under `base`.
fn live_pids_with_marker_prefix(base: &Path) -> Vec<i32> {
    let prefix = format!("{DIR_ENV}={}", base.display()).into_bytes();
    all_pids()
        .into_iter()
        .filter(|&pid| pid != std::process::id() as i32 && is_live(pid))
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|environ| environ.split(|&byte| byte == 0).any(|entry| entry.starts_with(&prefix)))
        })
        .collect()
}

/// Pids recorded in a sandbox's owner file.
fn recorded_pids(dir: &Path) -> Vec<i32> {
    let owner: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("owner.json")).unwrap()).unwrap();
    ["supervisor", "init"].iter().filter_map(|field| owner[field]["pid"].as_i64()).map(|pid| pid as i32).collect()
}

fn unique_number() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    format!("{}{:04}", 9_000_000 + std::process::id() % 1_000_000, COUNTER.fetch_add(1, Ordering::Relaxed))
}

async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn invalid_field(error: ProviderError) -> &'static str {
    match error {
        ProviderError::Backend(source) => match source.downcast::<InvalidInput>() {
            Ok(invalid) => invalid.field,
            Err(other) => panic!("expected InvalidInput, got {other}"),
        },
        other => panic!("expected InvalidInput, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_gets_namespaces_and_fallback_says_why() {
    let base = BaseDir::new("isolation");
    let auto = LocalProvider::new(base.config(IsolationRequest::Auto)).unwrap();
    if is_root() {
        assert_eq!(
            auto.isolation(),
            Isolation::Namespaces,
            "as root namespaces must work: {:?}",
            auto.fallback_reason()
        );
        assert_eq!(auto.fallback_reason(), None);
    } else {
        eprintln!("auto isolation: {:?} ({:?})", auto.isolation(), auto.fallback_reason());
    }
    let fallback = LocalProvider::new(base.config(IsolationRequest::ProcessGroup)).unwrap();
    assert_eq!(fallback.isolation(), Isolation::ProcessGroup);
    assert!(fallback.fallback_reason().is_some_and(|reason| !reason.is_empty()));
    assert_eq!(auto.name(), "local");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_list_exec_and_retried_create() {
    for mode in modes() {
        let base = BaseDir::new("lifecycle");
        let provider = LocalProvider::new(base.config(mode)).unwrap();
        let labels = Labels::from([("team".to_string(), "agents".to_string())]);
        let first = provider.create("run/1 with spaces", &labels).await.unwrap();
        let second = provider.create("run-2", &Labels::new()).await.unwrap();
        assert_eq!(first.key, "run/1 with spaces");
        assert!(first.created_at > 0);
        let retried = provider.create("run/1 with spaces", &labels).await.unwrap();
        assert_eq!(retried, first, "a retried create must return the same sandbox ({mode:?})");

        let listed = provider.list().await.unwrap();
        assert_eq!(listed.len(), 2, "{listed:?}");
        assert!(listed.contains(&first) && listed.contains(&second));

        let output =
            provider.exec(&first.id, &argv(&["sh", "-c", "echo out; echo err >&2; pwd; exit 3"])).await.unwrap();
        let work_dir = base.0.canonicalize().unwrap().join(&first.id).join("work");
        assert_eq!(output.stdout_text(), format!("out\n{}\n", work_dir.display()));
        assert_eq!(output.stderr_text(), "err\n");
        assert_eq!(output.exit_code, 3);
        let killed = provider.exec(&first.id, &argv(&["sh", "-c", "kill -9 $$"])).await.unwrap();
        assert_eq!(killed.exit_code, 128 + 9);

        for handle in [&first, &second] {
            provider.destroy(&handle.id).await.unwrap();
        }
        assert!(provider.list().await.unwrap().is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaced_sandbox_sees_only_loopback_and_its_own_pids() {
    // Namespaces need root: a skip locally, a failure under CI.
    if !service_support::needs("root", is_root(), "LocalProvider's namespace isolation") {
        return;
    }
    let base = BaseDir::new("netns");
    let provider = LocalProvider::new(base.config(IsolationRequest::Auto)).unwrap();
    if provider.isolation() != Isolation::Namespaces {
        assert!(!is_root(), "root must get namespaces");
        return;
    }
    let sandbox = provider.create("net", &Labels::new()).await.unwrap();
    let sys = provider.exec(&sandbox.id, &argv(&["ls", "/sys/class/net"])).await.unwrap();
    assert_eq!(sys.stdout_text().split_whitespace().collect::<Vec<_>>(), ["lo"], "stderr: {}", sys.stderr_text());
    let links = provider.exec(&sandbox.id, &argv(&["ip", "-o", "link"])).await.unwrap();
    let names: Vec<&str> = links
        .stdout
        .split(|&byte| byte == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| std::str::from_utf8(line).unwrap().split(':').nth(1).unwrap().trim())
        .collect();
    assert_eq!(names, ["lo"]);
    assert!(links.stdout_text().contains("UP"), "lo should be up: {}", links.stdout_text());
    // Host interfaces exist outside, so the check above could fail.
    assert!(std::fs::read_dir("/sys/class/net").unwrap().count() > 1);

    let init = provider.exec(&sandbox.id, &argv(&["cat", "/proc/1/cmdline"])).await.unwrap();
    assert_eq!(init.stdout, b"sleep\0infinity\0", "PID 1 of the sandbox is its keep-alive");
    let hostname = provider.exec(&sandbox.id, &argv(&["sh", "-c", "hostname sandboxed && hostname"])).await.unwrap();
    assert_eq!(hostname.stdout_text(), "sandboxed\n");
    assert_ne!(std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim(), "sandboxed");
    provider.destroy(&sandbox.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destroy_kills_grandchildren_and_leaves_nothing() {
    for mode in modes() {
        let base = BaseDir::new("tree");
        let (kept, spawned, detached) = (unique_number(), unique_number(), unique_number());
        // The keep-alive itself has children, and exec leaves a grandchild
        // reparented away from it plus one that left the session.
        let keep_alive = format!("sleep {kept} & sleep infinity");
        let config = LocalConfig { keep_alive: argv(&["sh", "-c", &keep_alive]), ..base.config(mode) };
        let provider = LocalProvider::new(config).unwrap();
        let sandbox = provider.create("tree", &Labels::new()).await.unwrap();
        let script = format!("(sleep {spawned} </dev/null >/dev/null 2>&1 &); setsid sleep {detached} </dev/null >/dev/null 2>&1 & echo ok");
        let output = provider.exec(&sandbox.id, &argv(&["sh", "-c", &script])).await.unwrap();
        assert_eq!(output.stdout_text(), "ok\n", "stderr: {}", output.stderr_text());

        for number in [&kept, &spawned, &detached] {
            wait_until(&format!("sleep {number} runs ({mode:?})"), || {
                live_pids_with_cmdline(&["sleep", number]).len() == 1
            })
            .await;
        }
        let dir = base.0.canonicalize().unwrap().join(&sandbox.id);
        let recorded = recorded_pids(&dir);
        assert!(!recorded.is_empty() && recorded.iter().all(|&pid| is_live(pid)));

        provider.destroy(&sandbox.id).await.unwrap();

        for number in [&kept, &spawned, &detached] {
            assert_eq!(
                live_pids_with_cmdline(&["sleep", number]),
                Vec::<i32>::new(),
                "sleep {number} survived ({mode:?})"
            );
        }
        assert!(recorded.iter().all(|&pid| !is_live(pid)), "recorded processes survived ({mode:?})");
        assert_eq!(live_pids_with_marker_prefix(&base.0), Vec::<i32>::new());
        assert!(!dir.exists(), "the sandbox directory must be removed");
        // Idempotent: gone is success, twice.
        provider.destroy(&sandbox.id).await.unwrap();
        provider.destroy(&sandbox.id).await.unwrap();
        assert!(matches!(provider.exec(&sandbox.id, &argv(&["true"])).await, Err(ProviderError::Backend(_))));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_creates_and_destroys_leave_nothing() {
    for mode in modes() {
        let base = BaseDir::new("fifty");
        let provider = Arc::new(LocalProvider::new(base.config(mode)).unwrap());
        let creates = (0..50).map(|index| {
            let provider = provider.clone();
            tokio::spawn(async move { provider.create(&format!("run-{index}"), &Labels::new()).await })
        });
        let mut handles = Vec::new();
        for task in creates.collect::<Vec<_>>() {
            handles.push(task.await.unwrap().unwrap());
        }
        assert_eq!(provider.list().await.unwrap().len(), 50);
        assert!(live_pids_with_marker_prefix(&base.0).len() >= 50, "every sandbox runs");

        // Every sandbox destroyed, the first ten twice at the same time.
        let destroys = handles.iter().chain(&handles[..10]).map(|handle| {
            let provider = provider.clone();
            let id = handle.id.clone();
            tokio::spawn(async move { provider.destroy(&id).await })
        });
        for task in destroys.collect::<Vec<_>>() {
            task.await.unwrap().unwrap();
        }
        assert!(provider.list().await.unwrap().is_empty());
        let leftovers: Vec<_> = std::fs::read_dir(&base.0).unwrap().map(|entry| entry.unwrap().file_name()).collect();
        assert!(leftovers.is_empty(), "left in the base directory ({mode:?}): {leftovers:?}");
        assert_eq!(live_pids_with_marker_prefix(&base.0), Vec::<i32>::new(), "processes left ({mode:?})");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_of_one_key_share_one_sandbox() {
    let base = BaseDir::new("samekey");
    let provider = Arc::new(LocalProvider::new(base.config(IsolationRequest::Auto)).unwrap());
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let provider = provider.clone();
            tokio::spawn(async move { provider.create("same", &Labels::new()).await.unwrap() })
        })
        .collect();
    let mut ids = Vec::new();
    for task in tasks {
        ids.push(task.await.unwrap().id);
    }
    ids.dedup();
    assert_eq!(ids.len(), 1);
    assert_eq!(provider.list().await.unwrap().len(), 1);
    let dir = base.0.canonicalize().unwrap().join(&ids[0]);
    wait_until("the sandbox records its processes", || !recorded_pids(&dir).is_empty()).await;
    provider.destroy(&ids[0]).await.unwrap();
    assert_eq!(live_pids_with_marker_prefix(&base.0), Vec::<i32>::new());
    assert_eq!(std::fs::read_dir(&base.0).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reclaim_sandbox_destroys_through_the_local_provider() {
    let base = BaseDir::new("reclaim");
    let provider = LocalProvider::new(base.config(IsolationRequest::Auto)).unwrap();
    let store = InMemorySandboxInstanceStore::new();
    let mut runs = Vec::new();
    for index in 0..3 {
        let key = format!("thread-{index}");
        let handle = provider.create(&key, &Labels::new()).await.unwrap();
        store
            .upsert(&SandboxInstanceRecord {
                key: key.clone(),
                provider: provider.name().to_string(),
                provider_sandbox_id: handle.id.clone(),
                latest_snapshot_id: None,
                thread_id: key.clone(),
                latest_run_id: None,
                updated_at: handle.created_at,
            })
            .await
            .unwrap();
        runs.push((RunRecord::new(format!("run-{index}"), &key, RunStatus::Completed).with_sandbox_key(&key), handle));
    }
    let options = ReclaimOptions { provider: &provider, instances: &store, logger: None, destroy_timeout: None };
    for (run, handle) in &runs {
        assert_eq!(reclaim_sandbox(run, options).await.unwrap(), ReclaimOutcome::Destroyed);
        assert!(!base.0.join(&handle.id).exists());
        assert_eq!(reclaim_sandbox(run, options).await.unwrap(), ReclaimOutcome::NotFound);
        provider.destroy(&handle.id).await.unwrap();
    }
    assert!(provider.list().await.unwrap().is_empty());
    assert_eq!(live_pids_with_marker_prefix(&base.0), Vec::<i32>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ownership_guard_refuses_strangers() {
    let base = BaseDir::new("owner");
    let ours = LocalProvider::new(base.config(IsolationRequest::Auto)).unwrap();
    let theirs =
        LocalProvider::new(LocalConfig { owner: "someone-else".into(), ..base.config(IsolationRequest::Auto) })
            .unwrap();
    let their_sandbox = theirs.create("shared-key", &Labels::new()).await.unwrap();
    let our_sandbox = ours.create("shared-key", &Labels::new()).await.unwrap();
    assert_ne!(their_sandbox.id, our_sandbox.id, "owners get distinct names for one key");
    assert_eq!(ours.list().await.unwrap(), vec![our_sandbox.clone()]);

    let refused = ours.destroy(&their_sandbox.id).await.unwrap_err();
    assert!(matches!(refused, ProviderError::NotOwned { ref id, .. } if *id == their_sandbox.id), "{refused}");
    assert!(matches!(ours.exec(&their_sandbox.id, &argv(&["true"])).await, Err(ProviderError::NotOwned { .. })));
    let their_dir = base.0.canonicalize().unwrap().join(&their_sandbox.id);
    assert!(their_dir.exists());
    assert!(recorded_pids(&their_dir).iter().all(|&pid| is_live(pid)), "a refused destroy must not kill");
    assert_eq!(theirs.exec(&their_sandbox.id, &argv(&["echo", "alive"])).await.unwrap().stdout_text(), "alive\n");

    // A directory with no owner file is not ours either.
    let stray = base.0.join("sr-stray-dir");
    std::fs::create_dir_all(stray.join("data")).unwrap();
    assert!(matches!(ours.destroy("sr-stray-dir").await, Err(ProviderError::NotOwned { .. })));
    assert!(stray.join("data").exists());
    std::fs::remove_dir_all(&stray).unwrap();

    // Reclaiming a record that points at their sandbox fails and spares it.
    let store = InMemorySandboxInstanceStore::new();
    store
        .upsert(&SandboxInstanceRecord {
            key: "k".into(),
            provider: "local".into(),
            provider_sandbox_id: their_sandbox.id.clone(),
            latest_snapshot_id: None,
            thread_id: "t".into(),
            latest_run_id: None,
            updated_at: 1,
        })
        .await
        .unwrap();
    let run = RunRecord::new("r", "t", RunStatus::Failed).with_sandbox_key("k");
    let options = ReclaimOptions { provider: &ours, instances: &store, logger: None, destroy_timeout: None };
    assert_eq!(reclaim_sandbox(&run, options).await.unwrap(), ReclaimOutcome::DestroyFailed);
    assert!(recorded_pids(&their_dir).iter().all(|&pid| is_live(pid)));

    theirs.destroy(&their_sandbox.id).await.unwrap();
    ours.destroy(&our_sandbox.id).await.unwrap();
    assert_eq!(live_pids_with_marker_prefix(&base.0), Vec::<i32>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_before_any_side_effect() {
    let base = BaseDir::new("badinput");
    let provider = LocalProvider::new(base.config(IsolationRequest::Auto)).unwrap();
    assert_eq!(invalid_field(provider.create("", &Labels::new()).await.unwrap_err()), "key");
    assert_eq!(invalid_field(provider.create("a\0b", &Labels::new()).await.unwrap_err()), "key");
    let reserved = Labels::from([("io.sandbox-reclaim.owner".to_string(), "x".to_string())]);
    assert_eq!(invalid_field(provider.create("k", &reserved).await.unwrap_err()), "labels");
    for id in ["", "..", "../etc", "a/b", "a\0"] {
        assert_eq!(invalid_field(provider.destroy(id).await.unwrap_err()), "id", "{id:?}");
        assert_eq!(invalid_field(provider.exec(id, &argv(&["true"])).await.unwrap_err()), "id", "{id:?}");
    }
    assert_eq!(invalid_field(provider.exec("sr-x", &[]).await.unwrap_err()), "argv");
    assert_eq!(invalid_field(provider.exec("sr-x", &argv(&[""])).await.unwrap_err()), "argv");
    assert_eq!(std::fs::read_dir(&base.0).unwrap().count(), 0, "nothing may be created");
    // A destroy of a sandbox that never existed is success.
    provider.destroy("sr-never-existed").await.unwrap();

    let empty_keep_alive = LocalConfig { keep_alive: Vec::new(), ..base.config(IsolationRequest::Auto) };
    assert_eq!(invalid_field(LocalProvider::new(empty_keep_alive).unwrap_err()), "keepAlive");
    let empty_owner = LocalConfig { owner: String::new(), ..base.config(IsolationRequest::Auto) };
    assert_eq!(invalid_field(LocalProvider::new(empty_owner).unwrap_err()), "owner");

    // A keep-alive that cannot start is a clear error, and leaves nothing.
    let missing = LocalConfig { keep_alive: argv(&["/nonexistent/keep-alive"]), ..base.config(IsolationRequest::Auto) };
    let provider = LocalProvider::new(missing).unwrap();
    let error = provider.create("k", &Labels::new()).await.unwrap_err();
    assert!(error.to_string().contains("nonexistent"), "{error}");
    assert_eq!(std::fs::read_dir(&base.0).unwrap().count(), 0);
}

fn listed(handle: &sandbox_reclaim::SandboxHandle, owner: &str) -> ListedSandbox {
    ListedSandbox {
        id: handle.id.clone(),
        created_at: Some(handle.created_at),
        owner: Some(owner.to_string()),
        key: Some(handle.key.clone()),
        deleting: false,
    }
}

/// Rewrites one field of a sandbox's owner file (`None` removes it).
fn edit_owner_file(dir: &Path, field: &str, value: Option<serde_json::Value>) {
    let path = dir.join("owner.json");
    let mut owner: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    match value {
        Some(value) => owner[field] = value,
        None => {
            owner.as_object_mut().unwrap().remove(field);
        }
    }
    std::fs::write(&path, serde_json::to_vec(&owner).unwrap()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_sandboxes_reports_its_owners_sandboxes_and_unknowns_as_none() {
    let base = BaseDir::new("listing");
    let config = |owner: &str| LocalConfig { owner: owner.into(), ..base.config(IsolationRequest::ProcessGroup) };
    let ours = LocalProvider::new(config("team-a")).unwrap();
    let theirs = LocalProvider::new(config("team-b")).unwrap();
    assert!(ours.can_list());
    assert_eq!(ours.list_sandboxes().await.unwrap(), Vec::new());

    let mut handles = Vec::new();
    for key in ["run-1", "run/2 with spaces", "run-3", "run-4"] {
        handles.push(ours.create(key, &Labels::new()).await.unwrap());
    }
    let their_handle = theirs.create("run-1", &Labels::new()).await.unwrap();
    // Neither staging leftovers nor plain files are sandboxes.
    std::fs::create_dir_all(base.0.join(".creating-sr-x-1-0/work")).unwrap();
    std::fs::write(base.0.join("sr-not-a-dir"), b"{}").unwrap();

    let mut expected: Vec<ListedSandbox> = handles.iter().map(|handle| listed(handle, "team-a")).collect();
    expected.sort_by(|left, right| left.id.cmp(&right.id));
    assert_eq!(ours.list_sandboxes().await.unwrap(), expected, "only team-a's, with key, owner and created_at");
    assert_eq!(theirs.list_sandboxes().await.unwrap(), vec![listed(&their_handle, "team-b")]);

    // Corrupt or remove the creation time, then the whole owner file: such
    // sandboxes stay listed with the unknown fields None, never dropped.
    let canonical = base.0.canonicalize().unwrap();
    edit_owner_file(&canonical.join(&handles[0].id), "createdAt", Some(serde_json::json!("yesterday")));
    edit_owner_file(&canonical.join(&handles[1].id), "createdAt", None);
    edit_owner_file(&canonical.join(&handles[2].id), "createdAt", Some(serde_json::json!(-5)));
    std::fs::write(canonical.join(&handles[3].id).join("owner.json"), b"{ not json").unwrap();
    let unknown_owner =
        ListedSandbox { id: handles[3].id.clone(), created_at: None, owner: None, key: None, deleting: false };
    let mut expected: Vec<ListedSandbox> = handles[..3]
        .iter()
        .map(|handle| ListedSandbox { created_at: None, ..listed(handle, "team-a") })
        .chain([unknown_owner.clone()])
        .collect();
    expected.sort_by(|left, right| left.id.cmp(&right.id));
    assert_eq!(ours.list_sandboxes().await.unwrap(), expected);
    // Whose the unreadable one is nobody can tell: every owner lists it.
    let mut expected = vec![listed(&their_handle, "team-b"), unknown_owner];
    expected.sort_by(|left, right| left.id.cmp(&right.id));
    assert_eq!(theirs.list_sandboxes().await.unwrap(), expected);

    theirs.destroy(&their_handle.id).await.unwrap();
    // The damaged ones are cleaned up by `BaseDir`'s drop (destroy refuses them).
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_sandboxes_scans_thousands_of_directories() {
    let base = BaseDir::new("thousands");
    let provider = LocalProvider::new(base.config(IsolationRequest::ProcessGroup)).unwrap();
    // Directories as `create` lays them out, without processes.
    let mut expected = Vec::new();
    for index in 0..3000_u64 {
        let (owner, id) = if index % 3 == 0 {
            ("other", format!("sr-other-{index}"))
        } else {
            ("sandbox-reclaim", format!("sr-ours-{index}"))
        };
        let dir = base.0.join(&id);
        std::fs::create_dir_all(dir.join("work")).unwrap();
        let record = serde_json::json!({
            "owner": owner, "key": format!("key-{index}"), "createdAt": 1_700_000_000_000_u64 + index,
            "labels": {}, "isolation": "process-group",
        });
        std::fs::write(dir.join("owner.json"), serde_json::to_vec(&record).unwrap()).unwrap();
        if owner == "sandbox-reclaim" {
            expected.push(ListedSandbox {
                id,
                created_at: Some(1_700_000_000_000 + index),
                owner: Some(owner.into()),
                key: Some(format!("key-{index}")),
                deleting: false,
            });
        }
    }
    expected.sort_by(|left, right| left.id.cmp(&right.id));
    let started = Instant::now();
    assert_eq!(provider.list_sandboxes().await.unwrap(), expected);
    eprintln!("listed 3000 sandbox directories in {:?}", started.elapsed());
    assert_eq!(provider.list().await.unwrap().len(), 2000);
}
