//! The hosted providers (every vendor of the core's table) for Python: construction is synchronous
//! (config checked first, naming the field; nothing is sent), every call
//! returns an awaitable on the shared tokio runtime. Cancelling the awaitable
//! (a destroy's deadline) drops the HTTP request. The package wraps them in
//! `E2bProvider`, `DaytonaProvider` and `VercelProvider`
//! (`sandbox_reclaim/_providers.py`).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use sandbox_reclaim::options::provider::HostedSettings;
use sandbox_reclaim::options::{Dialect, HostOptionError, HostOptions, Problem};
use sandbox_reclaim::providers::HostedVendor;
use sandbox_reclaim::providers::{
    build_hosted, creation_labels as core_creation_labels, owner_labels as core_owner_labels,
    vendor_owner_labels as core_vendor_owner_labels,
};
use sandbox_reclaim::report::messages;
use sandbox_reclaim::{HostedSandboxProvider, Labels};
use std::sync::Arc;

use crate::bridge::{awaitable, runtime};
use crate::errors::{invalid_input, provider_error};
use crate::hints::Awaitable;

/// A sandbox as `list_sandboxes` answers it: `(id, created_at, owner, key, deleting)`.
type Listed = (String, Option<u64>, Option<String>, Option<String>, bool);

/// Listed sandboxes as the tuples the package reads.
fn tuples(sandboxes: Vec<sandbox_reclaim::ListedSandbox>) -> Vec<Listed> {
    sandboxes
        .into_iter()
        .map(|sandbox| (sandbox.id, sandbox.created_at, sandbox.owner, sandbox.key, sandbox.deleting))
        .collect()
}

/// A native hosted provider handle (any vendor); operations return
/// awaitables. `sandbox_reclaim` wraps it.
#[pyclass(name = "HostedProvider", module = "sandbox_reclaim._native", frozen)]
pub struct HostedProvider {
    pub(crate) inner: Arc<dyn HostedSandboxProvider>,
    owner: String,
}

/// The option names `vendor` (`e2b`, `sprites`, ...) takes, as Python
/// spells them: what the provider's constructor hands to the core as plain values.
#[pyfunction]
#[pyo3(signature = (vendor, /))]
pub fn hosted_option_names(vendor: &str) -> PyResult<Vec<&'static str>> {
    Ok(hosted_vendor(vendor)?.names().iter().map(|name| name.python).collect())
}

/// A vendor's provider (`E2bProvider`, `SpritesProvider`, ...) from the user's
/// plain option values (JSON), checked and defaulted by the core (a wrong
/// type is a `TypeError`, a value out of range a `ValueError`); credentials
/// left out are read from the vendor's variables. Nothing is sent.
#[pyfunction]
#[pyo3(signature = (vendor, options_json, /))]
pub fn hosted_provider(vendor: &str, options_json: &str) -> PyResult<HostedProvider> {
    let vendor = hosted_vendor(vendor)?;
    let options = HostOptions::parse(options_json, Dialect::Python).map_err(refused)?;
    let settings = HostedSettings::from_host(vendor, &options).map_err(refused)?;
    let owner = settings.owner.clone();
    // The HTTP client may look for a runtime when it is built.
    let _runtime = runtime()?.enter();
    let provider = build_hosted(vendor, settings).map_err(provider_error)?;
    Ok(HostedProvider { inner: Arc::from(provider), owner })
}

/// Every hosted vendor as `(key, class)`, in the core's order: what the
/// package builds its provider classes' table from.
#[pyfunction]
pub fn hosted_vendors() -> Vec<(&'static str, &'static str)> {
    HostedVendor::all().map(|vendor| (vendor.spec().key, vendor.spec().class)).collect()
}

fn hosted_vendor(vendor: &str) -> PyResult<HostedVendor> {
    HostedVendor::parse(vendor)
        .ok_or_else(|| PyValueError::new_err(messages::unknown_vendor(vendor, &HostedVendor::keys())))
}

/// An option the core refused: the wrong type is a `TypeError`, out of range a `ValueError`.
fn refused(error: HostOptionError) -> PyErr {
    match error.problem {
        Problem::Type => PyTypeError::new_err(error.message),
        Problem::Range => PyValueError::new_err(error.message),
    }
}

/// The hosted command's `--e2b`, `--sprites`, ... providers, built
/// natively from the plan's flags, config and environment (no credential
/// crosses to Python), in the plan's `hosted` order.
#[pyfunction]
#[pyo3(signature = (plan, /))]
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

/// The labels / metadata to attach at create so the sweep knows the sandbox.
#[pyfunction]
#[pyo3(signature = (owner, key, /))]
pub fn owner_labels(owner: &str, key: &str) -> PyResult<Labels> {
    core_owner_labels(owner, key).map_err(|invalid| invalid_input(&invalid))
}

/// What a sandbox of `vendor` carries so the sweep knows it, in the shape
/// the vendor takes at create, as JSON (`owner_labels` parses it).
#[pyfunction]
#[pyo3(signature = (owner, key, vendor, /))]
pub fn vendor_owner_labels_json(owner: &str, key: &str, vendor: &str) -> PyResult<String> {
    let marks = core_vendor_owner_labels(vendor, owner, key).map_err(|invalid| invalid_input(&invalid))?;
    Ok(serde_json::to_string(&marks).expect("labels serialise"))
}

/// The labels to set at create when the key is not known yet, with the creation time.
#[pyfunction]
#[pyo3(signature = (owner, key, created_at_ms, /))]
pub fn creation_labels(owner: &str, key: Option<&str>, created_at_ms: u64) -> PyResult<Labels> {
    core_creation_labels(owner, key, created_at_ms).map_err(|invalid| invalid_input(&invalid))
}

/// The command's default store (`store.db` in the platform's data directory),
/// where a client with no store given records its sandboxes.
#[pyfunction]
pub fn default_store_path() -> PyResult<String> {
    let path = sandbox_reclaim_cli::config::default_sqlite_path()
        .map_err(|failure| pyo3::exceptions::PyRuntimeError::new_err(failure.to_string()))?;
    path.into_os_string()
        .into_string()
        .map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("the default store's path is not UTF-8"))
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
    #[pyo3(signature = (sandbox_id, /))]
    fn destroy<'py>(&self, py: Python<'py>, sandbox_id: String) -> PyResult<Awaitable<'py, ()>> {
        let inner = self.inner.clone();
        awaitable(py, async move { inner.destroy(&sandbox_id).await }, |py, destroyed| {
            destroyed.map_err(provider_error)?;
            Ok(py.None())
        })
    }

    /// Awaitable of `[(id, created_at | None, owner | None, key | None, deleting), ...]`:
    /// every sandbox under the owner, for the orphan sweep.
    fn list_sandboxes<'py>(&self, py: Python<'py>) -> PyResult<Awaitable<'py, Vec<Listed>>> {
        let inner = self.inner.clone();
        awaitable(py, async move { inner.list_sandboxes().await }, |py, listed| {
            tuples(listed.map_err(provider_error)?).into_py_any(py)
        })
    }

    /// Whether it looks up registered sandboxes by id (a vendor with a get,
    /// unless the listing takes every sandbox).
    #[getter]
    fn can_lookup(&self) -> bool {
        self.inner.can_lookup()
    }

    /// Awaitable of `[(id, created_at | None, owner | None, key | None, deleting), ...]`:
    /// the sandboxes of `ids` that still exist, read by id.
    #[pyo3(signature = (ids, /))]
    fn lookup<'py>(&self, py: Python<'py>, ids: Vec<String>) -> PyResult<Awaitable<'py, Vec<Listed>>> {
        let inner = self.inner.clone();
        awaitable(py, async move { inner.lookup_sandboxes(&ids).await }, |py, found| {
            tuples(found.map_err(provider_error)?).into_py_any(py)
        })
    }

    /// Awaitable of one small authenticated call; raises naming the variable
    /// to set when the vendor refuses the credential.
    fn check_access<'py>(&self, py: Python<'py>) -> PyResult<Awaitable<'py, ()>> {
        let inner = self.inner.clone();
        awaitable(py, async move { inner.check_access().await }, |py, checked| {
            checked.map_err(provider_error)?;
            Ok(py.None())
        })
    }
}
