//! The hosted providers (E2B, Daytona, Vercel) for Python: construction is synchronous
//! (config checked first, naming the field; nothing is sent), every call
//! returns an awaitable on the shared tokio runtime. Cancelling the awaitable
//! (a destroy's deadline) drops the HTTP request. The package wraps them in
//! `E2bProvider`, `DaytonaProvider` and `VercelProvider`
//! (`sandbox_reclaim/_providers.py`).

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use sandbox_reclaim::providers::{
    owner_labels as core_owner_labels, DaytonaConfig, DaytonaProvider, E2bConfig, E2bProvider, VercelConfig,
    VercelProvider,
};
use sandbox_reclaim::{HostedSandboxProvider, Labels};

use crate::bridge::{awaitable, runtime};
use crate::errors::{invalid_input, provider_error};

/// A native hosted provider handle; `sandbox_reclaim` wraps it.
#[pyclass(name = "HostedProvider", module = "sandbox_reclaim._native", frozen)]
pub struct HostedProvider {
    pub(crate) inner: Arc<dyn HostedSandboxProvider>,
    owner: String,
}

/// An `E2bProvider` (reads `E2B_API_KEY` / `E2B_API_URL` when not given).
#[pyfunction]
#[pyo3(signature = (name, owner, api_key, api_url, page_size, sweep_unlabelled, request_timeout))]
pub fn e2b_provider(
    name: String,
    owner: String,
    api_key: Option<String>,
    api_url: Option<String>,
    page_size: u32,
    sweep_unlabelled: bool,
    request_timeout: f64,
) -> PyResult<HostedProvider> {
    let request_timeout = seconds(request_timeout)?;
    let config =
        E2bConfig { name, owner: owner.clone(), api_key, api_url, page_size, sweep_unlabelled, request_timeout };
    hosted(|| E2bProvider::new(config), owner)
}

/// A `DaytonaProvider` (reads `DAYTONA_API_KEY` / `DAYTONA_API_URL` when not given).
#[pyfunction]
#[pyo3(signature = (name, owner, api_key, api_url, page_size, sweep_unlabelled, request_timeout))]
pub fn daytona_provider(
    name: String,
    owner: String,
    api_key: Option<String>,
    api_url: Option<String>,
    page_size: u32,
    sweep_unlabelled: bool,
    request_timeout: f64,
) -> PyResult<HostedProvider> {
    let request_timeout = seconds(request_timeout)?;
    let config =
        DaytonaConfig { name, owner: owner.clone(), api_key, api_url, page_size, sweep_unlabelled, request_timeout };
    hosted(|| DaytonaProvider::new(config), owner)
}

/// A `VercelProvider` (reads `VERCEL_TOKEN` / `VERCEL_TEAM_ID` / `VERCEL_PROJECT_ID` when not given).
#[pyfunction]
#[pyo3(signature = (name, owner, api_key, team_id, project_id, api_url, page_size, sweep_unlabelled, request_timeout))]
#[allow(clippy::too_many_arguments)]
pub fn vercel_provider(
    name: String,
    owner: String,
    api_key: Option<String>,
    team_id: Option<String>,
    project_id: Option<String>,
    api_url: Option<String>,
    page_size: u32,
    sweep_unlabelled: bool,
    request_timeout: f64,
) -> PyResult<HostedProvider> {
    let request_timeout = seconds(request_timeout)?;
    let config = VercelConfig {
        name,
        owner: owner.clone(),
        token: api_key,
        team_id,
        project_id,
        api_url,
        page_size,
        sweep_unlabelled,
        request_timeout,
    };
    hosted(|| VercelProvider::new(config), owner)
}

/// The hosted command's `--e2b`, `--daytona`, `--vercel` providers, built
/// natively from the plan's flags, config and environment (no credential
/// crosses to Python), in the plan's `hosted` order.
#[pyfunction]
pub fn host_hosted_providers(plan: &str) -> PyResult<Vec<HostedProvider>> {
    let _runtime = runtime()?.enter();
    let built = sandbox_reclaim_cli::host::host_hosted(plan).map_err(PyValueError::new_err)?;
    Ok(built
        .into_iter()
        .map(|provider| {
            let owner = provider.owner().unwrap_or(sandbox_reclaim::DEFAULT_OWNER).to_owned();
            HostedProvider { inner: Arc::from(provider), owner }
        })
        .collect())
}

fn seconds(request_timeout: f64) -> PyResult<Duration> {
    if !request_timeout.is_finite() || request_timeout <= 0.0 || request_timeout > 86_400.0 {
        return Err(PyValueError::new_err(format!(
            "invalid `request_timeout`: must be a positive number of seconds (at most a day), got {request_timeout}"
        )));
    }
    Ok(Duration::from_secs_f64(request_timeout))
}

fn hosted<P: HostedSandboxProvider + 'static>(
    build: impl FnOnce() -> Result<P, sandbox_reclaim::ProviderError>,
    owner: String,
) -> PyResult<HostedProvider> {
    // The HTTP client may look for a runtime when it is built.
    let _runtime = runtime()?.enter();
    let provider = build().map_err(provider_error)?;
    Ok(HostedProvider { inner: Arc::new(provider), owner })
}

/// The labels / metadata to attach at create so the sweep knows the sandbox.
#[pyfunction]
pub fn owner_labels(owner: &str, key: &str) -> PyResult<Labels> {
    core_owner_labels(owner, key).map_err(|invalid| invalid_input(&invalid))
}

#[pymethods]
impl HostedProvider {
    /// The provider name instance records carry.
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// The owner namespace the listing is filtered by.
    #[getter]
    fn owner(&self) -> &str {
        &self.owner
    }

    /// The API base URL in use.
    #[getter]
    fn api_url(&self) -> &str {
        self.inner.api_url()
    }

    /// Awaitable destroying sandbox `sandbox_id` for good (already gone is success).
    fn destroy<'py>(&self, py: Python<'py>, sandbox_id: String) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.inner.clone();
        awaitable(py, async move { inner.destroy(&sandbox_id).await }, |py, destroyed| {
            destroyed.map_err(provider_error)?;
            Ok(py.None())
        })
    }

    /// Awaitable of `[(id, created_at | None, owner | None, key | None, deleting), ...]`:
    /// every sandbox under the owner, for the orphan sweep.
    fn list_sandboxes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.inner.clone();
        awaitable(py, async move { inner.list_sandboxes().await }, |py, listed| {
            let sandboxes = listed.map_err(provider_error)?;
            sandboxes
                .into_iter()
                .map(|sandbox| (sandbox.id, sandbox.created_at, sandbox.owner, sandbox.key, sandbox.deleting))
                .collect::<Vec<_>>()
                .into_py_any(py)
        })
    }

    /// Awaitable of one small authenticated call; raises naming the variable
    /// to set when the vendor refuses the credential.
    fn check_access<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.inner.clone();
        awaitable(py, async move { inner.check_access().await }, |py, checked| {
            checked.map_err(provider_error)?;
            Ok(py.None())
        })
    }
}
