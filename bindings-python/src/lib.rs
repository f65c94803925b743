//! `sandbox_reclaim._native`: the native half of the `sandbox_reclaim` Python
//! package.
//!
//! It hands the core's reclaim machines, compiled to branch tables
//! ([`sandbox_reclaim::program`]), to the pure-Python package, which
//! translates each once at import and walks it per reclaim on the caller's
//! event loop (`sandbox_reclaim/_program.py`) with no native call at all: a
//! Python store or provider costs what it costs natively, and every decision,
//! string and ordering is still the core's. The native in-memory store
//! ([`store::MemoryStore`]) is called synchronously, never awaited. The durable stores
//! ([`sql_store`]) and managed providers ([`providers`]) return awaitables
//! run on a tokio runtime ([`bridge`]).

mod bridge;
mod errors;
mod providers;
mod ready;
mod records;
mod retry;
mod sql_store;
mod store;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use sandbox_reclaim::program::{program_json, Api};

/// Rust allocations in this extension (not Python's) use mimalloc: the
/// native store's answers are small short-lived strings.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The message of `SandboxReclaimFailedError`, built by the core so every
/// binding prints the reference's text exactly.
#[pyfunction]
#[pyo3(signature = (run_id, sandbox_key=None))]
fn reclaim_failed_message(run_id: &str, sandbox_key: Option<&str>) -> String {
    sandbox_reclaim::messages::reclaim_failed_message(run_id, sandbox_key)
}

/// The compiled reclaim program of `api` (`"reclaimSandbox"` or
/// `"sandboxReclaimer"`) for a store with or without a leak ledger, as JSON.
#[pyfunction]
fn reclaim_program(api: &str, ledger: bool) -> PyResult<String> {
    let api = match api {
        "reclaimSandbox" => Api::ReclaimSandbox,
        "sandboxReclaimer" => Api::SandboxReclaimer,
        other => return Err(PyValueError::new_err(format!("unknown reclaim api {other:?}"))),
    };
    Ok(program_json(api, ledger))
}

/// The module object `maturin` builds as `sandbox_reclaim._native`.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(reclaim_failed_message, module)?)?;
    module.add_function(wrap_pyfunction!(reclaim_program, module)?)?;
    module.add_function(wrap_pyfunction!(records::bind_record_types, module)?)?;
    module.add_class::<store::MemoryStore>()?;
    module.add_class::<store::MemoryLedgerStore>()?;
    module.add_function(wrap_pyfunction!(errors::bind_error_types, module)?)?;
    module.add_class::<sql_store::SqlStore>()?;
    module.add_function(wrap_pyfunction!(sql_store::open_sqlite, module)?)?;
    module.add_function(wrap_pyfunction!(sql_store::connect_postgres, module)?)?;
    module.add_class::<providers::ManagedProvider>()?;
    module.add_function(wrap_pyfunction!(providers::docker_provider, module)?)?;
    module.add_function(wrap_pyfunction!(providers::local_provider, module)?)?;
    module.add_function(wrap_pyfunction!(retry::retry_leaks, module)?)?;
    module.add_function(wrap_pyfunction!(bridge::shutdown, module)?)?;
    Ok(())
}
