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
mod hints;
mod hosted;
mod inline;
mod providers;
mod records;
mod sql_store;
mod store;

// `sandbox_reclaim/_native.pyi` is generated from this module (pyo3's
// `experimental-inspect`; `scripts/gen_native_stub.sh` runs `maturin develop
// --generate-stubs`): every export's Python signature, its types (Rust's, or
// the Python ones `hints` gives what crosses as a plain object) and its doc
// comment. Everything is exported here, with no `#[pymodule_init]`, so the
// stub is complete.

/// The native half of the `sandbox_reclaim` package (Rust, pyo3). Internal:
/// use the package API. (Its stub, `_native.pyi`, is generated from
/// `bindings-python/src` by `scripts/gen_native_stub.sh`: do not edit it.)
#[pyo3::pymodule]
mod _native {
    #[pymodule_export]
    use super::bridge::shutdown;
    #[pymodule_export]
    use super::cli::{host_check_module, host_emit, host_fail, host_open, host_plan, run_cli, HostLoop};
    #[pymodule_export]
    use super::errors::bind_error_types;
    #[pymodule_export]
    use super::flow::{
        abandon, complete, complete_leaks, destroy_timeout_message, option_names, protocol, reclaim_deadline,
        reclaim_failed_message, respell_options, scoped_read_methods, scoped_reads, start_reclaim, start_reclaim_all,
        start_reconcile, start_retry, stop, timeout,
    };
    #[pymodule_export]
    use super::hosted::{
        creation_labels, default_store_path, host_hosted_providers, hosted_option_names, hosted_provider,
        hosted_vendors, owner_labels, vendor_owner_labels_json, HostedProvider,
    };
    #[pymodule_export]
    use super::inline::{bind_inline_helpers, InlineSteps};
    #[cfg(unix)]
    #[pymodule_export]
    use super::providers::local_provider;
    #[pymodule_export]
    use super::providers::{docker_provider, host_managed_providers, ManagedProvider};
    #[pymodule_export]
    use super::records::bind_record_types;
    #[pymodule_export]
    use super::sql_store::{check_record_whole, connect_postgres, open_sqlite, SqlStore};
    #[pymodule_export]
    use super::store::{MemoryLedgerStore, MemoryStore};
}
