//! The core's reclaim machine as the Python interpreter drives it.
//!
//! Every method feeds one answer and returns the next step as a compact
//! `(op, arg, logs)` tuple: `op` is one of [`OPS`], `arg` its operand, and
//! `logs` is `None` or a list of `(level, message, meta)` lines to emit
//! *before* performing the step.
//!
//! A delete's answer carries no data, so the call that asks for a delete
//! already tells the machine it succeeded and returns the steps after it;
//! the interpreter acts on them only once the delete did succeed (a failed
//! delete raises and the machine is dropped). With that, a reclaim against
//! Python host objects is three native calls (start, loaded, destroyed), and
//! two with the native store.

use std::sync::Arc;

use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use sandbox_reclaim::driver::now_millis;
use sandbox_reclaim::machine::{
    DestroyResult, InstanceView, LogLevel, LogLine, MetaValue, Misuse, Reclaim, Reclaimer, Step,
};
use sandbox_reclaim::{InMemorySandboxInstanceStore, LeakLedger, NewLeak, ReclaimOutcome, SandboxInstanceStore};

use crate::ready::ready;
use crate::records::{instance_view, is_exactly};
use crate::store::{store_error, MemoryLedgerStore, MemoryStore};

/// Call `instances.get(arg)`, then `loaded(result)`.
const OP_GET: u8 = 0;
/// Call `provider.destroy(arg)`, then `destroyed()` or `destroy_failed(error)`.
const OP_DESTROY: u8 = 1;
/// `arg` is `(key, op, arg, logs)`: call `instances.delete(key)`; once it
/// succeeded, the other three are the next step.
const OP_DELETE: u8 = 2;
/// `arg` is `(leak_fields, op, arg, logs)`, `leak_fields` being `(key,
/// provider, provider_sandbox_id, run_id, error_message, failed_at)`: call
/// `instances.delete_recording_leak(key, NewLeak(*leak_fields))`; once it
/// succeeded, the other three are the next step.
const OP_DELETE_RECORDING_LEAK: u8 = 3;
/// Done: `arg` is the outcome's index in the reference's order.
const OP_FINISH: u8 = 4;
/// Done: raise `SandboxReclaimFailedError(*arg)`, `arg` being `(run_id, sandbox_key)`.
const OP_FAIL: u8 = 5;
/// Emit the logs, then call `resume()` (the native store's next step waits for them).
const OP_LOG: u8 = 6;

/// The op codes, exported as module constants under these names.
pub const OPS: [(&str, u8); 7] = [
    ("OP_GET", OP_GET),
    ("OP_DESTROY", OP_DESTROY),
    ("OP_DELETE", OP_DELETE),
    ("OP_DELETE_RECORDING_LEAK", OP_DELETE_RECORDING_LEAK),
    ("OP_FINISH", OP_FINISH),
    ("OP_FAIL", OP_FAIL),
    ("OP_LOG", OP_LOG),
];

/// `reclaimSandbox` or `sandboxReclaimer`'s machine.
enum Machine {
    Reclaim(Reclaim),
    Reclaimer(Reclaimer),
}

impl Machine {
    fn poll(&mut self) -> Option<Step> {
        match self {
            Self::Reclaim(machine) => machine.poll(),
            Self::Reclaimer(machine) => machine.poll(),
        }
    }

    fn instance_loaded(&mut self, instance: Option<InstanceView<'_>>) -> Result<(), Misuse> {
        match self {
            Self::Reclaim(machine) => machine.instance_loaded(instance),
            Self::Reclaimer(machine) => machine.instance_loaded(instance),
        }
    }

    fn destroy_finished(&mut self, result: DestroyResult) -> Result<(), Misuse> {
        match self {
            Self::Reclaim(machine) => machine.destroy_finished(result),
            Self::Reclaimer(machine) => machine.destroy_finished(result),
        }
    }

    fn instance_deleted(&mut self) -> Result<(), Misuse> {
        match self {
            Self::Reclaim(machine) => machine.instance_deleted(),
            Self::Reclaimer(machine) => machine.instance_deleted(),
        }
    }
}

/// One reclaim in progress. Created by [`start`]; not constructible from Python.
// A free list: one Drive is made and dropped per reclaim.
#[pyclass(module = "sandbox_reclaim._native", freelist = 64)]
pub struct Drive {
    machine: Machine,
    /// The native store, answered in place instead of through Python.
    inline_store: Option<Arc<InMemorySandboxInstanceStore>>,
    /// Without a logger, log lines are not even built.
    with_logs: bool,
    /// The provider's exception, substituted for the machine's
    /// `MetaValue::DestroyError` so the logger gets the very object.
    destroy_error: Option<Py<PyAny>>,
    /// A native-store step held back until the logs before it are emitted.
    held: Option<Box<Step>>,
    /// The caller's own key and sandbox id objects, handed back as step
    /// operands instead of new strings.
    key: Option<Py<PyString>>,
    sandbox_id: Option<Py<PyString>>,
}

type StepTuple<'py> = PyResult<Bound<'py, PyTuple>>;

/// Starts a reclaim and returns `(drive, op, arg, logs)`: the machine and its
/// first step. `reclaimer` selects `sandbox_reclaimer`'s machine.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn start<'py>(
    py: Python<'py>,
    run_id: String,
    sandbox_key: Option<Bound<'py, PyString>>,
    provider_name: String,
    instances: &Bound<'py, PyAny>,
    has_ledger: bool,
    reclaimer: bool,
    with_logs: bool,
) -> StepTuple<'py> {
    // Exact types only: a Python subclass may override get/delete, and then
    // its methods, not the native map, must answer.
    let inline_store = if is_exactly::<MemoryStore>(instances) || is_exactly::<MemoryLedgerStore>(instances) {
        Some(instances.cast::<MemoryStore>()?.get().inner.clone())
    } else {
        None
    };
    let key = sandbox_key.as_ref().map(|key| key.to_str().map(str::to_owned)).transpose()?;
    let machine = if reclaimer {
        Machine::Reclaimer(Reclaimer::new(run_id, key, provider_name, has_ledger))
    } else {
        Machine::Reclaim(Reclaim::new(run_id, key, provider_name, has_ledger))
    };
    let key = sandbox_key.map(Bound::unbind);
    let mut drive = Drive { machine, inline_store, with_logs, destroy_error: None, held: None, key, sandbox_id: None };
    let (op, arg, logs) = drive.advance(py)?;
    (Bound::new(py, drive)?, op, arg, logs).into_pyobject(py)
}

#[pymethods]
impl Drive {
    /// Feeds `instances.get`'s answer: a record, a wire-form dict, or `None`.
    fn loaded<'py>(&mut self, py: Python<'py>, instance: &Bound<'py, PyAny>) -> StepTuple<'py> {
        if instance.is_none() {
            self.machine.instance_loaded(None).map_err(misuse)?;
        } else {
            let (provider, id) = instance_view(instance)?;
            let view = InstanceView { provider: provider.to_str()?, provider_sandbox_id: id.to_str()? };
            self.machine.instance_loaded(Some(view)).map_err(misuse)?;
            self.sandbox_id = Some(id.unbind());
        }
        self.step(py)
    }

    /// The provider's `destroy` returned (or its awaitable finished).
    fn destroyed<'py>(&mut self, py: Python<'py>) -> StepTuple<'py> {
        self.machine.destroy_finished(DestroyResult::Succeeded).map_err(misuse)?;
        self.step(py)
    }

    /// The provider's `destroy` raised `error`; its `str()` feeds the leak ledger.
    fn destroy_failed<'py>(&mut self, py: Python<'py>, error: &Bound<'py, PyAny>) -> StepTuple<'py> {
        let message = match error.str() {
            Ok(text) => text.to_str()?.to_owned(),
            // An exception whose __str__ raises still failed the destroy.
            Err(_) => error.get_type().name()?.to_string(),
        };
        self.destroy_error = Some(error.clone().unbind());
        self.machine.destroy_finished(DestroyResult::Failed { message }).map_err(misuse)?;
        let step = self.step(py);
        // Only the warn line just built needs the error. Holding it longer
        // would make a cycle the GC cannot see (error -> traceback -> frame
        // -> this Drive -> error), as Drive does not implement __traverse__.
        self.destroy_error = None;
        step
    }

    /// Continues after an `OP_LOG` step.
    fn resume<'py>(&mut self, py: Python<'py>) -> StepTuple<'py> {
        self.step(py)
    }
}

impl Drive {
    fn step<'py>(&mut self, py: Python<'py>) -> StepTuple<'py> {
        self.advance(py)?.into_pyobject(py)
    }

    /// Runs the machine to its next host step, answering native-store steps
    /// in place and collecting log lines on the way.
    fn advance<'py>(&mut self, py: Python<'py>) -> PyResult<(u8, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let mut logs: Option<Bound<'py, PyList>> = None;
        loop {
            let step = match self.held.take() {
                Some(step) => *step,
                None => self.machine.poll().ok_or_else(|| misuse(Misuse::stalled()))?,
            };
            let store = match (&self.inline_store, &step) {
                (Some(store), Step::GetInstance { .. } | Step::DeleteInstance { .. })
                | (Some(store), Step::DeleteInstanceRecordingLeak { .. }) => Some(store.clone()),
                _ => None,
            };
            if let Some(store) = store {
                if logs.is_some() {
                    // The reference logs before it deletes; keep that order.
                    self.held = Some(Box::new(step));
                    return Ok((OP_LOG, py.None().into_bound(py), into_any(py, logs)));
                }
                self.answer_natively(&store, step)?;
                continue;
            }
            let (op, arg): (u8, Bound<'py, PyAny>) = match step {
                Step::Log(line) => {
                    if self.with_logs {
                        let entry = self.log_entry(py, &line)?;
                        logs.get_or_insert_with(|| PyList::empty(py)).append(entry)?;
                    }
                    continue;
                }
                Step::GetInstance { key } => (OP_GET, own_or_new(py, &self.key, &key)),
                Step::Destroy { provider_sandbox_id } => {
                    (OP_DESTROY, own_or_new(py, &self.sandbox_id, &provider_sandbox_id))
                }
                Step::DeleteInstance { key } => {
                    let key = own_or_new(py, &self.key, &key);
                    let (then_op, then_arg, then_logs) = self.after_delete(py)?;
                    (OP_DELETE, (key, then_op, then_arg, then_logs).into_pyobject(py)?.into_any())
                }
                Step::DeleteInstanceRecordingLeak { key, leak } => {
                    let fields =
                        (key, leak.provider, leak.provider_sandbox_id, leak.run_id, leak.error_message, now_millis());
                    let (then_op, then_arg, then_logs) = self.after_delete(py)?;
                    (OP_DELETE_RECORDING_LEAK, (fields, then_op, then_arg, then_logs).into_pyobject(py)?.into_any())
                }
                Step::Finish(outcome) => (OP_FINISH, outcome_index(outcome).into_pyobject(py)?.into_any()),
                Step::Fail(failure) => (OP_FAIL, (failure.run_id, failure.sandbox_key).into_pyobject(py)?.into_any()),
            };
            return Ok((op, arg, into_any(py, logs)));
        }
    }

    /// The step after a successful delete (see the module docs).
    fn after_delete<'py>(&mut self, py: Python<'py>) -> PyResult<(u8, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        self.machine.instance_deleted().map_err(misuse)?;
        self.advance(py)
    }

    fn answer_natively(&mut self, store: &InMemorySandboxInstanceStore, step: Step) -> PyResult<()> {
        match step {
            Step::GetInstance { key } => {
                let found = ready(store.get(&key))?.map_err(store_error)?;
                let view = found.as_ref().map(|record| InstanceView {
                    provider: &record.provider,
                    provider_sandbox_id: &record.provider_sandbox_id,
                });
                self.machine.instance_loaded(view).map_err(misuse)
            }
            Step::DeleteInstance { key } => {
                ready(store.delete(&key))?.map_err(store_error)?;
                self.machine.instance_deleted().map_err(misuse)
            }
            Step::DeleteInstanceRecordingLeak { key, leak } => {
                let leak = NewLeak::from_draft(leak, now_millis());
                ready(store.delete_recording_leak(&key, leak))?.map_err(store_error)?;
                self.machine.instance_deleted().map_err(misuse)
            }
            _ => Err(misuse(Misuse::stalled())),
        }
    }

    fn log_entry<'py>(&self, py: Python<'py>, line: &LogLine) -> PyResult<Bound<'py, PyTuple>> {
        let meta = PyDict::new(py);
        for (key, value) in &line.meta {
            match value {
                MetaValue::Text(text) => meta.set_item(*key, text)?,
                MetaValue::DestroyError => {
                    meta.set_item(*key, self.destroy_error.as_ref().map(|error| error.bind(py)))?
                }
            }
        }
        let level = match line.level {
            LogLevel::Warn => intern!(py, "warn"),
            LogLevel::Errors => intern!(py, "errors"),
            LogLevel::Sandbox => intern!(py, "sandbox"),
        };
        (level, line.message, meta).into_pyobject(py)
    }
}

/// The caller's string object when it holds `text`, else a new one.
fn own_or_new<'py>(py: Python<'py>, own: &Option<Py<PyString>>, text: &str) -> Bound<'py, PyAny> {
    match own {
        Some(object) => object.bind(py).clone().into_any(),
        None => PyString::new(py, text).into_any(),
    }
}

fn into_any<'py>(py: Python<'py>, logs: Option<Bound<'py, PyList>>) -> Bound<'py, PyAny> {
    logs.map_or_else(|| py.None().into_bound(py), Bound::into_any)
}

/// The outcome's position in the reference's order (the Python enum's order).
fn outcome_index(outcome: ReclaimOutcome) -> usize {
    ReclaimOutcome::ALL.iter().position(|known| *known == outcome).unwrap_or_default()
}

fn misuse(error: Misuse) -> PyErr {
    PyRuntimeError::new_err(error.to_string())
}
