//! Converts between the package's Python record classes (frozen dataclasses
//! defined in `sandbox_reclaim/_records.py`) and the core's records.
//!
//! Fields are read by attribute, so any object with the record's attributes
//! (a later native record class, a user's own dataclass) works too.

use pyo3::exceptions::{PyAttributeError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};
use pyo3::{intern, PyTypeInfo};
use sandbox_reclaim::model::MAX_SAFE_INTEGER;
use sandbox_reclaim::{InvalidRecord, LeakEntry, NewLeak, SandboxInstanceRecord};

/// The Python classes the native store builds its answers from.
struct RecordTypes {
    instance: Py<PyAny>,
    leak_entry: Py<PyAny>,
}

static RECORD_TYPES: PyOnceLock<RecordTypes> = PyOnceLock::new();

/// Called once by `sandbox_reclaim/__init__.py` with its `SandboxInstanceRecord`
/// and `LeakEntry` classes. Registration (rather than importing them from
/// here) avoids an import cycle between the package and its native module.
#[pyfunction]
#[pyo3(name = "_bind_record_types")]
pub fn bind_record_types(py: Python<'_>, instance: Py<PyAny>, leak_entry: Py<PyAny>) {
    // A second import of the package (e.g. after importlib.reload) keeps the first classes.
    let _ = RECORD_TYPES.set(py, RecordTypes { instance, leak_entry });
}

fn record_types(py: Python<'_>) -> PyResult<&'static RecordTypes> {
    RECORD_TYPES
        .get(py)
        .ok_or_else(|| PyRuntimeError::new_err("import sandbox_reclaim before using its _native module"))
}

/// Builds a `SandboxInstanceRecord`; positional order is the dataclass's field order.
pub fn instance_to_py<'py>(py: Python<'py>, record: &SandboxInstanceRecord) -> PyResult<Bound<'py, PyAny>> {
    let class = record_types(py)?.instance.bind(py);
    class.call1((
        &record.key,
        &record.provider,
        &record.provider_sandbox_id,
        &record.thread_id,
        record.updated_at,
        record.latest_snapshot_id.as_deref(),
        record.latest_run_id.as_deref(),
    ))
}

/// Builds a `LeakEntry`; positional order is the dataclass's field order.
pub fn leak_entry_to_py<'py>(py: Python<'py>, entry: &LeakEntry) -> PyResult<Bound<'py, PyAny>> {
    let class = record_types(py)?.leak_entry.bind(py);
    class.call1((
        &entry.key,
        &entry.provider,
        &entry.provider_sandbox_id,
        &entry.run_id,
        &entry.last_error,
        entry.failed_at,
        entry.attempts,
    ))
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
    parsed.validate().map_err(invalid_record)?;
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

/// The two fields of a loaded instance record the reclaim decision reads:
/// `(provider, provider_sandbox_id)`. Accepts a record object or a dict in
/// the camelCase wire form.
pub fn instance_view<'py>(instance: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyString>, Bound<'py, PyString>)> {
    let py = instance.py();
    let what = "the record instances.get() returned";
    if let Ok(wire) = instance.cast::<PyDict>() {
        let provider = wire_text(wire, intern!(py, "provider"), what)?;
        let id = wire_text(wire, intern!(py, "providerSandboxId"), what)?;
        return Ok((provider, id));
    }
    let provider = attribute(instance, intern!(py, "provider"), what)?;
    let id = attribute(instance, intern!(py, "provider_sandbox_id"), what)?;
    Ok((as_text(provider, "provider", what)?, as_text(id, "provider_sandbox_id", what)?))
}

fn wire_text<'py>(wire: &Bound<'py, PyDict>, key: &Bound<'py, PyString>, what: &str) -> PyResult<Bound<'py, PyString>> {
    match wire.get_item(key)? {
        Some(value) => as_text(value, key.to_str()?, what),
        None => Err(PyTypeError::new_err(format!("{what} has no `{key}`"))),
    }
}

fn attribute<'py>(object: &Bound<'py, PyAny>, name: &Bound<'py, PyString>, what: &str) -> PyResult<Bound<'py, PyAny>> {
    object.getattr(name).map_err(|error| {
        if error.is_instance_of::<PyAttributeError>(object.py()) {
            let kind = type_name(object);
            PyTypeError::new_err(format!("expected a {}, got {kind} (no `{name}` attribute)", class_of(what)))
        } else {
            error
        }
    })
}

/// "SandboxInstanceRecord" for a record type name, else a generic description.
fn class_of(what: &str) -> &str {
    if what.starts_with("the record") {
        "SandboxInstanceRecord, a wire-form dict or None"
    } else {
        what
    }
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

/// The core names fields in their wire (camelCase) spelling; Python callers
/// know them as snake_case attributes.
fn invalid_record(invalid: InvalidRecord) -> PyErr {
    let mut field = String::with_capacity(invalid.field.len() + 4);
    for character in invalid.field.chars() {
        if character.is_ascii_uppercase() {
            field.push('_');
            field.push(character.to_ascii_lowercase());
        } else {
            field.push(character);
        }
    }
    PyValueError::new_err(format!("invalid sandbox instance record: `{field}` {}", invalid.reason))
}

/// Whether `object` is exactly (not a subclass of) the native class `T`.
pub fn is_exactly<T: PyTypeInfo>(object: &Bound<'_, PyAny>) -> bool {
    object.get_type().is(T::type_object(object.py()))
}
