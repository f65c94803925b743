//! Converts between the package's Python record classes (frozen dataclasses
//! generated into `sandbox_reclaim/_records.py` from the core's Rust types)
//! and the core's records.
//!
//! The classes are built positionally: the generator orders a record's
//! required fields first, in the Rust order, then its optional ones, and a
//! record another extends (`LeakEntry`) takes its optional `claim` by keyword.
//!
//! Fields are read by attribute, so any object with the record's attributes
//! (a later native record class, a user's own dataclass) works too.

use pyo3::exceptions::{PyAttributeError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyInt, PyString, PyType};
use sandbox_reclaim::model::MAX_SAFE_INTEGER;
use sandbox_reclaim::{AuditEntry, DueLeak, LeakEntry, LeakReason, NewLeak, SandboxInstanceRecord};

use crate::hints::{self, TypeOf, Typed};

/// The Python classes the native store builds its answers from.
struct RecordTypes {
    instance: Py<PyAny>,
    leak_entry: Py<PyAny>,
    due_leak: Py<PyAny>,
    audit_entry: Py<PyAny>,
}

static RECORD_TYPES: PyOnceLock<RecordTypes> = PyOnceLock::new();

/// Called once by `sandbox_reclaim/__init__.py` with its `SandboxInstanceRecord`,
/// `LeakEntry`, `DueLeak` and `AuditEntry` classes. Registration (rather than
/// importing them from here) avoids an import cycle between the package and
/// its native module.
#[pyfunction]
#[pyo3(name = "_bind_record_types", signature = (instance, leak_entry, due_leak, audit_entry, /))]
pub fn bind_record_types(
    py: Python<'_>,
    instance: Typed<'_, TypeOf<hints::SandboxInstanceRecord>, PyType>,
    leak_entry: Typed<'_, TypeOf<hints::LeakEntry>, PyType>,
    due_leak: Typed<'_, TypeOf<hints::DueLeak>, PyType>,
    audit_entry: Typed<'_, TypeOf<hints::AuditEntry>, PyType>,
) {
    let [instance, leak_entry, due_leak, audit_entry] =
        [instance.into_inner(), leak_entry.into_inner(), due_leak.into_inner(), audit_entry.into_inner()]
            .map(|class| class.into_any().unbind());
    // A second import of the package (e.g. after importlib.reload) keeps the first classes.
    let _ = RECORD_TYPES.set(py, RecordTypes { instance, leak_entry, due_leak, audit_entry });
}

fn record_types(py: Python<'_>) -> PyResult<&'static RecordTypes> {
    RECORD_TYPES
        .get(py)
        .ok_or_else(|| PyRuntimeError::new_err("import sandbox_reclaim before using its _native module"))
}

/// Builds a `SandboxInstanceRecord`; positional order is the dataclass's field order.
pub fn instance_to_py<'py>(
    py: Python<'py>,
    record: &SandboxInstanceRecord,
) -> PyResult<Typed<'py, hints::SandboxInstanceRecord>> {
    let class = record_types(py)?.instance.bind(py);
    typed(class.call1((
        &record.key,
        &record.provider,
        &record.provider_sandbox_id,
        &record.thread_id,
        record.updated_at,
        record.latest_snapshot_id.as_deref(),
        record.latest_run_id.as_deref(),
    )))
}

/// Builds a `LeakEntry`; positional order is the dataclass's field order.
pub fn leak_entry_to_py<'py>(py: Python<'py>, entry: &LeakEntry) -> PyResult<Typed<'py, hints::LeakEntry>> {
    let class = record_types(py)?.leak_entry.bind(py);
    let fields =
        (&entry.key, &entry.provider, &entry.provider_sandbox_id, &entry.run_id, &entry.last_error, entry.failed_at);
    let positional = (fields.0, fields.1, fields.2, fields.3, fields.4, fields.5, entry.attempts);
    typed(class.call(positional, Some(&claim(py, entry)?)))
}

/// The keyword-only `claim` a leak entry was handed out under.
fn claim<'py>(py: Python<'py>, entry: &LeakEntry) -> PyResult<Bound<'py, PyDict>> {
    let keywords = PyDict::new(py);
    keywords.set_item(intern!(py, "claim"), entry.claim)?;
    Ok(keywords)
}

/// Builds a `DueLeak` (a `LeakEntry` with `reason` and `next_attempt_at`);
/// positional order is the dataclass's field order.
pub fn due_leak_to_py<'py>(py: Python<'py>, due: &DueLeak) -> PyResult<Typed<'py, hints::DueLeak>> {
    let class = record_types(py)?.due_leak.bind(py);
    let entry = &due.entry;
    typed(class.call(
        (
            &entry.key,
            &entry.provider,
            &entry.provider_sandbox_id,
            &entry.run_id,
            &entry.last_error,
            entry.failed_at,
            entry.attempts,
            due.reason.as_str(),
            due.next_attempt_at,
        ),
        Some(&claim(py, entry)?),
    ))
}

/// Builds an `AuditEntry`; positional order is the dataclass's field order.
pub fn audit_entry_to_py<'py>(py: Python<'py>, entry: &AuditEntry) -> PyResult<Typed<'py, hints::AuditEntry>> {
    let class = record_types(py)?.audit_entry.bind(py);
    typed(class.call1((
        entry.at,
        &entry.host,
        &entry.provider,
        &entry.provider_sandbox_id,
        &entry.reason,
        &entry.result,
        entry.key.as_deref(),
        entry.error.as_deref(),
    )))
}

/// A record just built from its registered class, declared as that class.
fn typed<H>(built: PyResult<Bound<'_, PyAny>>) -> PyResult<Typed<'_, H>> {
    built.map(Typed::new)
}

/// Reads an `AuditEntry` (or any object with its attributes).
pub fn audit_entry_from_py(entry: &Bound<'_, PyAny>) -> PyResult<AuditEntry> {
    let py = entry.py();
    let what = "AuditEntry";
    Ok(AuditEntry {
        at: epoch_millis(entry, intern!(py, "at"), what)?,
        host: text(entry, intern!(py, "host"), what)?,
        provider: text(entry, intern!(py, "provider"), what)?,
        provider_sandbox_id: text(entry, intern!(py, "provider_sandbox_id"), what)?,
        key: optional_text(entry, intern!(py, "key"), what)?,
        reason: text(entry, intern!(py, "reason"), what)?,
        result: text(entry, intern!(py, "result"), what)?,
        error: optional_text(entry, intern!(py, "error"), what)?,
    })
}

/// A leak reason's string form (`destroy-failed`, `orphan`, `idle`), refused
/// (`ValueError` naming `reason`) when it is none of them.
pub fn leak_reason(reason: &str) -> PyResult<LeakReason> {
    LeakReason::ALL.into_iter().find(|known| known.as_str() == reason).ok_or_else(|| {
        PyValueError::new_err(format!("`reason` must be 'destroy-failed', 'orphan' or 'idle', got {reason:?}"))
    })
}

/// Reads a `SandboxInstanceRecord` (or any object with its attributes) and
/// checks it the way every store does, before anything is written.
pub fn instance_from_py(record: &Bound<'_, PyAny>) -> PyResult<SandboxInstanceRecord> {
    let py = record.py();
    let what = "SandboxInstanceRecord";
    let parsed = SandboxInstanceRecord {
        key: text(record, intern!(py, "key"), what)?,
        provider: text(record, intern!(py, "provider"), what)?,
        provider_sandbox_id: text(record, intern!(py, "provider_sandbox_id"), what)?,
        latest_snapshot_id: optional_text(record, intern!(py, "latest_snapshot_id"), what)?,
        thread_id: text(record, intern!(py, "thread_id"), what)?,
        latest_run_id: optional_text(record, intern!(py, "latest_run_id"), what)?,
        updated_at: epoch_millis(record, intern!(py, "updated_at"), what)?,
    };
    parsed.validate().map_err(crate::errors::invalid_record)?;
    Ok(parsed)
}

/// Reads a `NewLeak` (or any object with its attributes).
pub fn new_leak_from_py(leak: &Bound<'_, PyAny>) -> PyResult<NewLeak> {
    let py = leak.py();
    let what = "NewLeak";
    Ok(NewLeak {
        key: text(leak, intern!(py, "key"), what)?,
        provider: text(leak, intern!(py, "provider"), what)?,
        provider_sandbox_id: text(leak, intern!(py, "provider_sandbox_id"), what)?,
        run_id: text(leak, intern!(py, "run_id"), what)?,
        error_message: text(leak, intern!(py, "error_message"), what)?,
        failed_at: epoch_millis(leak, intern!(py, "failed_at"), what)?,
    })
}

/// Reads a `LeakEntry` (or any object with its attributes), as handed back
/// to `resolve_leak` / `record_retry_failure`.
pub fn leak_entry_from_py(entry: &Bound<'_, PyAny>) -> PyResult<LeakEntry> {
    let py = entry.py();
    let what = "LeakEntry";
    let attempts = attribute(entry, intern!(py, "attempts"), what)?;
    let attempts = attempts
        .extract::<u32>()
        .map_err(|_| PyTypeError::new_err(format!("{what}: `attempts` must be an int between 0 and 2^32-1")))?;
    Ok(LeakEntry {
        key: text(entry, intern!(py, "key"), what)?,
        provider: text(entry, intern!(py, "provider"), what)?,
        provider_sandbox_id: text(entry, intern!(py, "provider_sandbox_id"), what)?,
        run_id: text(entry, intern!(py, "run_id"), what)?,
        last_error: text(entry, intern!(py, "last_error"), what)?,
        failed_at: epoch_millis(entry, intern!(py, "failed_at"), what)?,
        attempts,
        claim: claim_of(entry, what)?,
    })
}

/// The claim an entry carries back (`None`: absent, as on an entry that was
/// only listed, or on a user's own object).
fn claim_of(entry: &Bound<'_, PyAny>, what: &str) -> PyResult<Option<u64>> {
    let py = entry.py();
    let Ok(claim) = entry.getattr(intern!(py, "claim")) else { return Ok(None) };
    if claim.is_none() {
        return Ok(None);
    }
    claim
        .extract::<u64>()
        .map(Some)
        .map_err(|_| PyTypeError::new_err(format!("{what}: `claim` must be an int or None")))
}

fn attribute<'py>(object: &Bound<'py, PyAny>, name: &Bound<'py, PyString>, what: &str) -> PyResult<Bound<'py, PyAny>> {
    object.getattr(name).map_err(|error| {
        if error.is_instance_of::<PyAttributeError>(object.py()) {
            let kind = type_name(object);
            PyTypeError::new_err(format!("expected a {what}, got {kind} (no `{name}` attribute)"))
        } else {
            error
        }
    })
}

fn as_text<'py>(value: Bound<'py, PyAny>, field: &str, what: &str) -> PyResult<Bound<'py, PyString>> {
    value.cast_into::<PyString>().map_err(|error| {
        let kind = type_name(&error.into_inner());
        PyTypeError::new_err(format!("{what}: `{field}` must be a str, got {kind}"))
    })
}

fn text(object: &Bound<'_, PyAny>, name: &Bound<'_, PyString>, what: &str) -> PyResult<String> {
    let value = attribute(object, name, what)?;
    Ok(as_text(value, name.to_str()?, what)?.to_str()?.to_owned())
}

fn optional_text(object: &Bound<'_, PyAny>, name: &Bound<'_, PyString>, what: &str) -> PyResult<Option<String>> {
    let value = attribute(object, name, what)?;
    if value.is_none() {
        return Ok(None);
    }
    Ok(Some(as_text(value, name.to_str()?, what)?.to_str()?.to_owned()))
}

fn epoch_millis(object: &Bound<'_, PyAny>, name: &Bound<'_, PyString>, what: &str) -> PyResult<u64> {
    let value = attribute(object, name, what)?;
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        let kind = type_name(&value);
        return Err(PyTypeError::new_err(format!("{what}: `{name}` must be an int (epoch milliseconds), got {kind}")));
    }
    match value.extract::<u64>() {
        Ok(millis) if millis <= MAX_SAFE_INTEGER => Ok(millis),
        _ => Err(PyValueError::new_err(format!("{what}: `{name}` must be a whole number between 0 and 2^53-1"))),
    }
}

fn type_name(object: &Bound<'_, PyAny>) -> String {
    object.get_type().name().map(|name| name.to_string()).unwrap_or_else(|_| "object".to_owned())
}
