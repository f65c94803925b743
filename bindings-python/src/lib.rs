//! `sandbox_reclaim._native`: the native half of the `sandbox_reclaim` Python
//! package.
//!
//! It exposes the core's sans-IO reclaim machine to a small asyncio
//! interpreter written in Python (`sandbox_reclaim/_driver.py`), which awaits
//! the host's store and provider on the caller's event loop. Why not drive
//! from Rust: a Python store or provider would then cost a thread hop per
//! call, while a host-driven machine makes a Python store cost what it costs
//! natively. Every answer the interpreter feeds returns the next I/O step and
//! the log lines before it in one compact tuple, so a reclaim is a handful of
//! native calls.
//!
//! The native [`store::MemoryStore`] is answered inside those same calls, so
//! records never materialise in Python on that path.

mod drive;
mod ready;
mod records;
mod store;

use pyo3::prelude::*;

/// Rust allocations in this extension (not Python's) use mimalloc: each
/// reclaim makes a handful of small short-lived strings.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The message of `SandboxReclaimFailedError`, built by the core so every
/// binding prints the reference's text exactly.
#[pyfunction]
#[pyo3(signature = (run_id, sandbox_key=None))]
fn reclaim_failed_message(run_id: &str, sandbox_key: Option<&str>) -> String {
    sandbox_reclaim::messages::reclaim_failed_message(run_id, sandbox_key)
}

/// The module object `maturin` builds as `sandbox_reclaim._native`.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(reclaim_failed_message, module)?)?;
    module.add_function(wrap_pyfunction!(drive::start, module)?)?;
    module.add_function(wrap_pyfunction!(records::bind_record_types, module)?)?;
    module.add_class::<drive::Drive>()?;
    module.add_class::<store::MemoryStore>()?;
    module.add_class::<store::MemoryLedgerStore>()?;
    for (name, code) in drive::OPS {
        module.add(name, code)?;
    }
    Ok(())
}
