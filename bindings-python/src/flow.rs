//! The core's flow machines for the generic asyncio driver
//! (`sandbox_reclaim/_driver.py`), in the core's batch form
//! ([`sandbox_reclaim::wire`]): a run lives in one table under a number,
//! every call answers one flat tuple.

use std::sync::Mutex;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use sandbox_reclaim::machine::start::{self, HostProvider, PassStart};
use sandbox_reclaim::machine::{BoxedFlow, Reclaim, ReclaimAll, ReclaimApi, ReclaimInput, Reconcile, Retry};
use sandbox_reclaim::options::{self, Dialect, FlowOptions, HostOptionError, HostOptions, Problem};
use sandbox_reclaim::report::messages;
use sandbox_reclaim::wire::{self, RunTable, Slot, WireError};

use crate::hints::{self, Any, Dict, Typed};

/// A batch, as every call answers it (`tuple[typing.Any, ...]`).
pub type Batch<'py> = Typed<'py, hints::Batch, PyTuple>;

/// The runs of this interpreter (calls hold the GIL, so the lock is uncontended).
static RUNS: Mutex<RunTable> = Mutex::new(RunTable::new());

pub(crate) fn runs<T>(use_table: impl FnOnce(&mut RunTable) -> T) -> T {
    // A panic cannot leave the table half-updated (each call is one operation).
    use_table(&mut RUNS.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
}

/// The batch layout and the fixed names the driver checks input against, as
/// a dict (read once at import).
#[pyfunction]
pub fn protocol(py: Python<'_>) -> PyResult<Typed<'_, Dict<String, Any>, PyDict>> {
    let protocol = wire::protocol();
    let dict = PyDict::new(py);
    dict.set_item("header", protocol.header)?;
    dict.set_item("endings", protocol.endings.to_vec())?;
    dict.set_item("ending_operands", protocol.ending_operands.to_vec())?;
    dict.set_item("ops", protocol.ops.to_vec())?;
    dict.set_item("meta_kinds", protocol.meta_kinds.to_vec())?;
    dict.set_item("completions", protocol.completions.to_vec())?;
    dict.set_item("levels", protocol.levels.to_vec())?;
    dict.set_item("reclaim_failed_error_name", protocol.reclaim_failed_error_name)?;
    dict.set_item("destroy_timeout_error_name", protocol.destroy_timeout_error_name)?;
    dict.set_item("unreadable_error_message", protocol.unreadable_error_message)?;
    dict.set_item("default_owner", options::defaults::OWNER)?;
    dict.set_item("effects", serde_json::to_string(protocol.effects).unwrap_or_default())?;
    Ok(Typed::new(dict))
}

/// The scoped sweep's store methods, in order: a store has all or none.
#[pyfunction]
pub fn scoped_read_methods() -> Vec<&'static str> {
    start::scoped_read_methods(Dialect::Python)
}

/// Whether a store is scoped, given which of `scoped_read_methods()` it
/// has: all → `True`, none → `False`; some → `TypeError` with the core's text.
#[pyfunction]
#[pyo3(signature = (present, /))]
pub fn scoped_reads(present: Vec<bool>) -> PyResult<bool> {
    start::scoped_reads(&present, "instances.", Dialect::Python).map_err(PyTypeError::new_err)
}

/// The message of `SandboxReclaimFailedError`, built by the core.
#[pyfunction]
#[pyo3(signature = (run_id, sandbox_key=None))]
pub fn reclaim_failed_message(run_id: &str, sandbox_key: Option<&str>) -> String {
    messages::reclaim_failed_message(run_id, sandbox_key)
}

/// The message of `SandboxDestroyTimeoutError`, built by the core.
#[pyfunction]
#[pyo3(signature = (provider_sandbox_id, timeout_ms, /))]
pub fn destroy_timeout_message(provider_sandbox_id: &str, timeout_ms: u64) -> String {
    messages::destroy_timeout_message(provider_sandbox_id, timeout_ms)
}

/// Starts `reclaim_sandbox` (`reclaimer` false) or a `sandbox_reclaimer` call.
#[pyfunction]
#[pyo3(signature = (reclaimer, run_id, sandbox_key, provider_name, store_has_ledger, destroy_timeout_ms, now, /))]
#[allow(clippy::too_many_arguments)]
pub fn start_reclaim(
    py: Python<'_>,
    reclaimer: bool,
    run_id: String,
    sandbox_key: Option<String>,
    provider_name: String,
    store_has_ledger: bool,
    destroy_timeout_ms: Option<u64>,
    now: u64,
) -> PyResult<Batch<'_>> {
    let api = if reclaimer { ReclaimApi::SandboxReclaimer } else { ReclaimApi::ReclaimSandbox };
    let providers = vec![provider_name];
    let input = ReclaimInput { api, run_id, sandbox_key, providers, store_has_ledger, destroy_timeout_ms };
    start(py, Box::new(Reclaim::new(input, now)))
}

/// The option names `flow` (`reclaimAll`, `reconcile`, `retryLeaks`) takes,
/// as Python spells them: what the declaration hands to the core as plain values.
#[pyfunction]
#[pyo3(signature = (flow, /))]
pub fn option_names(flow: &str) -> PyResult<Vec<&'static str>> {
    let flow = FlowOptions::parse(flow).ok_or_else(|| PyValueError::new_err(messages::unknown_flow(flow)))?;
    Ok(options::option_names(flow, Dialect::Python))
}

/// `flow`'s options as the command's pass plan (JSON) names them (Node's
/// spelling, milliseconds), respelled as Python's keyword arguments
/// (snake_case, seconds), as JSON: the hosted command passes every option
/// the core names without a list of its own.
#[pyfunction]
#[pyo3(signature = (flow, plan_json, /))]
pub fn respell_options(flow: &str, plan_json: &str) -> PyResult<String> {
    let flow = FlowOptions::parse(flow).ok_or_else(|| PyValueError::new_err(messages::unknown_flow(flow)))?;
    let plan: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(plan_json).map_err(|error| PyValueError::new_err(error.to_string()))?;
    Ok(serde_json::Value::Object(options::respell(flow, &plan, Dialect::Python)).to_string())
}

/// The user's plain option values (JSON), checked by the core.
fn host_options(options_json: &str) -> PyResult<HostOptions> {
    HostOptions::parse(options_json, Dialect::Python).map_err(invalid)
}

/// An option the core refused, as Python raises it: the wrong type is a
/// `TypeError`, a value out of range a `ValueError`; the core's text.
fn invalid(error: HostOptionError) -> PyErr {
    match error.problem {
        Problem::Type => PyTypeError::new_err(error.message),
        Problem::Range => PyValueError::new_err(error.message),
    }
}

/// Starts `reclaim_all`: `records` are `(run_id, sandbox_key)` pairs, in
/// order; `providers` the providers' names, numbered in this order;
/// `stopped`: the caller stopped it before it began (nothing starts).
#[pyfunction]
#[pyo3(signature = (options_json, records, providers, store_has_ledger, progress, stopped, now, /))]
#[allow(clippy::too_many_arguments)]
pub fn start_reclaim_all<'py>(
    py: Python<'py>,
    options_json: &str,
    records: Vec<(String, Option<String>)>,
    providers: Vec<String>,
    store_has_ledger: bool,
    progress: bool,
    stopped: bool,
    now: u64,
) -> PyResult<Batch<'py>> {
    let pass = PassStart { progress, stopped, host_name: None, registry: false, prune: false, scoped: false };
    let input = start::reclaim_all(&host_options(options_json)?, records, providers, store_has_ledger, pass)
        .map_err(invalid)?;
    start(py, Box::new(ReclaimAll::new(input, now)))
}

/// Starts `reconcile`: `providers` are `(name, can_list, can_lookup, owner or None)`, in order;
/// `registry`: the store has `registered_sandboxes`; `prune`: it has `prune`;
/// `scoped`: it has `sweep_mark`, `referenced_among`, `registered_among`,
/// `lookup_candidates` and `lookup_checked` (a sweep then reads only what it listed).
#[pyfunction]
#[pyo3(signature = (options_json, providers, host_name, progress, stopped, registry, prune, scoped, now, /))]
#[allow(clippy::too_many_arguments)]
pub fn start_reconcile<'py>(
    py: Python<'py>,
    options_json: &str,
    providers: Vec<(String, bool, bool, Option<String>)>,
    host_name: String,
    progress: bool,
    stopped: bool,
    registry: bool,
    prune: bool,
    scoped: bool,
    now: u64,
) -> PyResult<Batch<'py>> {
    let providers = providers
        .into_iter()
        .map(|(name, can_list, can_lookup, owner)| HostProvider { name, can_list, can_lookup, owner })
        .collect();
    let pass = PassStart { progress, stopped, host_name: Some(host_name), registry, prune, scoped };
    let input = start::reconcile(&host_options(options_json)?, providers, pass, now).map_err(invalid)?;
    start(py, Box::new(Reconcile::new(input, now)))
}

/// A reclaim's destroy deadline in milliseconds (the user's
/// `destroy_timeout` in seconds, as plain JSON), checked by the core; called
/// only when one was given.
#[pyfunction]
#[pyo3(signature = (options_json, /))]
pub fn reclaim_deadline(options_json: &str) -> PyResult<Option<u64>> {
    start::reclaim_deadline(&host_options(options_json)?).map_err(invalid)
}

/// Starts `retry_leaks` for the provider named `provider_name`.
#[pyfunction]
#[pyo3(signature = (options_json, provider_name, now, /))]
pub fn start_retry<'py>(py: Python<'py>, options_json: &str, provider_name: String, now: u64) -> PyResult<Batch<'py>> {
    let input = start::retry(&host_options(options_json)?, provider_name).map_err(invalid)?;
    start(py, Box::new(Retry::new(input, now)))
}

/// Feeds how effect `id` of run `run` settled (see `wire::completion`).
#[pyfunction]
#[pyo3(signature = (run, id, kind, a, b, now, /))]
pub fn complete(
    py: Python<'_>,
    run: u32,
    id: u32,
    kind: u32,
    a: Option<String>,
    b: Option<String>,
    now: u64,
) -> PyResult<Batch<'_>> {
    answer(py, runs(|table| table.complete(run, id, kind, a, b, now)))
}

/// Feeds a `claim_leaks` answer: the provider sandbox id of each entry.
#[pyfunction]
#[pyo3(signature = (run, id, sandbox_ids, now, /))]
pub fn complete_leaks(py: Python<'_>, run: u32, id: u32, sandbox_ids: Vec<String>, now: u64) -> PyResult<Batch<'_>> {
    answer(py, runs(|table| table.complete_leaks(run, id, sandbox_ids, now)))
}

/// Tells run `run` the time (its deadline was reached).
#[pyfunction]
#[pyo3(signature = (run, now, /))]
pub fn timeout(py: Python<'_>, run: u32, now: u64) -> PyResult<Batch<'_>> {
    answer(py, runs(|table| table.timeout(run, now)))
}

/// Tells run `run` its caller cancelled it (a stop event, a task cancel):
/// nothing new starts, what runs settles or reaches its deadline.
#[pyfunction]
#[pyo3(signature = (run, now, /))]
pub fn stop(py: Python<'_>, run: u32, now: u64) -> PyResult<Batch<'_>> {
    answer(py, runs(|table| table.stop(run, now)))
}

/// Forgets run `run` (the driver gave up on it, or it was cancelled).
#[pyfunction]
#[pyo3(signature = (run, /))]
pub fn abandon(run: u32) {
    runs(|table| table.abandon(run));
}

fn start(py: Python<'_>, flow: BoxedFlow) -> PyResult<Batch<'_>> {
    let batch = runs(|table| table.start(flow));
    tuple(py, batch).map(Typed::new)
}

fn answer(py: Python<'_>, batch: Result<Vec<Slot>, WireError>) -> PyResult<Batch<'_>> {
    tuple(py, batch.map_err(|error| PyRuntimeError::new_err(error.to_string()))?).map(Typed::new)
}

pub(crate) fn tuple(py: Python<'_>, batch: Vec<Slot>) -> PyResult<Bound<'_, PyTuple>> {
    let items = batch.into_iter().map(|slot| -> PyResult<Bound<'_, PyAny>> {
        Ok(match slot {
            Slot::Int(value) => value.into_pyobject(py)?.into_any(),
            Slot::Text(value) => PyString::new(py, &value).into_any(),
            Slot::Nothing => py.None().into_bound(py),
        })
    });
    PyTuple::new(py, items.collect::<PyResult<Vec<_>>>()?)
}
