//! The `sandbox-reclaim` command for the `sandbox-reclaim` console script
//! (`sandbox_reclaim/_cli.py`): the command crate's host entry points
//! (`cli/src/host.rs`), as plain functions.
//!
//! * [`run_cli`] runs the whole command exactly as the binary does. It blocks
//!   until the command ends, so it runs without the GIL; the command listens
//!   for SIGINT/SIGTERM itself (the script leaves them to it).
//! * [`host_plan`] / [`host_emit`]: with `--providers module:attribute`, the
//!   script runs the pass on the asyncio driver with those Python providers;
//!   the plan says what to run (flags and config resolved by the command, so
//!   every language reads them alike) and `host_emit` prints the report as
//!   the binary prints it.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::IntoPyObjectExt;

/// Runs the command with `args` (without the program name), without the
/// GIL; answers its exit code. Output goes straight to the process's stdout
/// and stderr.
#[pyfunction]
pub fn run_cli(py: Python<'_>, args: Vec<String>) -> i32 {
    py.detach(move || sandbox_reclaim_cli::host::run_cli(args))
}

/// What to run for `args`: the plan as JSON text (a str), or, when refused,
/// `(exit_code, message)` (exit code 0: `--help`/`--version` text for stdout).
#[pyfunction]
pub fn host_plan(py: Python<'_>, args: Vec<String>) -> PyResult<Py<PyAny>> {
    match py.detach(move || sandbox_reclaim_cli::host::host_plan(args)) {
        Ok(plan) => plan.into_py_any(py),
        Err(refused) => Ok(PyTuple::new(py, [refused.exit_code.into_py_any(py)?, refused.message.into_py_any(py)?])?
            .into_any()
            .unbind()),
    }
}

/// Prints `report` (the core's camelCase JSON report) for `plan` exactly as
/// the binary would and answers the exit code (0, or 1 when still leaking);
/// `pass_number`: the pass with `--every`. `ValueError` for a malformed plan
/// or report.
#[pyfunction]
#[pyo3(signature = (plan, report, pass_number, /))]
pub fn host_emit(py: Python<'_>, plan: String, report: String, pass_number: Option<u64>) -> PyResult<i32> {
    py.detach(move || sandbox_reclaim_cli::host::host_emit(&plan, &report, pass_number)).map_err(PyValueError::new_err)
}
