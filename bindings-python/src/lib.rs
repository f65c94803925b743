//! `sandbox_reclaim._native`: the native half of the `sandbox_reclaim` Python
//! package.
//!
//! [`flow`] hands the core's flow machines to the generic asyncio driver
//! (`sandbox_reclaim/_driver.py`), which runs every reclaim, reclaimer call
//! and leak retry on the caller's event loop against Python host objects:
//! every decision, deadline and string is the core's. The in-memory store
//! ([`store`]) answers synchronously (the Python class makes it awaitable);
//! the durable stores ([`sql_store`]) and managed providers ([`providers`])
//! return awaitables run on a tokio runtime ([`bridge`]). [`cli`] is the
//! `sandbox-reclaim` console script's native half.

mod bridge;
mod cli;
mod errors;
mod flow;
mod hosted;
mod inline;
mod providers;
mod records;
mod sql_store;
mod store;

use pyo3::prelude::*;

/// The module object `maturin` builds as `sandbox_reclaim._native`.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(flow::protocol, module)?)?;
    module.add_function(wrap_pyfunction!(flow::reclaim_failed_message, module)?)?;
    module.add_function(wrap_pyfunction!(flow::destroy_timeout_message, module)?)?;
    module.add_function(wrap_pyfunction!(flow::start_reclaim, module)?)?;
    module.add_function(wrap_pyfunction!(flow::option_names, module)?)?;
    module.add_function(wrap_pyfunction!(flow::respell_options, module)?)?;
    module.add_function(wrap_pyfunction!(flow::reclaim_deadline, module)?)?;
    module.add_function(wrap_pyfunction!(flow::start_retry, module)?)?;
    module.add_function(wrap_pyfunction!(flow::start_reclaim_all, module)?)?;
    module.add_function(wrap_pyfunction!(flow::start_reconcile, module)?)?;
    module.add_function(wrap_pyfunction!(flow::stop, module)?)?;
    module.add_function(wrap_pyfunction!(flow::complete, module)?)?;
    module.add_function(wrap_pyfunction!(flow::complete_leaks, module)?)?;
    module.add_function(wrap_pyfunction!(flow::timeout, module)?)?;
    module.add_function(wrap_pyfunction!(flow::abandon, module)?)?;
    module.add_function(wrap_pyfunction!(inline::bind_inline_helpers, module)?)?;
    module.add_class::<inline::InlineSteps>()?;
    module.add_function(wrap_pyfunction!(records::bind_record_types, module)?)?;
    module.add_class::<store::MemoryStore>()?;
    module.add_class::<store::MemoryLedgerStore>()?;
    module.add_function(wrap_pyfunction!(errors::bind_error_types, module)?)?;
    module.add_class::<sql_store::SqlStore>()?;
    module.add_function(wrap_pyfunction!(sql_store::open_sqlite, module)?)?;
    module.add_function(wrap_pyfunction!(sql_store::check_record_whole, module)?)?;
    module.add_function(wrap_pyfunction!(sql_store::connect_postgres, module)?)?;
    module.add_class::<providers::ManagedProvider>()?;
    module.add_function(wrap_pyfunction!(providers::docker_provider, module)?)?;
    module.add_function(wrap_pyfunction!(providers::host_managed_providers, module)?)?;
    #[cfg(unix)]
    module.add_function(wrap_pyfunction!(providers::local_provider, module)?)?;
    module.add_class::<hosted::HostedProvider>()?;
    module.add_function(wrap_pyfunction!(hosted::hosted_option_names, module)?)?;
    module.add_function(wrap_pyfunction!(hosted::hosted_provider, module)?)?;
    module.add_function(wrap_pyfunction!(hosted::owner_labels, module)?)?;
    module.add_function(wrap_pyfunction!(hosted::host_hosted_providers, module)?)?;
    module.add_function(wrap_pyfunction!(bridge::shutdown, module)?)?;
    module.add_function(wrap_pyfunction!(cli::run_cli, module)?)?;
    module.add_function(wrap_pyfunction!(cli::host_plan, module)?)?;
    module.add_function(wrap_pyfunction!(cli::host_emit, module)?)?;
    module.add_function(wrap_pyfunction!(cli::host_fail, module)?)?;
    module.add_function(wrap_pyfunction!(cli::host_check_module, module)?)?;
    module.add_function(wrap_pyfunction!(cli::host_open, module)?)?;
    module.add_class::<cli::HostLoop>()?;
    Ok(())
}
