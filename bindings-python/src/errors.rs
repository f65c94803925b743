//! Maps the core's store, store-open and provider errors to the package's
//! Python exceptions.
//!
//! The exception classes are defined in Python (`sandbox_reclaim/_errors.py`,
//! so they subclass `SandboxReclaimError`) and registered here once at import,
//! like the record classes. Bad input always becomes a `ValueError` whose
//! message names the field in snake_case, before any side effect.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use sandbox_reclaim::{InvalidInput, InvalidRecord, ProviderError, StoreError, StoreOpenError};

use crate::hints::{self, TypeOf, Typed};

/// The Python exception classes native errors become.
struct ErrorTypes {
    store: Py<PyType>,
    provider: Py<PyType>,
    not_owned: Py<PyType>,
    store_open: Py<PyType>,
    schema_too_new: Py<PyType>,
}

static ERROR_TYPES: PyOnceLock<ErrorTypes> = PyOnceLock::new();

/// Called once by `sandbox_reclaim/__init__.py` with `SandboxStoreError`,
/// `SandboxProviderError`, `SandboxNotOwnedError`, `SandboxStoreOpenError`
/// and `SchemaTooNewError`.
#[pyfunction]
#[pyo3(name = "_bind_error_types", signature = (store, provider, not_owned, store_open, schema_too_new, /))]
pub fn bind_error_types(
    py: Python<'_>,
    store: ExceptionType<'_>,
    provider: ExceptionType<'_>,
    not_owned: ExceptionType<'_>,
    store_open: ExceptionType<'_>,
    schema_too_new: ExceptionType<'_>,
) {
    let [store, provider, not_owned, store_open, schema_too_new] =
        [store, provider, not_owned, store_open, schema_too_new].map(|class| class.into_inner().unbind());
    let _ = ERROR_TYPES.set(py, ErrorTypes { store, provider, not_owned, store_open, schema_too_new });
}

/// An exception class: `type[Exception]`.
type ExceptionType<'py> = Typed<'py, TypeOf<hints::Exception>, PyType>;

/// An exception of a registered class (built under the GIL: errors surface
/// from futures finishing on tokio threads).
fn raise<A>(pick: fn(&ErrorTypes) -> &Py<PyType>, args: A) -> PyErr
where
    A: for<'py> pyo3::IntoPyObject<'py> + Send + Sync + 'static,
{
    Python::attach(|py| match ERROR_TYPES.get(py) {
        Some(types) => PyErr::from_type(pick(types).bind(py).clone(), args),
        None => PyRuntimeError::new_err("import sandbox_reclaim before using its _native module"),
    })
}

/// A camelCase wire field name as the snake_case name Python callers use.
pub fn snake_case(field: &str) -> String {
    let mut snake = String::with_capacity(field.len() + 4);
    for character in field.chars() {
        if character.is_ascii_uppercase() {
            snake.push('_');
            snake.push(character.to_ascii_lowercase());
        } else {
            snake.push(character);
        }
    }
    snake
}

/// A durable store's failure: refused input is a `ValueError`, anything the
/// backend did a `SandboxStoreError`.
pub fn store_error(error: StoreError) -> PyErr {
    match error {
        StoreError::InvalidRecord(invalid) => invalid_record(invalid),
        StoreError::InvalidKey(reason) => PyValueError::new_err(format!("invalid sandbox key: `key` {reason}")),
        StoreError::Backend(backend) => raise(|types| &types.store, (backend.to_string(),)),
    }
}

/// A store that could not be opened: a bad option is a `ValueError` naming
/// it, a newer schema `SchemaTooNewError`, anything else (unreachable, failed
/// migration, a file that is not ours) `SandboxStoreOpenError`.
pub fn store_open_error(error: StoreOpenError) -> PyErr {
    match error {
        StoreOpenError::InvalidOption { field, reason } => {
            PyValueError::new_err(format!("invalid store option `{}`: {reason}", snake_case(field)))
        }
        StoreOpenError::SchemaTooNew { found, supported } => {
            raise(|types| &types.schema_too_new, (error.to_string(), found, supported))
        }
        other => raise(|types| &types.store_open, (other.to_string(),)),
    }
}

/// A provider's failure: `SandboxNotOwnedError` for the ownership guard,
/// `ValueError` naming the field for refused input, else `SandboxProviderError`.
pub fn provider_error(error: ProviderError) -> PyErr {
    match error {
        ProviderError::NotOwned { ref id, .. } => {
            let id = id.clone();
            raise(|types| &types.not_owned, (error.to_string(), id))
        }
        ProviderError::Backend(backend) => match backend.downcast::<InvalidInput>() {
            Ok(invalid) => invalid_input(&invalid),
            Err(other) => raise(|types| &types.provider, (other.to_string(),)),
        },
    }
}

/// A refused instance record. The core names fields in their wire
/// (camelCase) spelling; Python callers know them as snake_case attributes.
pub fn invalid_record(invalid: InvalidRecord) -> PyErr {
    let field = snake_case(invalid.field);
    PyValueError::new_err(format!("invalid sandbox instance record: `{field}` {}", invalid.reason))
}

/// Refused input, naming the snake_case field.
pub fn invalid_input(invalid: &InvalidInput) -> PyErr {
    PyValueError::new_err(format!("invalid `{}`: {}", snake_case(invalid.field), invalid.reason))
}
