//! The asyncio driver's inline steps: while a flow's batch is one host call
//! with no deadline (every step of a plain reclaim), the call, the await of
//! what it returns and the answer to the machine run here, in one awaitable,
//! rather than through the driver's Python code; the first other batch (or
//! the ending) is handed back to `_driver.py`, unstarted.
//!
//! It is the driver's own "a lone awaitable is awaited in place", moved
//! native because that Python was most of a reclaim's cost: which ops run
//! inline comes from the core's operand table (plain operands, an `ok` or
//! `instance` answer), and the awaitable delegates to the host's awaitable as
//! `await` does (what it yields goes to the task; a `throw` or `close` goes to
//! it). A host failure (an `Exception`) is the effect's failure; anything
//! else (`CancelledError`) abandons the run and propagates, as in the driver.

use pyo3::exceptions::{PyException, PyRuntimeError, PyStopIteration};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::iterator::PySendResult;
use pyo3::types::{PyDict, PyIterator, PyString, PyTuple, PyType};
use sandbox_reclaim::machine::effect_table::op;
use sandbox_reclaim::machine::effect_table::{answer, operand, target, EffectSpec, EFFECTS};
use sandbox_reclaim::wire::{completion, ending, meta, Slot, HEADER};

use crate::flow::{runs, tuple, Batch};
use crate::hints::{self, Any, Dict, TypeOf, Typed};

/// The package's Python helpers the inline steps share with the driver.
struct Helpers {
    /// `_host_answers.error_message`: what the machine hears of a host exception.
    error_message: Py<PyAny>,
    /// `_host_answers.instance_fields`: reads (and refuses) any `get` answer.
    instance_fields: Py<PyAny>,
    /// `SandboxInstanceRecord`, whose fields are read here directly.
    record_type: Py<PyAny>,
    /// `types.CoroutineType`: a coroutine is stepped itself, other awaitables through `__await__`.
    coroutine_type: Py<PyAny>,
}

static HELPERS: PyOnceLock<Helpers> = PyOnceLock::new();

/// Called once at import by `_driver.py`.
#[pyfunction]
#[pyo3(signature = (error_message, instance_fields, record_type, coroutine_type, /))]
pub fn bind_inline_helpers(
    py: Python<'_>,
    error_message: Typed<'_, hints::ErrorMessage>,
    instance_fields: Typed<'_, hints::InstanceFields>,
    record_type: Typed<'_, TypeOf<hints::SandboxInstanceRecord>, PyType>,
    coroutine_type: Typed<'_, TypeOf<Any>, PyType>,
) {
    let helpers = Helpers {
        error_message: error_message.into_inner().unbind(),
        instance_fields: instance_fields.into_inner().unbind(),
        record_type: record_type.into_inner().into_any().unbind(),
        coroutine_type: coroutine_type.into_inner().into_any().unbind(),
    };
    let _ = HELPERS.set(py, helpers);
}

fn helpers(py: Python<'_>) -> PyResult<&'static Helpers> {
    HELPERS.get(py).ok_or_else(|| PyRuntimeError::new_err("import sandbox_reclaim before using its _native module"))
}

/// `op`'s row when its call can run inline: a host call whose operands
/// pass as they are and whose answer is `ok` or an instance.
fn inline_spec(op: u64) -> Option<&'static EffectSpec> {
    let spec = EFFECTS.get(usize::try_from(op).ok()?)?;
    let plain = |kind: &&str| matches!(*kind, operand::VALUE | operand::PROVIDER | operand::SANDBOX | operand::SIGNAL);
    let answered = spec.answer == answer::OK || spec.answer == answer::INSTANCE;
    (spec.target != target::DRIVER && answered && spec.operands.iter().all(plain)).then_some(spec)
}

/// Each op's Python method name, interned once (the host tables' keys).
fn method_name(py: Python<'_>, op: u32) -> &Bound<'_, PyString> {
    static NAMES: PyOnceLock<Vec<Py<PyString>>> = PyOnceLock::new();
    let names =
        NAMES.get_or_init(py, || EFFECTS.iter().map(|spec| PyString::intern(py, spec.python).unbind()).collect());
    names[op as usize].bind(py)
}

fn slot_to_py<'py>(py: Python<'py>, slot: &Slot) -> PyResult<Bound<'py, PyAny>> {
    Ok(match slot {
        Slot::Int(value) => value.into_pyobject(py)?.into_any(),
        Slot::Text(value) => PyString::new(py, value).into_any(),
        Slot::Nothing => py.None().into_bound(py),
    })
}

/// One host call of an inline batch.
struct Call<'py> {
    effect: u32,
    spec: &'static EffectSpec,
    method: Bound<'py, PyAny>,
    args: Bound<'py, PyTuple>,
}

/// The host awaitable an effect waits on, stepped as `await` steps it.
struct Awaiting {
    effect: u32,
    spec: &'static EffectSpec,
    /// What the awaitable's `__await__` answered (a coroutine's wrapper, a future's iterator).
    iterator: Py<PyIterator>,
}

/// What a batch asks of the inline steps.
enum Plan<'py> {
    Call(Call<'py>),
    /// The run ended (what followed the ending was dropped).
    Ended,
}

fn is_running(batch: &[Slot]) -> bool {
    matches!(batch.get(2), Some(Slot::Int(kind)) if *kind == u64::from(ending::RUNNING))
}

/// How many slots follow a batch's header before its effects.
fn ending_operands(batch: &[Slot]) -> usize {
    match batch.get(2) {
        Some(Slot::Int(kind)) => ending::OPERANDS.get(*kind as usize).map_or(0, |count| *count as usize),
        _ => 0,
    }
}

/// The slots of a log effect's operands (`level, message, n`, then `n` meta entries).
fn log_width(operands: &[Slot]) -> Option<usize> {
    let Some(Slot::Int(count)) = operands.get(2) else { return None };
    let mut at = 3;
    for _ in 0..*count {
        let Some(Slot::Int(kind)) = operands.get(at + 1) else { return None };
        at += if *kind == u64::from(meta::DESTROY_TIMEOUT) { 5 } else { 3 };
    }
    (at <= operands.len()).then_some(at)
}

/// How the awaitable is resumed.
enum Resume<'py> {
    Send(Bound<'py, PyAny>),
    Throw(Bound<'py, PyTuple>),
}

/// The awaitable `_driver.drive` awaits: awaiting it runs a flow's lone host
/// calls with no deadline natively (call, await, answer the machine), and
/// answers the first batch it cannot run inline (unstarted), or the run's
/// ending. `now`: the driver's clock, `None` for the wall clock; `logs`: the
/// flow has a logger (without one, its log effects are skipped).
#[pyclass(module = "sandbox_reclaim._native")]
pub struct InlineSteps {
    run: u32,
    /// `Host.provided` and `Host.store`: where each op's method is.
    provided: Py<PyAny>,
    store: Py<PyAny>,
    /// The driver's host values by effect id (a failed effect's exception).
    values: Py<PyDict>,
    /// The driver's clock (`now()`, epoch ms); `None`: the wall clock, read here.
    now: Option<Py<PyAny>>,
    /// The batch to look at next (the first one, before the first step).
    batch: Option<Vec<Slot>>,
    /// Whether the flow has a logger (without one, its log effects are nothing to do).
    logs: bool,
    awaiting: Option<Awaiting>,
    finished: bool,
}

#[pymethods]
impl InlineSteps {
    #[new]
    #[pyo3(signature = (batch, provided, store, values, now, logs, /))]
    fn new(
        batch: Batch<'_>,
        provided: Typed<'_, hints::ProvidedMethods>,
        store: Typed<'_, hints::StoreMethods>,
        values: Typed<'_, Dict<u64, Any>, PyDict>,
        now: Option<Typed<'_, hints::Clock>>,
        logs: bool,
    ) -> PyResult<Self> {
        let slots = batch
            .iter()
            .map(|item| {
                if item.is_none() {
                    Ok(Slot::Nothing)
                } else if let Ok(text) = item.cast::<PyString>() {
                    Ok(Slot::Text(text.to_str()?.to_owned()))
                } else {
                    Ok(Slot::Int(item.extract()?))
                }
            })
            .collect::<PyResult<Vec<_>>>()?;
        let run = match slots.first() {
            Some(Slot::Int(run)) => *run as u32,
            _ => return Err(PyRuntimeError::new_err("a batch starts with its run")),
        };
        let (provided, store, values) =
            (provided.into_inner().unbind(), store.into_inner().unbind(), values.into_inner().unbind());
        let now = now.map(|now| now.into_inner().unbind());
        Ok(Self { run, provided, store, values, now, batch: Some(slots), logs, awaiting: None, finished: false })
    }

    fn __await__(slf: Bound<'_, Self>) -> Typed<'_, hints::AwaitBatch> {
        Typed::new(slf.into_any())
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.step(py, Resume::Send(py.None().into_bound(py)))
    }

    fn send<'py>(&mut self, py: Python<'py>, value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.step(py, Resume::Send(value))
    }

    // The only annotation pyo3 cannot take from a Rust type (`*args`).
    #[pyo3(signature = (*args: "object"))]
    fn throw<'py>(&mut self, py: Python<'py>, args: Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
        self.step(py, Resume::Throw(args))
    }

    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        if !self.finished {
            self.finished = true;
            self.abandon();
        }
        if let Some(awaiting) = self.awaiting.take() {
            let iterator = awaiting.iterator.bind(py);
            if iterator.hasattr(intern!(py, "close"))? {
                iterator.call_method0(intern!(py, "close"))?;
            }
        }
        Ok(())
    }
}

impl InlineSteps {
    /// Runs until the host's awaitable yields (that goes to the task), or a
    /// batch goes back to the driver (raised as `StopIteration`, `await`'s result).
    fn step<'py>(&mut self, py: Python<'py>, mut resume: Resume<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.finished {
            return Err(PyRuntimeError::new_err("cannot reuse an already awaited flow step"));
        }
        if let (Resume::Throw(args), None) = (&resume, &self.awaiting) {
            // Thrown in before anything was awaited: nothing to hand it to.
            self.finished = true;
            self.abandon();
            return Err(PyErr::from_value(args.get_item(0)?));
        }
        let result = self.advance(py, &mut resume);
        if let Err(error) = &result {
            if !self.finished {
                // Whatever raised (a host's BaseException, an answer out of
                // contract, a broken host table): the run goes with it.
                self.finished = true;
                self.abandon();
            } else if !error.is_instance_of::<PyStopIteration>(py) {
                self.abandon();
            }
        }
        result
    }

    fn advance<'py>(&mut self, py: Python<'py>, resume: &mut Resume<'py>) -> PyResult<Bound<'py, PyAny>> {
        loop {
            let batch = match self.batch.take() {
                Some(batch) => batch,
                None => {
                    let Some(awaiting) = self.awaiting.take() else {
                        return Err(PyRuntimeError::new_err("the flow step has nothing to resume"));
                    };
                    let iterator = awaiting.iterator.bind(py);
                    let stepped = match std::mem::replace(resume, Resume::Send(py.None().into_bound(py))) {
                        Resume::Send(value) => iterator.send(&value),
                        Resume::Throw(args) => throw_into(iterator, args),
                    };
                    match stepped {
                        Ok(PySendResult::Next(yielded)) => {
                            self.awaiting = Some(awaiting);
                            return Ok(yielded);
                        }
                        Ok(PySendResult::Return(value)) => {
                            self.settled(py, awaiting.effect, awaiting.spec, Ok(value))?
                        }
                        Err(error) => self.settled(py, awaiting.effect, awaiting.spec, Err(error))?,
                    }
                }
            };
            let mut batch = batch;
            let call = match self.plan(py, &mut batch)? {
                Some(Plan::Call(call)) => call,
                Some(Plan::Ended) | None => {
                    self.finished = true;
                    return Err(PyStopIteration::new_err((tuple(py, batch)?.unbind(),)));
                }
            };
            let returned = call.method.call1(call.args);
            let value = match returned {
                Ok(value) => value,
                Err(error) => {
                    self.batch = Some(self.settled(py, call.effect, call.spec, Err(error))?);
                    continue;
                }
            };
            match awaited(py, &value) {
                Ok(Some(iterator)) => {
                    self.awaiting = Some(Awaiting { effect: call.effect, spec: call.spec, iterator: iterator.unbind() })
                }
                Ok(None) => self.batch = Some(self.settled(py, call.effect, call.spec, Ok(value))?),
                // `await` of it would raise (a broken `__await__`): the effect failed, as in the driver.
                Err(error) => self.batch = Some(self.settled(py, call.effect, call.spec, Err(error))?),
            }
        }
    }

    /// What `batch` asks of the inline steps: one host call with no deadline,
    /// or an ending; `None`: anything else (the driver's). Logs are skipped
    /// when the flow has no logger, as the driver skips them.
    fn plan<'py>(&self, py: Python<'py>, batch: &mut Vec<Slot>) -> PyResult<Option<Plan<'py>>> {
        let first = HEADER + ending_operands(batch);
        let mut at = first;
        let mut call = None;
        while at < batch.len() {
            let (Some(Slot::Int(op)), Some(Slot::Int(effect))) = (batch.get(at), batch.get(at + 1)) else {
                return Ok(None);
            };
            if *op == u64::from(op::LOG) && !self.logs {
                match log_width(&batch[at + 2..]) {
                    Some(width) => at += 2 + width,
                    None => return Ok(None),
                }
                continue;
            }
            if call.is_some() || batch.get(1) != Some(&Slot::Nothing) {
                return Ok(None); // more than one effect, or a deadline: the driver's
            }
            let Some((found, next)) = self.inline_call(py, batch, at, *op, *effect as u32)? else { return Ok(None) };
            call = Some(found);
            at = next;
        }
        match call {
            Some(call) => Ok(Some(Plan::Call(call))),
            None if is_running(batch) => Ok(None),
            None => {
                batch.truncate(first); // only skipped logs followed the ending
                Ok(Some(Plan::Ended))
            }
        }
    }

    /// The host call of the effect at `at` (op `op`), when it runs inline; and where the next effect starts.
    fn inline_call<'py>(
        &self,
        py: Python<'py>,
        batch: &[Slot],
        at: usize,
        op: u64,
        effect: u32,
    ) -> PyResult<Option<(Call<'py>, usize)>> {
        if !is_running(batch) {
            return Ok(None);
        }
        let Some(spec) = inline_spec(op) else { return Ok(None) };
        let mut at = at + 2;
        let mut provider = None;
        let mut args = Vec::new();
        for kind in spec.operands {
            let Some(slot) = batch.get(at) else { return Ok(None) };
            match *kind {
                operand::PROVIDER => match slot {
                    Slot::Int(number) => provider = Some(*number as usize),
                    _ => return Ok(None),
                },
                operand::SIGNAL if *slot != Slot::Nothing => return Ok(None),
                operand::SIGNAL => {}
                operand::SANDBOX if batch.get(at + 1) != Some(&Slot::Nothing) => return Ok(None),
                _ => args.push(slot_to_py(py, slot)?),
            }
            at += sandbox_reclaim::machine::effect_table::slots(kind);
        }
        let name = method_name(py, spec.op);
        let method = match provider {
            Some(number) => self.provided.bind(py).get_item(name)?.get_item(number)?,
            None => self.store.bind(py).get_item(name)?,
        };
        Ok(Some((Call { effect, spec, method, args: PyTuple::new(py, args)? }, at)))
    }

    /// Feeds how effect `effect` settled to the machine; answers its next batch.
    fn settled(
        &mut self,
        py: Python<'_>,
        effect: u32,
        spec: &EffectSpec,
        outcome: PyResult<Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Slot>> {
        let value = match outcome {
            Ok(value) => value,
            Err(error) if error.is_instance_of::<PyException>(py) => {
                let exception = error.into_value(py).into_bound(py).into_any();
                let message: String = helpers(py)?.error_message.bind(py).call1((&exception,))?.extract()?;
                self.values.bind(py).set_item(effect, exception)?;
                return self.complete(py, effect, completion::FAILED, Some(message), None);
            }
            // Not a host failure (CancelledError): it propagates, the run goes with it (`step`).
            Err(error) => return Err(error),
        };
        if spec.answer != answer::INSTANCE {
            return self.complete(py, effect, completion::OK, None, None);
        }
        if value.is_none() {
            return self.complete(py, effect, completion::NO_INSTANCE, None, None);
        }
        // An answer out of contract raises its TypeError to the caller (`step` abandons the run).
        let (provider, sandbox_id) = instance_fields(py, &value)?;
        self.complete(py, effect, completion::INSTANCE, Some(provider), Some(sandbox_id))
    }

    fn complete(
        &mut self,
        py: Python<'_>,
        effect: u32,
        kind: u32,
        a: Option<String>,
        b: Option<String>,
    ) -> PyResult<Vec<Slot>> {
        let now: u64 = match &self.now {
            Some(clock) => clock.bind(py).call0()?.extract()?,
            None => wall_clock(),
        };
        let run = self.run;
        runs(|table| table.complete(run, effect, kind, a, b, now))
            .map_err(|error| PyRuntimeError::new_err(error.to_string()))
    }

    fn abandon(&mut self) {
        let run = self.run;
        runs(|table| table.abandon(run));
    }
}

/// Whether `value` is awaited (a coroutine, or anything with `__await__`).
/// `None`, a record and a dict never are: asking them (an `AttributeError`
/// inside) would cost a plain store's answer more than the rest of its step.
fn awaitable(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let helpers = helpers(py)?;
    let kind = value.get_type();
    if kind.is(helpers.coroutine_type.bind(py)) {
        return Ok(true);
    }
    if value.is_none() || kind.is(helpers.record_type.bind(py)) || value.is_exact_instance_of::<PyDict>() {
        return Ok(false);
    }
    value.hasattr(intern!(py, "__await__"))
}

/// The iterator `await value` steps, or `None` when `value` is not awaited.
fn awaited<'py>(py: Python<'py>, value: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyIterator>>> {
    if !awaitable(py, value)? {
        return Ok(None);
    }
    let iterator = value.call_method0(intern!(py, "__await__"))?;
    match iterator.cast_into::<PyIterator>() {
        Ok(iterator) => Ok(Some(iterator)),
        Err(error) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "__await__() returned non-iterator of type '{}'",
            error.into_inner().get_type().name()?
        ))),
    }
}

/// `throw(*args)` into the awaitable's iterator, as `await` delegates it.
fn throw_into<'py>(iterator: &Bound<'py, PyIterator>, args: Bound<'py, PyTuple>) -> PyResult<PySendResult<'py>> {
    let py = iterator.py();
    if !iterator.hasattr(intern!(py, "throw"))? {
        return Err(PyErr::from_value(args.get_item(0)?));
    }
    match iterator.call_method1(intern!(py, "throw"), args) {
        Ok(yielded) => Ok(PySendResult::Next(yielded)),
        Err(error) if error.is_instance_of::<PyStopIteration>(py) => {
            Ok(PySendResult::Return(error.value(py).getattr(intern!(py, "value"))?))
        }
        Err(error) => Err(error),
    }
}

/// Epoch milliseconds, as the driver's `WallClock` reads them.
fn wall_clock() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_millis() as u64)
}

/// `(provider, provider_sandbox_id)` of what `get` answered: a record's
/// fields read here; anything else (or a string that cannot cross) read and
/// refused by the driver's own reader.
fn instance_fields(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<(String, String)> {
    let helpers = helpers(py)?;
    if value.get_type().is(helpers.record_type.bind(py)) {
        let provider = value.getattr("provider")?;
        let sandbox_id = value.getattr("provider_sandbox_id")?;
        if let (Ok(provider), Ok(sandbox_id)) = (provider.cast::<PyString>(), sandbox_id.cast::<PyString>()) {
            if let (Ok(provider), Ok(sandbox_id)) = (provider.to_str(), sandbox_id.to_str()) {
                return Ok((provider.to_owned(), sandbox_id.to_owned()));
            }
        }
    }
    helpers.instance_fields.bind(py).call1((value,))?.extract()
}
