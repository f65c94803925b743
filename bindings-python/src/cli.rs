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

use std::io::Write;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::IntoPyObjectExt;
use sandbox_reclaim::options::Dialect;
use sandbox_reclaim_cli::error::Failure;
use sandbox_reclaim_cli::hosted::{print_failure, HostedLoop, Rejection, Step};

use crate::hints::{Any, Awaitable, Or, Typed};
use crate::sql_store::SqlStore;

/// Runs the command with `args` (without the program name), without the
/// GIL; answers its exit code. Output goes straight to the process's stdout
/// and stderr.
#[pyfunction]
#[pyo3(signature = (args, /))]
pub fn run_cli(py: Python<'_>, args: Vec<String>) -> i32 {
    py.detach(move || sandbox_reclaim_cli::host::run_cli(args))
}

/// What to run for `args`: the plan as JSON text (a str), or, when refused,
/// the exit code once the refusal is printed as the binary prints it.
#[pyfunction]
#[pyo3(signature = (args, /))]
pub fn host_plan(py: Python<'_>, args: Vec<String>) -> PyResult<Typed<'_, Or<String, i32>>> {
    let planned = match py.detach(move || sandbox_reclaim_cli::host::host_plan(args)) {
        Ok(plan) => plan.into_bound_py_any(py),
        Err(refused) => {
            print_refused(refused.exit_code, &refused.message);
            refused.exit_code.into_bound_py_any(py)
        }
    };
    planned.map(Typed::new)
}

/// Help and version text on stdout; clap's own errors as clap prints them,
/// the command's with its prefix. A closed pipe (`| head`) is ignored, as the
/// binary ignores it.
fn print_refused(code: i32, message: &str) {
    if code == 0 {
        let _ = writeln!(std::io::stdout(), "{message}");
    } else {
        let clap = message.contains("\nUsage:") || message.contains("try '--help'");
        let prefix = if clap || !message.starts_with("error: ") { "" } else { "sandbox-reclaim: " };
        let _ = writeln!(std::io::stderr(), "{prefix}{message}");
    }
    flush();
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

/// Rust's stdout is buffered apart from Python's: flush what the command
/// printed before Python prints more.
fn flush() {
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
}

/// Checks what ``_cli.py`` found in the providers module (a JSON
/// description, ``sandbox_reclaim_cli::providers_module::Found``) against the
/// plan; every rule and message is the command crate's. Answers ``None`` when
/// the pass may run, else the exit code (the refusal already printed).
#[pyfunction]
#[pyo3(signature = (plan, found, /))]
pub fn host_check_module(plan: &str, found: &str) -> PyResult<Option<i32>> {
    let code = sandbox_reclaim_cli::providers_module::host_check_module(plan, found).map_err(PyValueError::new_err)?;
    flush();
    Ok(code)
}

/// Prints a failure the script met before any pass (`kind` `usage` with the
/// flag as `subject`, `unavailable` with what, or `failed`) exactly as the
/// binary prints its failures, for `command` (`--json`: `json`); answers the
/// exit code.
#[pyfunction]
#[pyo3(signature = (command, json, kind, subject, message, /))]
pub fn host_fail(command: &str, json: bool, kind: &str, subject: Option<String>, message: &str) -> i32 {
    let subject = subject.unwrap_or_default();
    let failure = match kind {
        "usage" => Failure::usage(subject, message),
        "unavailable" => Failure::unavailable(subject, message),
        _ => Failure::failed(message),
    };
    let code = print_failure(command, json, &failure, None);
    flush();
    code
}

/// The command's pass loop for `--providers` (`sandbox_reclaim_cli::hosted`):
/// `_cli.py` reports what happened and does the step each call answers,
/// `("pass", number | None)`, `("sleep", until_ms)` or `("exit", code)`;
/// every decision, line and exit code is the command crate's.
#[pyclass(module = "sandbox_reclaim._native")]
pub struct HostLoop {
    inner: HostedLoop,
}

/// A step as `HostLoop` answers it: `(name, value)`.
type NextStep<'py> = Typed<'py, (String, Any)>;

fn step(py: Python<'_>, step: Step) -> PyResult<NextStep<'_>> {
    flush();
    let (name, value) = match step {
        Step::Pass { number } => ("pass", number.into_bound_py_any(py)?),
        Step::Sleep { until_ms } => ("sleep", until_ms.into_bound_py_any(py)?),
        Step::Exit { code } => ("exit", code.into_bound_py_any(py)?),
    };
    Ok(Typed::new(PyTuple::new(py, [name.into_bound_py_any(py)?, value])?.into_any()))
}

#[pymethods]
impl HostLoop {
    #[new]
    #[pyo3(signature = (plan, /))]
    fn new(plan: &str) -> PyResult<Self> {
        Ok(Self { inner: HostedLoop::new(plan, Dialect::Python).map_err(PyValueError::new_err)? })
    }

    /// The first step, at ``now`` (epoch ms): ``(step, value)``.
    #[pyo3(signature = (now, /))]
    fn start<'py>(&mut self, py: Python<'py>, now: u64) -> PyResult<NextStep<'py>> {
        step(py, self.inner.start(now))
    }

    /// The pass returned ``report`` (the core's camelCase JSON).
    #[pyo3(signature = (report, now, /))]
    fn passed<'py>(&mut self, py: Python<'py>, report: &str, now: u64) -> PyResult<NextStep<'py>> {
        let next = self.inner.passed(report, now).map_err(PyValueError::new_err)?;
        step(py, next)
    }

    /// The pass raised: ``kind`` ``option`` (a TypeError/ValueError),
    /// ``store`` (a SandboxStoreError) or ``other``, with its message.
    #[pyo3(signature = (kind, message, now, /))]
    fn failed<'py>(&mut self, py: Python<'py>, kind: &str, message: &str, now: u64) -> PyResult<NextStep<'py>> {
        let rejection =
            Rejection::parse(kind).ok_or_else(|| PyValueError::new_err(format!("unknown rejection kind {kind:?}")))?;
        step(py, self.inner.failed(rejection, message, now))
    }

    /// The sleep ended (its time, or a signal).
    #[pyo3(signature = (now, /))]
    fn woke<'py>(&mut self, py: Python<'py>, now: u64) -> PyResult<NextStep<'py>> {
        step(py, self.inner.woke(now))
    }

    /// SIGINT/SIGTERM: ``None`` (stop the pass, wake the sleep), or the code to exit with at once.
    #[pyo3(signature = (name, /))]
    fn signal(&mut self, name: &str) -> Option<i32> {
        let code = self.inner.signal(name);
        flush();
        code
    }
}

/// Opens the plan's store and checks `--docker`/`--local` exactly as the
/// binary does (`sandbox_reclaim_cli::host::host_open`): an awaitable of the
/// native `SqlStore`, or of the exit code (an int) once the failure is
/// printed as the binary prints it.
#[pyfunction]
#[pyo3(signature = (plan, /))]
pub fn host_open(py: Python<'_>, plan: String) -> PyResult<Awaitable<'_, Or<SqlStore, i32>>> {
    crate::bridge::awaitable(py, async move { sandbox_reclaim_cli::host::host_open(&plan).await }, |py, opened| {
        flush();
        match opened {
            Ok(store) => SqlStore::from_command_store(store).into_py_any(py),
            Err(code) => code.into_py_any(py),
        }
    })
}
