//! The managed providers (Docker, local) for Python: construction is
//! synchronous (config is checked first, naming the field), every operation
//! returns an awaitable on the shared tokio runtime. The package wraps them
//! in `DockerProvider` / `LocalProvider` (`sandbox_reclaim/_providers.py`).

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use sandbox_reclaim::{DockerConfig, DockerProvider, Labels, ManagedSandboxProvider, SandboxProvider};
#[cfg(unix)]
use sandbox_reclaim::{IsolationRequest, LocalConfig, LocalProvider};

use crate::bridge::{awaitable, runtime};
use crate::errors::provider_error;
use crate::hints::{Awaitable, TypingList};

/// One of the core's managed providers.
pub enum Managed {
    Docker(DockerProvider),
    #[cfg(unix)]
    Local(LocalProvider),
}

impl Managed {
    /// The provider with its create, list and exec.
    pub fn provider(&self) -> &dyn ManagedSandboxProvider {
        match self {
            Self::Docker(provider) => provider,
            #[cfg(unix)]
            Self::Local(provider) => provider,
        }
    }

    /// The owner namespace its sandboxes carry (label / `owner.json`).
    pub fn owner(&self) -> &str {
        match self {
            Self::Docker(provider) => &provider.config().owner,
            #[cfg(unix)]
            Self::Local(provider) => &provider.config().owner,
        }
    }

    /// The provider as the reclaimer and `retry_leaks` see it.
    pub fn destroyer(&self) -> &dyn SandboxProvider {
        match self {
            Self::Docker(provider) => provider,
            #[cfg(unix)]
            Self::Local(provider) => provider,
        }
    }
}

/// A sandbox as `create` and `list` answer it: `(key, id, created_at)`.
type Handle = (String, String, u64);

/// A sandbox as `list_sandboxes` answers it: `(id, created_at, owner, key)`.
type Listed = (String, Option<u64>, Option<String>, Option<String>);

/// A native Docker or local provider handle; operations return awaitables.
/// `sandbox_reclaim` wraps it.
#[pyclass(name = "ManagedProvider", module = "sandbox_reclaim._native", frozen)]
pub struct ManagedProvider {
    pub(crate) inner: Arc<Managed>,
}

/// A `DockerProvider` for this configuration (connecting is lazy).
#[pyfunction]
#[pyo3(signature = (image, keep_alive, network_mode, cpus, memory_bytes, owner, name, docker_host, /))]
#[allow(clippy::too_many_arguments)]
pub fn docker_provider(
    image: String,
    keep_alive: Option<Vec<String>>,
    network_mode: Option<String>,
    cpus: Option<f64>,
    memory_bytes: Option<i64>,
    owner: Option<String>,
    name: Option<String>,
    docker_host: Option<String>,
) -> PyResult<ManagedProvider> {
    // What is `None` keeps the core's default (`DockerConfig::new`).
    let mut config = DockerConfig::new(image);
    if let Some(keep_alive) = keep_alive {
        config.keep_alive = keep_alive;
    }
    if let Some(network_mode) = network_mode {
        config.network_mode = network_mode;
    }
    config.cpus = cpus;
    config.memory_bytes = memory_bytes;
    if let Some(owner) = owner {
        config.owner = owner;
    }
    if let Some(name) = name {
        config.name = name;
    }
    config.docker_host = docker_host;
    docker_from_config(config)
}

/// A `DockerProvider` for a config the core built (the command's `--docker`).
fn docker_from_config(config: DockerConfig) -> PyResult<ManagedProvider> {
    // The client may look for a runtime when it is built.
    let _runtime = runtime()?.enter();
    let provider = DockerProvider::new(config).map_err(provider_error)?;
    Ok(ManagedProvider { inner: Arc::new(Managed::Docker(provider)) })
}

/// A `LocalProvider` for this configuration (creates `base_dir`, probes namespaces). Unix only.
#[cfg(unix)]
#[pyfunction]
#[pyo3(signature = (base_dir, owner, keep_alive, isolation, name, /))]
pub fn local_provider(
    py: Python<'_>,
    base_dir: PathBuf,
    owner: Option<String>,
    keep_alive: Option<Vec<String>>,
    isolation: Option<&str>,
    name: Option<String>,
) -> PyResult<ManagedProvider> {
    // What is `None` keeps the core's default (`LocalConfig::new`).
    let mut config = LocalConfig::new(base_dir);
    if let Some(isolation) = isolation {
        config.isolation = IsolationRequest::parse(isolation, "`isolation`").map_err(PyValueError::new_err)?;
    }
    if let Some(owner) = owner {
        config.owner = owner;
    }
    if let Some(keep_alive) = keep_alive {
        config.keep_alive = keep_alive;
    }
    if let Some(name) = name {
        config.name = name;
    }
    local_from_config(py, config)
}

/// A `LocalProvider` for a config the core built (the command's `--local`).
#[cfg(unix)]
fn local_from_config(py: Python<'_>, config: LocalConfig) -> PyResult<ManagedProvider> {
    // The namespace probe runs a process: let other Python threads run meanwhile.
    let provider = py.detach(|| LocalProvider::new(config)).map_err(provider_error)?;
    Ok(ManagedProvider { inner: Arc::new(Managed::Local(provider)) })
}

/// The command plan's `--docker` and `--local` providers, configured as the
/// binary configures them, in that order.
#[pyfunction]
#[pyo3(signature = (plan, /))]
pub fn host_managed_providers(py: Python<'_>, plan: &str) -> PyResult<Vec<ManagedProvider>> {
    let configs = sandbox_reclaim_cli::host::host_managed(plan).map_err(PyValueError::new_err)?;
    let mut built = Vec::new();
    if let Some(docker) = configs.docker {
        built.push(docker_from_config(docker)?);
    }
    #[cfg(unix)]
    if let Some(local) = configs.local {
        built.push(local_from_config(py, local)?);
    }
    #[cfg(not(unix))]
    let _ = py;
    Ok(built)
}

#[pymethods]
impl ManagedProvider {
    /// The provider name instance records carry.
    #[getter]
    fn name(&self) -> &str {
        self.inner.destroyer().name()
    }

    /// Awaitable destroying sandbox `sandbox_id` (already gone is success).
    #[pyo3(signature = (sandbox_id, /))]
    fn destroy<'py>(&self, py: Python<'py>, sandbox_id: String) -> PyResult<Awaitable<'py, ()>> {
        let inner = self.inner.clone();
        awaitable(py, async move { inner.destroyer().destroy(&sandbox_id).await }, |py, destroyed| {
            destroyed.map_err(provider_error)?;
            Ok(py.None())
        })
    }

    /// Awaitable of `(key, id, created_at)` of the sandbox for `key`.
    #[pyo3(signature = (key, labels=None, /))]
    fn create<'py>(&self, py: Python<'py>, key: String, labels: Option<Labels>) -> PyResult<Awaitable<'py, Handle>> {
        let inner = self.inner.clone();
        let labels = labels.unwrap_or_default();
        awaitable(py, async move { inner.provider().create(&key, &labels).await }, |py, created| {
            let handle = created.map_err(provider_error)?;
            (handle.key, handle.id, handle.created_at).into_py_any(py)
        })
    }

    /// Awaitable of `[(key, id, created_at), ...]`, oldest first.
    fn list<'py>(&self, py: Python<'py>) -> PyResult<Awaitable<'py, TypingList<Handle>>> {
        let inner = self.inner.clone();
        awaitable(py, async move { inner.provider().list().await }, |py, listed| {
            let handles = listed.map_err(provider_error)?;
            handles
                .into_iter()
                .map(|handle| (handle.key, handle.id, handle.created_at))
                .collect::<Vec<_>>()
                .into_py_any(py)
        })
    }

    /// The owner namespace its sandboxes carry.
    #[getter]
    fn owner(&self) -> &str {
        self.inner.owner()
    }

    /// Awaitable of `[(id, created_at | None, owner | None, key | None), ...]`
    /// for the orphan sweep, ordered by id: every sandbox of this owner,
    /// unreadable ones included with their unknown fields `None` (the sweep
    /// fails closed on them).
    fn list_sandboxes<'py>(&self, py: Python<'py>) -> PyResult<Awaitable<'py, TypingList<Listed>>> {
        let inner = self.inner.clone();
        awaitable(py, async move { inner.destroyer().list_sandboxes().await }, |py, listed| {
            let sandboxes = listed.map_err(provider_error)?;
            sandboxes
                .into_iter()
                .map(|sandbox| (sandbox.id, sandbox.created_at, sandbox.owner, sandbox.key))
                .collect::<Vec<_>>()
                .into_py_any(py)
        })
    }

    /// Awaitable of `(stdout, stderr, exit_code)` of `argv` run in `sandbox_id`.
    #[pyo3(signature = (sandbox_id, argv, /))]
    fn exec<'py>(
        &self,
        py: Python<'py>,
        sandbox_id: String,
        argv: Vec<String>,
    ) -> PyResult<Awaitable<'py, (String, String, i64)>> {
        let inner = self.inner.clone();
        awaitable(py, async move { inner.provider().exec(&sandbox_id, &argv).await }, |py, ran| {
            let output = ran.map_err(provider_error)?;
            (output.stdout_text(), output.stderr_text(), output.exit_code).into_py_any(py)
        })
    }

    /// The local provider's isolation (`"namespaces"` / `"process-group"`); `None` for Docker.
    fn isolation(&self) -> Option<&'static str> {
        match self.inner.as_ref() {
            #[cfg(unix)]
            Managed::Local(provider) => Some(provider.isolation().as_str()),
            Managed::Docker(_) => None,
        }
    }
}
