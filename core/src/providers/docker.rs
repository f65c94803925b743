//! [`DockerProvider`]: sandboxes as containers, through the Docker Engine HTTP
//! API (Docker itself, or podman's compatible service).
//!
//! Every container carries three labels — [`LABEL_OWNER`], [`LABEL_KEY`],
//! [`LABEL_CREATED_AT`] — and a name derived from its key, so a retried
//! create finds the container instead of starting a second one. `destroy` and
//! `exec` inspect first and refuse a container whose owner label is not this
//! provider's namespace: handed a stranger's id, the provider never touches it.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use bollard::errors::Error as BollardError;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptions, InspectContainerOptions, ListContainersOptions, RemoveContainerOptions,
    StartContainerOptions,
};
use bollard::Docker;
use futures_util::StreamExt;

use super::{
    sandbox_name, validate_argv, validate_id, validate_key, validate_labels, validate_owner, ExecOutput, InvalidInput,
    Labels, ManagedSandboxProvider, SandboxHandle, DEFAULT_OWNER, LABEL_CREATED_AT, LABEL_KEY, LABEL_OWNER,
};
use crate::contract::errors::ProviderError;
use crate::contract::SandboxProvider;
use crate::model::fleet::ListedSandbox;
use crate::runtime::clock::now_millis;

/// How a [`DockerProvider`] connects and what containers it creates.
#[derive(Debug, Clone, PartialEq)]
pub struct DockerConfig {
    /// Image every sandbox runs; must already be present on the engine.
    pub image: String,
    /// Command that keeps the container alive; commands run with `exec`.
    /// Default `["sleep", "infinity"]` (busybox and coreutils both accept it).
    pub keep_alive: Vec<String>,
    /// Container network mode. Default `"none"`: no network at all.
    pub network_mode: String,
    /// CPU limit in CPUs (e.g. `0.5`); `None` for no limit.
    pub cpus: Option<f64>,
    /// Memory limit in bytes; `None` for no limit.
    pub memory_bytes: Option<i64>,
    /// Owner namespace written to [`LABEL_OWNER`]; only containers carrying
    /// it are listed, exec'd into or destroyed. Default [`DEFAULT_OWNER`].
    pub owner: String,
    /// Engine address (`unix:///path`, `tcp://host:port`, `http://...`);
    /// `None` uses `DOCKER_HOST`, else the default local socket.
    pub docker_host: Option<String>,
    /// The provider name instance records carry. Default `"docker"`.
    pub name: String,
}

impl DockerConfig {
    /// The defaults, running `image`.
    pub fn new(image: impl Into<String>) -> Self {
        Self {
            image: image.into(),
            keep_alive: vec!["sleep".into(), "infinity".into()],
            network_mode: "none".into(),
            cpus: None,
            memory_bytes: None,
            owner: DEFAULT_OWNER.into(),
            docker_host: None,
            name: "docker".into(),
        }
    }

    fn validate(&self) -> Result<(), InvalidInput> {
        if self.image.is_empty() || self.image.contains('\0') {
            return Err(InvalidInput::new("image", "must be a non-empty string without NUL"));
        }
        validate_argv("keepAlive", &self.keep_alive)?;
        if self.network_mode.is_empty() || self.network_mode.contains('\0') {
            return Err(InvalidInput::new("networkMode", "must be a non-empty string without NUL"));
        }
        if let Some(cpus) = self.cpus {
            if !(cpus.is_finite() && cpus > 0.0 && cpus <= 1_000_000.0) {
                return Err(InvalidInput::new("cpus", format!("must be a positive number of CPUs, got {cpus}")));
            }
        }
        if let Some(memory) = self.memory_bytes {
            // Docker's own floor; smaller values fail at create anyway.
            if memory < 6 * 1024 * 1024 {
                return Err(InvalidInput::new("memoryBytes", format!("must be at least 6 MiB, got {memory}")));
            }
        }
        validate_owner(&self.owner)?;
        if self.name.is_empty() {
            return Err(InvalidInput::new("name", "must be a non-empty string"));
        }
        Ok(())
    }
}

/// Sandboxes as containers on a Docker Engine API (Docker or podman).
///
/// Cheap to share behind an `Arc`; the underlying client is connection-pooled
/// and safe for concurrent use.
pub struct DockerProvider {
    docker: Docker,
    config: DockerConfig,
}

impl std::fmt::Debug for DockerProvider {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("DockerProvider").field("config", &self.config).finish_non_exhaustive()
    }
}

/// A failed Docker Engine API call: what was attempted, and the engine's (or
/// the transport's) message.
#[derive(Debug, thiserror::Error)]
#[error("docker: {action}: {message}")]
pub struct DockerError {
    /// What the provider was doing (`"inspect container sr-..."`).
    pub action: String,
    /// The engine's message, or the transport error.
    pub message: String,
    /// The HTTP status the engine answered with, if it answered.
    pub status: Option<u16>,
}

impl DockerError {
    fn new(action: impl Into<String>, error: BollardError) -> Self {
        let status = status_of(&error);
        let message = match error {
            BollardError::DockerResponseServerError { message, .. } => message,
            other => other.to_string(),
        };
        Self { action: action.into(), message, status }
    }
}

fn status_of(error: &BollardError) -> Option<u16> {
    match error {
        BollardError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

fn backend(action: impl Into<String>, error: BollardError) -> ProviderError {
    ProviderError::backend(DockerError::new(action, error))
}

impl DockerProvider {
    /// A provider for `config`. Connecting is lazy: this fails only on bad
    /// config or an unusable address (e.g. a unix socket that does not exist).
    pub fn new(config: DockerConfig) -> Result<Self, ProviderError> {
        config.validate()?;
        let docker = match &config.docker_host {
            Some(host) => Docker::connect_with_host(host),
            None => Docker::connect_with_defaults(),
        }
        .map_err(|error| backend("connect", error))?;
        Ok(Self { docker, config })
    }

    /// The configuration this provider was built with.
    pub fn config(&self) -> &DockerConfig {
        &self.config
    }

    /// The container name a sandbox for `key` gets.
    pub fn container_name(&self, key: &str) -> String {
        sandbox_name(&self.config.owner, key)
    }

    /// Checks the engine answers (`GET /_ping`).
    pub async fn ping(&self) -> Result<(), ProviderError> {
        self.docker.ping().await.map(|_| ()).map_err(|error| backend("ping", error))
    }

    /// The labels of container `id`, or `None` if it does not exist.
    async fn labels_of(&self, id: &str) -> Result<Option<Inspected>, ProviderError> {
        match self.docker.inspect_container(id, None::<InspectContainerOptions>).await {
            Ok(found) => Ok(Some(Inspected {
                id: found.id.unwrap_or_else(|| id.to_string()),
                labels: found.config.and_then(|config| config.labels).unwrap_or_default(),
                running: found.state.and_then(|state| state.running).unwrap_or(false),
            })),
            Err(error) if status_of(&error) == Some(404) => Ok(None),
            Err(error) => Err(backend(format!("inspect container {id}"), error)),
        }
    }

    /// The ownership guard: `Ok` only when the owner label is ours.
    fn check_owned(&self, requested: &str, inspected: &Inspected) -> Result<(), ProviderError> {
        match inspected.labels.get(super::LABEL_OWNER) {
            Some(owner) if *owner == self.config.owner => Ok(()),
            Some(owner) => Err(ProviderError::NotOwned {
                id: requested.to_string(),
                reason: format!("its `{LABEL_OWNER}` label is `{owner}`, not `{}`", self.config.owner),
            }),
            None => Err(ProviderError::NotOwned {
                id: requested.to_string(),
                reason: format!("it has no `{LABEL_OWNER}` label"),
            }),
        }
    }

    /// Returns the existing container for `key` (started if stopped), or
    /// `None` when there is none.
    async fn existing(&self, name: &str, key: &str) -> Result<Option<SandboxHandle>, ProviderError> {
        let Some(inspected) = self.labels_of(name).await? else { return Ok(None) };
        self.check_owned(name, &inspected)?;
        if inspected.labels.get(LABEL_KEY).map(String::as_str) != Some(key) {
            return Err(ProviderError::NotOwned {
                id: name.to_string(),
                reason: format!("it was created for another key, not `{key}`"),
            });
        }
        if !inspected.running {
            self.start(&inspected.id).await?;
        }
        Ok(Some(handle_from_labels(inspected.id, &inspected.labels).unwrap_or_else(|| SandboxHandle {
            key: key.to_string(),
            id: name.to_string(),
            created_at: 0,
        })))
    }

    async fn start(&self, id: &str) -> Result<(), ProviderError> {
        match self.docker.start_container(id, None::<StartContainerOptions>).await {
            // 304: already running (a concurrent create started it).
            Ok(()) => Ok(()),
            Err(error) if status_of(&error) == Some(304) => Ok(()),
            Err(error) => Err(backend(format!("start container {id}"), error)),
        }
    }

    fn create_body(&self, key: &str, labels: &Labels, created_at: u64) -> ContainerCreateBody {
        let mut all_labels: HashMap<String, String> = labels.clone().into_iter().collect();
        all_labels.insert(LABEL_OWNER.into(), self.config.owner.clone());
        all_labels.insert(LABEL_KEY.into(), key.into());
        all_labels.insert(LABEL_CREATED_AT.into(), created_at.to_string());
        ContainerCreateBody {
            image: Some(self.config.image.clone()),
            cmd: Some(self.config.keep_alive.clone()),
            labels: Some(all_labels),
            host_config: Some(HostConfig {
                network_mode: Some(self.config.network_mode.clone()),
                nano_cpus: self.config.cpus.map(|cpus| (cpus * 1e9).round() as i64),
                memory: self.config.memory_bytes,
                // An init reaps what exec'd commands leave behind.
                init: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Every container (running or not) carrying this provider's owner label,
    /// as `(id, labels)`: one `GET /containers/json` with a label filter,
    /// however many containers the engine holds.
    async fn owned_containers(&self) -> Result<Vec<(String, HashMap<String, String>)>, ProviderError> {
        let filters = HashMap::from([("label".to_string(), vec![format!("{LABEL_OWNER}={}", self.config.owner)])]);
        let options = ListContainersOptions { all: true, filters: Some(filters), ..Default::default() };
        let containers =
            self.docker.list_containers(Some(options)).await.map_err(|error| backend("list containers", error))?;
        Ok(containers
            .into_iter()
            .filter_map(|summary| Some((summary.id?, summary.labels.unwrap_or_default())))
            // Filter again: the label filter is the engine's, the guard is ours.
            .filter(|(_, labels)| labels.get(LABEL_OWNER) == Some(&self.config.owner))
            .collect())
    }

    /// Waits until container `id` is gone after a removal the engine said is
    /// already in progress.
    async fn wait_gone(&self, id: &str) -> Result<(), ProviderError> {
        for _ in 0..100 {
            if self.labels_of(id).await?.is_none() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(ProviderError::backend(format!("docker: container {id} was still present 10 s after its removal began")))
    }
}

struct Inspected {
    id: String,
    labels: HashMap<String, String>,
    running: bool,
}

/// A container as the orphan sweep sees it: a missing or unparsable
/// [`LABEL_CREATED_AT`] is `None` (never 0), so the sweep can fail closed.
fn listed_from_labels(id: String, labels: &HashMap<String, String>) -> ListedSandbox {
    ListedSandbox {
        id,
        created_at: labels.get(LABEL_CREATED_AT).and_then(|text| text.parse().ok()),
        owner: labels.get(LABEL_OWNER).cloned(),
        key: labels.get(LABEL_KEY).cloned(),
        deleting: false,
    }
}

fn handle_from_labels(id: String, labels: &HashMap<String, String>) -> Option<SandboxHandle> {
    let key = labels.get(LABEL_KEY)?.clone();
    let created_at = labels.get(LABEL_CREATED_AT).and_then(|text| text.parse().ok()).unwrap_or(0);
    Some(SandboxHandle { key, id, created_at })
}

#[async_trait]
impl SandboxProvider for DockerProvider {
    fn name(&self) -> &str {
        &self.config.name
    }

    /// Removes container `id` (forcefully, with its anonymous volumes) after
    /// checking its owner label. A container that does not exist is success.
    async fn destroy(&self, id: &str) -> Result<(), ProviderError> {
        validate_id(id)?;
        let Some(inspected) = self.labels_of(id).await? else { return Ok(()) };
        self.check_owned(id, &inspected)?;
        let options = RemoveContainerOptions { force: true, v: true, ..Default::default() };
        match self.docker.remove_container(&inspected.id, Some(options)).await {
            Ok(()) => Ok(()),
            Err(error) if status_of(&error) == Some(404) => Ok(()),
            // Another destroy is already removing it: wait for that instead.
            Err(error) if status_of(&error) == Some(409) => self.wait_gone(&inspected.id).await,
            Err(error) => Err(backend(format!("remove container {id}"), error)),
        }
    }

    fn can_list(&self) -> bool {
        true
    }

    /// The configured owner namespace: the orphan sweep destroys only
    /// sandboxes listed under it, whatever the pass's `owner` option says.
    fn owner(&self) -> Option<&str> {
        Some(&self.config.owner)
    }

    /// Every container carrying this provider's owner label, running or not,
    /// in one engine call. Unlike [`ManagedSandboxProvider::list`], a
    /// container without a key or with a missing or unparsable creation-time
    /// label is included, its unknown fields `None`. Ordered by id.
    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        let mut listed: Vec<ListedSandbox> =
            self.owned_containers().await?.into_iter().map(|(id, labels)| listed_from_labels(id, &labels)).collect();
        listed.sort_by(|left, right| left.id.cmp(&right.id));
        Ok(listed)
    }
}

#[async_trait]
impl ManagedSandboxProvider for DockerProvider {
    async fn create(&self, key: &str, labels: &Labels) -> Result<SandboxHandle, ProviderError> {
        validate_key(key)?;
        validate_labels(labels)?;
        let name = self.container_name(key);
        if let Some(handle) = self.existing(&name, key).await? {
            return Ok(handle);
        }
        let created_at = now_millis();
        let options = CreateContainerOptions { name: Some(name.clone()), ..Default::default() };
        let created = match self.docker.create_container(Some(options), self.create_body(key, labels, created_at)).await
        {
            Ok(created) => created,
            // A concurrent create for the same key may have won the name:
            // Docker answers 409, podman 500 "already in use". Either way the
            // container that now holds the name is the answer, if it is ours.
            Err(error) => {
                return match self.existing(&name, key).await? {
                    Some(handle) => Ok(handle),
                    None => Err(backend(format!("create container {name}"), error)),
                };
            }
        };
        if let Err(error) = self.start(&created.id).await {
            // Never leave a created-but-dead container behind.
            let options = RemoveContainerOptions { force: true, v: true, ..Default::default() };
            let _ = self.docker.remove_container(&created.id, Some(options)).await;
            return Err(error);
        }
        Ok(SandboxHandle { key: key.to_string(), id: created.id, created_at })
    }

    async fn list(&self) -> Result<Vec<SandboxHandle>, ProviderError> {
        let mut handles: Vec<SandboxHandle> = self
            .owned_containers()
            .await?
            .into_iter()
            .filter_map(|(id, labels)| handle_from_labels(id, &labels))
            .collect();
        handles.sort_by(|left, right| left.created_at.cmp(&right.created_at).then_with(|| left.key.cmp(&right.key)));
        Ok(handles)
    }

    async fn exec(&self, id: &str, argv: &[String]) -> Result<ExecOutput, ProviderError> {
        validate_id(id)?;
        validate_argv("argv", argv)?;
        let Some(inspected) = self.labels_of(id).await? else {
            return Err(ProviderError::backend(format!("docker: exec in {id}: no such container")));
        };
        self.check_owned(id, &inspected)?;
        let options = CreateExecOptions {
            cmd: Some(argv.to_vec()),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            ..Default::default()
        };
        let exec = self
            .docker
            .create_exec(&inspected.id, options)
            .await
            .map_err(|error| backend(format!("create exec in {id}"), error))?;
        let started = self
            .docker
            .start_exec(&exec.id, Some(StartExecOptions { detach: false, ..Default::default() }))
            .await
            .map_err(|error| backend(format!("start exec in {id}"), error))?;
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        if let StartExecResults::Attached { mut output, .. } = started {
            while let Some(chunk) = output.next().await {
                match chunk.map_err(|error| backend(format!("read exec output in {id}"), error))? {
                    bollard::container::LogOutput::StdErr { message } => stderr.extend_from_slice(&message),
                    bollard::container::LogOutput::StdOut { message }
                    | bollard::container::LogOutput::Console { message } => stdout.extend_from_slice(&message),
                    bollard::container::LogOutput::StdIn { .. } => {}
                }
            }
        }
        let exit_code = self.exit_code(&exec.id, id).await?;
        Ok(ExecOutput { stdout, stderr, exit_code })
    }
}

impl DockerProvider {
    /// The exit code of a finished exec. Engines may still report it running
    /// for a moment after its output stream closed, so poll briefly.
    async fn exit_code(&self, exec_id: &str, id: &str) -> Result<i64, ProviderError> {
        for _ in 0..200 {
            let inspected = self
                .docker
                .inspect_exec(exec_id)
                .await
                .map_err(|error| backend(format!("inspect exec in {id}"), error))?;
            if inspected.running != Some(true) {
                if let Some(code) = inspected.exit_code {
                    return Ok(code);
                }
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        Err(ProviderError::backend(format!("docker: exec in {id}: no exit code 5 s after its output ended")))
    }
}
