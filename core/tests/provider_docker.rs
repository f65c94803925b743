//! `DockerProvider` against a real Docker Engine API (podman's service here).
//!
//! Needs `DOCKER_HOST` (and `SANDBOX_RECLAIM_TEST_IMAGE`, default
//! `sandbox-reclaim/busybox:latest`): `eval "$(scripts/podman.sh start /tmp/sr-podman)"`.
//! Without them every test FAILS: a missing engine is never a pass.
#![cfg(feature = "docker")]

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use sandbox_reclaim::providers::{LABEL_CREATED_AT, LABEL_KEY, LABEL_OWNER};
use sandbox_reclaim::{
    reclaim_sandbox, DockerConfig, DockerProvider, InMemorySandboxInstanceStore, InvalidInput, Labels, ListedSandbox,
    ManagedSandboxProvider, ProviderError, ReclaimOptions, ReclaimOutcome, RunRecord, RunStatus, SandboxInstanceRecord,
    SandboxInstanceStore, SandboxProvider,
};

fn docker_host() -> String {
    match std::env::var("DOCKER_HOST") {
        Ok(host) if !host.is_empty() => host,
        _ => panic!(
            "DOCKER_HOST is not set: the Docker provider tests need a Docker Engine API. \
             Start podman's with `eval \"$(scripts/podman.sh start /tmp/sr-podman)\"` (or run `make test`)."
        ),
    }
}

fn image() -> String {
    std::env::var("SANDBOX_RECLAIM_TEST_IMAGE").unwrap_or_else(|_| "sandbox-reclaim/busybox:latest".into())
}

/// A namespace no other test (or earlier run) uses, so lists are exact.
fn unique_owner(test: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("sr-test-{test}-{}-{nanos}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

fn provider(owner: &str) -> DockerProvider {
    let config = DockerConfig { owner: owner.into(), ..DockerConfig::new(image()) };
    let provider = DockerProvider::new(config)
        .unwrap_or_else(|error| panic!("cannot reach the Docker Engine API at DOCKER_HOST={}: {error}", docker_host()));
    provider
}

/// The `podman` CLI against the same service, as an independent witness.
fn podman(args: &[&str]) -> String {
    let output = Command::new("podman").arg("--url").arg(docker_host()).args(args).output().expect("run podman");
    assert!(output.status.success(), "podman {args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// Ids (`podman ps -a`) of every container, running or not, carrying `owner`.
fn containers_of(owner: &str) -> Vec<String> {
    podman(&["ps", "-a", "--no-trunc", "--format", "{{.ID}}", "--filter", &format!("label={LABEL_OWNER}={owner}")])
        .lines()
        .map(str::to_string)
        .collect()
}

fn running(id: &str) -> bool {
    podman(&["inspect", "--format", "{{.State.Running}}", id]).trim() == "true"
}

/// Removes the containers a test started by hand, even when it fails.
struct Strangers(Vec<String>);

impl Drop for Strangers {
    fn drop(&mut self) {
        for id in &self.0 {
            let _ = Command::new("podman").arg("--url").arg(docker_host()).args(["rm", "-f", "-t", "0", id]).output();
        }
    }
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| word.to_string()).collect()
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

fn instance(key: &str, provider: &str, id: &str) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: key.into(),
        provider: provider.into(),
        provider_sandbox_id: id.into(),
        latest_snapshot_id: None,
        thread_id: format!("thread-{key}"),
        latest_run_id: None,
        updated_at: 1,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_sandboxes_created_listed_execd_reclaimed_and_gone() {
    let owner = unique_owner("life");
    let provider = provider(&owner);
    provider.ping().await.expect("the engine answers /_ping");
    let keys = ["run-a", "run/b with spaces", "RUN-ç"];
    let labels = Labels::from([("team".to_string(), "agents".to_string())]);
    let mut handles = Vec::new();
    for key in keys {
        handles.push(provider.create(key, &labels).await.unwrap());
    }
    // A retried create returns the same container, not a second one.
    assert_eq!(provider.create(keys[0], &labels).await.unwrap(), handles[0]);
    assert_eq!(containers_of(&owner).len(), 3);

    let mut listed = provider.list().await.unwrap();
    listed.sort_by(|left, right| left.key.cmp(&right.key));
    let mut expected = handles.clone();
    expected.sort_by(|left, right| left.key.cmp(&right.key));
    assert_eq!(listed, expected);

    // Labels, name, network and the keep-alive as podman sees them.
    let inspect = podman(&[
        "inspect",
        "--format",
        "{{json .Config.Labels}}|{{.Name}}|{{.HostConfig.NetworkMode}}",
        &handles[1].id,
    ]);
    let mut parts = inspect.trim().splitn(3, '|');
    let container_labels: serde_json::Value = serde_json::from_str(parts.next().unwrap()).unwrap();
    assert_eq!(container_labels[LABEL_OWNER], owner.as_str());
    assert_eq!(container_labels[LABEL_KEY], keys[1]);
    assert_eq!(container_labels[LABEL_CREATED_AT], handles[1].created_at.to_string().as_str());
    assert_eq!(container_labels["team"], "agents");
    assert_eq!(parts.next().unwrap().trim_start_matches('/'), provider.container_name(keys[1]));
    assert_eq!(parts.next().unwrap(), "none");

    let output = provider.exec(&handles[0].id, &argv(&["sh", "-c", "echo out; echo err >&2; exit 3"])).await.unwrap();
    assert_eq!((output.stdout_text().as_str(), output.stderr_text().as_str(), output.exit_code), ("out\n", "err\n", 3));
    let interfaces = provider.exec(&handles[0].id, &argv(&["ls", "/sys/class/net"])).await.unwrap();
    assert_eq!(interfaces.stdout_text().split_whitespace().collect::<Vec<_>>(), ["lo"], "network mode none");

    let store = InMemorySandboxInstanceStore::new();
    let mut runs = Vec::new();
    for (index, handle) in handles.iter().enumerate() {
        store.upsert(&instance(&handle.key, provider.name(), &handle.id)).await.unwrap();
        runs.push(RunRecord::new(format!("run-{index}"), "thread", RunStatus::Completed).with_sandbox_key(&handle.key));
    }
    let options = ReclaimOptions { provider: &provider, instances: &store, logger: None, destroy_timeout: None };
    for run in &runs {
        assert_eq!(reclaim_sandbox(run, options).await.unwrap(), ReclaimOutcome::Destroyed);
        assert_eq!(reclaim_sandbox(run, options).await.unwrap(), ReclaimOutcome::NotFound);
    }
    assert_eq!(provider.list().await.unwrap(), Vec::new());
    // Idempotent: destroying what is gone is success.
    for handle in &handles {
        provider.destroy(&handle.id).await.unwrap();
        provider.destroy(&provider.container_name(&handle.key)).await.unwrap();
    }
    assert_eq!(containers_of(&owner), Vec::<String>::new(), "podman ps -a still shows our containers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_to_destroy_a_strangers_container() {
    let owner = unique_owner("guard");
    let provider = provider(&owner);
    let suffix = unique_owner("x");
    let mut strangers = Strangers(Vec::new());
    // One with no owner label at all, one owned by another namespace.
    for (name, label) in [(format!("stranger-{suffix}"), None), (format!("other-{suffix}"), Some("someone-else"))] {
        let mut args = vec!["run", "-d", "--network", "none", "--name", &name];
        let label_arg = label.map(|owner| format!("{LABEL_OWNER}={owner}"));
        if let Some(label_arg) = &label_arg {
            args.extend(["--label", label_arg]);
        }
        let image = image();
        args.extend([image.as_str(), "sleep", "infinity"]);
        strangers.0.push(podman(&args).trim().to_string());
    }
    for id in strangers.0.clone() {
        for target in [id.clone(), id[..12].to_string()] {
            let error = provider.destroy(&target).await.unwrap_err();
            assert!(matches!(&error, ProviderError::NotOwned { id: refused, .. } if *refused == target), "{error}");
            let error = provider.exec(&target, &argv(&["true"])).await.unwrap_err();
            assert!(matches!(error, ProviderError::NotOwned { .. }), "{error}");
        }
        // Through the reclaimer too: destroy-failed, and the container lives.
        let store = InMemorySandboxInstanceStore::new();
        store.upsert(&instance("k", provider.name(), &id)).await.unwrap();
        let run = RunRecord::new("r", "t", RunStatus::Failed).with_sandbox_key("k");
        let options = ReclaimOptions { provider: &provider, instances: &store, logger: None, destroy_timeout: None };
        assert_eq!(reclaim_sandbox(&run, options).await.unwrap(), ReclaimOutcome::DestroyFailed);
        assert!(running(&id), "a refused destroy must leave the container running");
        // podman-remote's exec can lose a short output under load (exit 0,
        // empty stdout): ask a few times; a dead container never answers.
        let answers: Vec<String> = (0..5).map(|_| podman(&["exec", &id, "echo", "alive"]).trim().to_owned()).collect();
        assert!(answers.iter().any(|answer| answer == "alive"), "the container answers: {answers:?}");
    }
    assert_eq!(provider.list().await.unwrap(), Vec::new(), "strangers are not listed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_of_one_key_start_one_container() {
    let owner = unique_owner("same");
    let provider = Arc::new(provider(&owner));
    let tasks: Vec<_> = (0..5)
        .map(|_| {
            let provider = provider.clone();
            tokio::spawn(async move { provider.create("one-key", &Labels::new()).await })
        })
        .collect();
    let mut ids = Vec::new();
    for task in tasks {
        ids.push(task.await.unwrap().unwrap().id);
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(containers_of(&owner), ids);
    assert!(running(&ids[0]));
    // A stopped sandbox is started again by a retried create.
    podman(&["stop", "-t", "0", &ids[0]]);
    assert!(!running(&ids[0]));
    assert_eq!(provider.create("one-key", &Labels::new()).await.unwrap().id, ids[0]);
    assert!(running(&ids[0]));
    // Two concurrent destroys of one container both succeed.
    let (first, second) = tokio::join!(provider.destroy(&ids[0]), provider.destroy(&ids[0]));
    first.unwrap();
    second.unwrap();
    assert_eq!(containers_of(&owner), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_are_applied() {
    let owner = unique_owner("limits");
    let config = DockerConfig {
        owner: owner.clone(),
        cpus: Some(0.5),
        memory_bytes: Some(64 * 1024 * 1024),
        ..DockerConfig::new(image())
    };
    let provider = DockerProvider::new(config).unwrap();
    let handle = provider.create("limited", &Labels::new()).await.unwrap();
    let limits = podman(&["inspect", "--format", "{{.HostConfig.NanoCpus}} {{.HostConfig.Memory}}", &handle.id]);
    provider.destroy(&handle.id).await.unwrap();
    assert_eq!(limits.trim(), format!("500000000 {}", 64 * 1024 * 1024));
    assert_eq!(containers_of(&owner), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_and_engine_errors_are_typed() {
    let owner = unique_owner("bad");
    let provider = provider(&owner);
    assert_eq!(invalid_field(provider.create("", &Labels::new()).await.unwrap_err()), "key");
    let reserved = Labels::from([(LABEL_OWNER.to_string(), "me".to_string())]);
    assert_eq!(invalid_field(provider.create("k", &reserved).await.unwrap_err()), "labels");
    for id in ["", "../containers/json", "a/b", "x?all=1"] {
        assert_eq!(invalid_field(provider.destroy(id).await.unwrap_err()), "id", "{id:?}");
    }
    assert_eq!(invalid_field(provider.exec("abc", &[]).await.unwrap_err()), "argv");
    assert_eq!(invalid_field(DockerProvider::new(DockerConfig::new("")).unwrap_err()), "image");
    let no_cpu = DockerConfig { cpus: Some(-1.0), ..DockerConfig::new(image()) };
    assert_eq!(invalid_field(DockerProvider::new(no_cpu).unwrap_err()), "cpus");
    assert_eq!(containers_of(&owner), Vec::<String>::new(), "bad input must not create anything");

    // Gone is success; a missing image is the engine's message, typed.
    provider.destroy("sr-never-existed-0123456789").await.unwrap();
    let missing =
        DockerProvider::new(DockerConfig { owner: owner.clone(), ..DockerConfig::new("sandbox-reclaim/missing:none") })
            .unwrap();
    let error = missing.create("k", &Labels::new()).await.unwrap_err();
    let ProviderError::Backend(source) = &error else { panic!("expected Backend, got {error}") };
    let docker = source.downcast_ref::<sandbox_reclaim::providers::docker::DockerError>().expect("a DockerError");
    assert!(docker.status.is_some(), "{docker}");
    assert!(!docker.message.is_empty());
    assert_eq!(containers_of(&owner), Vec::<String>::new());
    // An unreachable engine is an error at the first call, not a panic.
    let nowhere = DockerProvider::new(DockerConfig {
        docker_host: Some("tcp://127.0.0.1:1".into()),
        ..DockerConfig::new(image())
    })
    .unwrap();
    assert!(matches!(nowhere.list().await, Err(ProviderError::Backend(_))));
    assert!(DockerProvider::new(DockerConfig {
        docker_host: Some("unix:///nonexistent.sock".into()),
        ..DockerConfig::new(image())
    })
    .is_err());
}

/// Creates (without starting) a container carrying exactly `labels`, through
/// the engine API directly, as something other than the provider would.
async fn create_labelled(name: &str, labels: &[(&str, &str)]) -> String {
    use bollard::models::{ContainerCreateBody, HostConfig};
    use bollard::query_parameters::CreateContainerOptions;
    let docker = bollard::Docker::connect_with_host(&docker_host()).expect("connect to DOCKER_HOST");
    let body = ContainerCreateBody {
        image: Some(image()),
        cmd: Some(argv(&["sleep", "infinity"])),
        labels: Some(labels.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect()),
        host_config: Some(HostConfig { network_mode: Some("none".into()), ..Default::default() }),
        ..Default::default()
    };
    let options = CreateContainerOptions { name: Some(name.into()), ..Default::default() };
    docker.create_container(Some(options), body).await.expect("create a labelled container").id
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

fn by_id(mut listed: Vec<ListedSandbox>) -> Vec<ListedSandbox> {
    listed.sort_by(|left, right| left.id.cmp(&right.id));
    listed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_sandboxes_reports_its_owners_containers_and_unknowns_as_none() {
    let (owner, other) = (unique_owner("listing"), unique_owner("listing-other"));
    let (ours, theirs) = (provider(&owner), provider(&other));
    assert!(ours.can_list());
    assert_eq!(ours.list_sandboxes().await.unwrap(), Vec::new());

    let mut handles = Vec::new();
    for key in ["run-1", "run/2 with spaces"] {
        handles.push(ours.create(key, &Labels::new()).await.unwrap());
    }
    let their_handle = theirs.create("run-1", &Labels::new()).await.unwrap();
    let mut cleanup = Strangers(vec![their_handle.id.clone()]);
    cleanup.0.extend(handles.iter().map(|handle| handle.id.clone()));
    // A stopped container is still a sandbox to sweep.
    podman(&["stop", "-t", "0", &handles[1].id]);

    let expected = by_id(handles.iter().map(|handle| listed(handle, &owner)).collect());
    assert_eq!(ours.list_sandboxes().await.unwrap(), expected, "only ours, with key, owner and created_at");
    assert_eq!(theirs.list_sandboxes().await.unwrap(), vec![listed(&their_handle, &other)]);

    // Ours by label, but with no creation time, an unparsable one, or no key:
    // listed with the unknown fields None, never dropped or defaulted to 0.
    let suffix = unique_owner("x");
    let no_created_at =
        create_labelled(&format!("no-created-{suffix}"), &[(LABEL_OWNER, &owner), (LABEL_KEY, "k-1")]).await;
    cleanup.0.push(no_created_at.clone());
    let bad_created_at = create_labelled(
        &format!("bad-created-{suffix}"),
        &[(LABEL_OWNER, &owner), (LABEL_KEY, "k-2"), (LABEL_CREATED_AT, "yesterday")],
    )
    .await;
    cleanup.0.push(bad_created_at.clone());
    let no_key = create_labelled(&format!("no-key-{suffix}"), &[(LABEL_OWNER, &owner)]).await;
    cleanup.0.push(no_key.clone());
    let unknown = |id: &str, key: Option<&str>| ListedSandbox {
        id: id.to_string(),
        created_at: None,
        owner: Some(owner.clone()),
        key: key.map(str::to_string),
        deleting: false,
    };
    let mut expected = expected;
    expected.extend([
        unknown(&no_created_at, Some("k-1")),
        unknown(&bad_created_at, Some("k-2")),
        unknown(&no_key, None),
    ]);
    assert_eq!(ours.list_sandboxes().await.unwrap(), by_id(expected));
    assert_eq!(theirs.list_sandboxes().await.unwrap(), vec![listed(&their_handle, &other)]);

    // They carry our owner label, so destroy takes them; then nothing is left.
    for id in &cleanup.0 {
        let provider = if *id == their_handle.id { &theirs } else { &ours };
        provider.destroy(id).await.unwrap();
    }
    assert_eq!(ours.list_sandboxes().await.unwrap(), Vec::new());
    assert_eq!(containers_of(&owner), Vec::<String>::new());
    assert_eq!(containers_of(&other), Vec::<String>::new());
}
