//! The durable stores (SQLite, PostgreSQL) for Python: every method returns an
//! awaitable running the core's store on the shared tokio runtime ([`crate::bridge`]). The
//! package wraps them in `async def` methods (`sandbox_reclaim/_stores.py`),
//! since an awaitable can only be made while an event loop runs.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use sandbox_reclaim::{
    LeakEntry, LeakLedger, PostgresOptions, PostgresSandboxInstanceStore, SandboxInstanceStore, SqliteOptions,
    SqliteSandboxInstanceStore, StoreError,
};

use crate::bridge::awaitable;
use crate::errors::{store_error, store_open_error};
use crate::records::{instance_from_py, instance_to_py, leak_entry_from_py, leak_entry_to_py, new_leak_from_py};

/// One of the core's SQL stores.
pub enum SqlBackend {
    Sqlite(SqliteSandboxInstanceStore),
    Postgres(PostgresSandboxInstanceStore),
}

impl SqlBackend {
    fn store(&self) -> &dyn SandboxInstanceStore {
        match self {
            Self::Sqlite(store) => store,
            Self::Postgres(store) => store,
        }
    }

    /// The store's leak ledger (both SQL stores keep one).
    pub fn ledger(&self) -> &dyn LeakLedger {
        match self {
            Self::Sqlite(store) => store,
            Self::Postgres(store) => store,
        }
    }

    async fn close(&self) {
        match self {
            Self::Sqlite(store) => store.close().await,
            Self::Postgres(store) => store.close().await,
        }
    }
}

/// A native SQL store handle; `sandbox_reclaim` wraps it.
#[pyclass(name = "SqlStore", module = "sandbox_reclaim._native", frozen)]
pub struct SqlStore {
    pub(crate) backend: Arc<SqlBackend>,
}

/// A duration in seconds from Python, refused (naming `field`) unless finite and non-negative.
pub fn seconds(field: &str, value: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value)
        .map_err(|_| PyValueError::new_err(format!("`{field}` must be a finite, non-negative number of seconds")))
}

/// Opens (creating if missing) the SQLite store at `path`; awaitable of a `SqlStore`.
#[pyfunction]
pub fn open_sqlite(
    py: Python<'_>,
    path: String,
    busy_timeout: f64,
    max_connections: u32,
) -> PyResult<Bound<'_, PyAny>> {
    let options = SqliteOptions { busy_timeout: seconds("busy_timeout", busy_timeout)?, max_connections };
    let open = async move { SqliteSandboxInstanceStore::open_with(path, options).await };
    awaitable(py, open, |py, opened| {
        let store = opened.map_err(store_open_error)?;
        SqlStore { backend: Arc::new(SqlBackend::Sqlite(store)) }.into_py_any(py)
    })
}

/// Connects to PostgreSQL at `url`; awaitable of a `SqlStore`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn connect_postgres(
    py: Python<'_>,
    url: String,
    schema: String,
    instances_table: String,
    leaks_table: String,
    schema_version_table: String,
    max_connections: u32,
) -> PyResult<Bound<'_, PyAny>> {
    let options = PostgresOptions {
        schema,
        instances_table,
        leaks_table,
        schema_version_table,
        max_connections,
        ..PostgresOptions::default()
    };
    // Refused options raise here, before any connection is attempted.
    options.validate().map_err(store_open_error)?;
    let connect = async move { PostgresSandboxInstanceStore::connect(&url, options).await };
    awaitable(py, connect, |py, connected| {
        let store = connected.map_err(store_open_error)?;
        SqlStore { backend: Arc::new(SqlBackend::Postgres(store)) }.into_py_any(py)
    })
}

#[pymethods]
impl SqlStore {
    /// Awaitable of the record under `key`, or `None`.
    fn get<'py>(&self, py: Python<'py>, key: String) -> PyResult<Bound<'py, PyAny>> {
        let backend = self.backend.clone();
        awaitable(py, async move { backend.store().get(&key).await }, |py, found| match found.map_err(store_error)? {
            Some(record) => Ok(instance_to_py(py, &record)?.unbind()),
            None => Ok(py.None()),
        })
    }

    /// Awaitable storing `record`; a record breaking the contract raises now.
    fn upsert<'py>(&self, py: Python<'py>, record: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let record = instance_from_py(record)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.store().upsert(&record).await }, unit)
    }

    /// Awaitable deleting `key` (a missing key is a no-op).
    fn delete<'py>(&self, py: Python<'py>, key: String) -> PyResult<Bound<'py, PyAny>> {
        let backend = self.backend.clone();
        awaitable(py, async move { backend.store().delete(&key).await }, unit)
    }

    /// Awaitable deleting `key` and recording `leak` in one transaction.
    fn delete_recording_leak<'py>(
        &self,
        py: Python<'py>,
        key: String,
        leak: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let leak = new_leak_from_py(leak)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.ledger().delete_recording_leak(&key, leak).await }, unit)
    }

    /// Awaitable of the pending leak entries, oldest first.
    #[pyo3(signature = (provider=None))]
    fn list_leaks<'py>(&self, py: Python<'py>, provider: Option<String>) -> PyResult<Bound<'py, PyAny>> {
        let backend = self.backend.clone();
        awaitable(py, async move { backend.ledger().list_leaks(provider.as_deref()).await }, entries_to_py)
    }

    /// Awaitable of how many leak entries are pending.
    #[pyo3(signature = (provider=None))]
    fn count_leaks<'py>(&self, py: Python<'py>, provider: Option<String>) -> PyResult<Bound<'py, PyAny>> {
        let backend = self.backend.clone();
        awaitable(py, async move { backend.ledger().count_leaks(provider.as_deref()).await }, |py, count| {
            count.map_err(store_error)?.into_py_any(py)
        })
    }

    /// Awaitable claiming up to `limit` of `provider`'s entries for `lease` seconds.
    fn claim_leaks<'py>(
        &self,
        py: Python<'py>,
        provider: String,
        limit: usize,
        lease: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let lease = seconds("lease", lease)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.ledger().claim_leaks(&provider, limit, lease).await }, entries_to_py)
    }

    /// Awaitable removing a claimed entry whose sandbox is now destroyed.
    fn resolve_leak<'py>(&self, py: Python<'py>, entry: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let entry = leak_entry_from_py(entry)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.ledger().resolve_leak(&entry).await }, unit)
    }

    /// Awaitable bumping a claimed entry's attempts and releasing the claim.
    fn record_retry_failure<'py>(
        &self,
        py: Python<'py>,
        entry: &Bound<'py, PyAny>,
        message: String,
        failed_at: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let entry = leak_entry_from_py(entry)?;
        let backend = self.backend.clone();
        let retry = async move { backend.ledger().record_retry_failure(&entry, &message, failed_at).await };
        awaitable(py, retry, unit)
    }

    /// Awaitable closing the pool; later calls fail.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let backend = self.backend.clone();
        awaitable(py, async move { backend.close().await }, |py, ()| Ok(py.None()))
    }
}

/// Leak entries as a list of the package's `LeakEntry` objects.
fn entries_to_py(py: Python<'_>, entries: Result<Vec<LeakEntry>, StoreError>) -> PyResult<Py<PyAny>> {
    let entries = entries.map_err(store_error)?;
    let objects = entries.iter().map(|entry| leak_entry_to_py(py, entry)).collect::<PyResult<Vec<_>>>()?;
    objects.into_py_any(py)
}

/// `None`, or the store's error.
fn unit(py: Python<'_>, done: Result<(), StoreError>) -> PyResult<Py<PyAny>> {
    done.map_err(store_error)?;
    Ok(py.None())
}
