//! `retry_leaks` with a native provider and a native store: the core's loop,
//! run entirely on the tokio runtime.

use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use sandbox_reclaim::{InMemorySandboxInstanceStore, LeakLedger, RetryOptions};

use crate::bridge::awaitable;
use crate::errors::store_error;
use crate::providers::ManagedProvider;
use crate::sql_store::{seconds, SqlBackend, SqlStore};
use crate::store::MemoryLedgerStore;

/// A native store's ledger, kept alive across the await.
enum Ledger {
    Memory(Arc<InMemorySandboxInstanceStore>),
    Sql(Arc<SqlBackend>),
}

impl Ledger {
    fn from_py(instances: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(store) = instances.cast::<SqlStore>() {
            return Ok(Self::Sql(store.get().backend.clone()));
        }
        if let Ok(store) = instances.cast::<MemoryLedgerStore>() {
            return Ok(Self::Memory(store.as_super().get().inner.clone()));
        }
        Err(PyTypeError::new_err("`instances` must be a native store with a leak ledger"))
    }

    fn ledger(&self) -> &dyn LeakLedger {
        match self {
            Self::Memory(store) => store.as_ref(),
            Self::Sql(backend) => backend.ledger(),
        }
    }
}

/// Awaitable of `(retried, destroyed, still_failing)`.
#[pyfunction]
pub fn retry_leaks<'py>(
    py: Python<'py>,
    provider: &Bound<'py, ManagedProvider>,
    instances: &Bound<'py, PyAny>,
    limit: usize,
    lease: f64,
) -> PyResult<Bound<'py, PyAny>> {
    let options = RetryOptions { limit, lease: seconds("lease", lease)? };
    let provider = provider.get().inner.clone();
    let ledger = Ledger::from_py(instances)?;
    let retry = async move { sandbox_reclaim::retry_leaks(provider.destroyer(), ledger.ledger(), options).await };
    awaitable(py, retry, |py, retried| {
        let summary = retried.map_err(store_error)?;
        (summary.retried, summary.destroyed, summary.still_failing).into_py_any(py)
    })
}
