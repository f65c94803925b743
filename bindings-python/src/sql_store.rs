//! The durable stores (SQLite, PostgreSQL) for Python: every method returns an
//! awaitable running the core's store on the shared tokio runtime ([`crate::bridge`]). The
//! package wraps them in `async def` methods (`sandbox_reclaim/_stores.py`),
//! since an awaitable can only be made while an event loop runs.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::inspect::PyStaticExpr;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};
use pyo3::IntoPyObjectExt;
use pyo3::PyTypeInfo;
use sandbox_reclaim::options::arguments::{
    self, ArgumentError, HostNumber, Seconds, Whole, BUSY_TIMEOUT_SECONDS, COUNT, LEASE_SECONDS, MILLIS, POOL_SIZE,
};
use sandbox_reclaim::options::{defaults, Dialect, Problem};
use sandbox_reclaim::{
    AuditEntry, DueLeak, FleetStore, LeakEntry, LeakLedger, PostgresOptions, PostgresSandboxInstanceStore,
    SandboxInstanceStore, SqliteOptions, SqliteSandboxInstanceStore, StoreError,
};

use crate::bridge::awaitable;
use crate::errors::{store_error, store_open_error};
use crate::hints::{self, Awaitable, Float, Hint, Int, Object, Typed};
use crate::records::{
    audit_entry_from_py, audit_entry_to_py, due_leak_to_py, instance_from_py, instance_to_py, leak_entry_from_py,
    leak_entry_to_py, leak_reason, new_leak_from_py,
};

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

    /// The store's fleet side (both SQL stores have one).
    pub fn fleet(&self) -> &dyn FleetStore {
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

/// A native SQLite or PostgreSQL store handle; every method returns an
/// awaitable. `sandbox_reclaim` wraps it.
#[pyclass(name = "SqlStore", module = "sandbox_reclaim._native", frozen)]
pub struct SqlStore {
    pub(crate) backend: Arc<SqlBackend>,
}

impl Hint for SqlStore {
    const HINT: PyStaticExpr = <Self as PyTypeInfo>::TYPE_HINT;
}

impl SqlStore {
    /// The store the command opened (`--store`), for the console script.
    pub(crate) fn from_command_store(store: sandbox_reclaim_cli::store::Store) -> Self {
        let backend = match store {
            sandbox_reclaim_cli::store::Store::Sqlite(store) => SqlBackend::Sqlite(store),
            sandbox_reclaim_cli::store::Store::Postgres { store, .. } => SqlBackend::Postgres(store),
        };
        Self { backend: Arc::new(backend) }
    }
}

/// A Python value where a number is expected, as it crossed (an `int` by
/// sign and magnitude, whatever its size), for the core to check.
pub fn host_number(value: &Bound<'_, PyAny>) -> PyResult<HostNumber> {
    if value.is_instance_of::<PyBool>() {
        return Ok(HostNumber::Other("bool".to_owned()));
    }
    if value.is_instance_of::<PyInt>() {
        if let Ok(small) = value.extract::<u64>() {
            return Ok(HostNumber::Int { negative: false, magnitude: u128::from(small) });
        }
        let bits: u64 = value.call_method0("bit_length")?.extract()?;
        let negative = value.lt(0)?;
        return Ok(if bits <= 128 {
            HostNumber::Int { negative, magnitude: value.abs()?.extract()? }
        } else {
            HostNumber::HugeInt { negative, bits }
        });
    }
    if value.is_instance_of::<PyFloat>() {
        return Ok(HostNumber::Float(value.extract()?));
    }
    Ok(HostNumber::Other(value.get_type().name()?.to_string()))
}

/// The core's refusal as Python raises it: a wrong type is a `TypeError`,
/// a value out of range a `ValueError`.
fn refused(error: ArgumentError) -> PyErr {
    match error.problem {
        Problem::Type => PyTypeError::new_err(error.message),
        Problem::Range => PyValueError::new_err(error.message),
    }
}

/// `value` if the core finds it an `int` in `range` (`field` as Python names it).
pub fn whole(field: &str, value: &Bound<'_, PyAny>, range: Whole) -> PyResult<u64> {
    arguments::whole(&host_number(value)?, field, range, Dialect::Python).map_err(refused)
}

/// Checks a record's whole-number field by the core's rule (an `int` in
/// `0..=2^53-1`, or `0..2^32` for a `count`); raises its refusal.
#[pyfunction]
#[pyo3(signature = (owner, field, wire, value, count, /))]
pub fn check_record_whole(owner: &str, field: &str, wire: &str, value: Typed<'_, Object>, count: bool) -> PyResult<()> {
    let range = if count { COUNT } else { MILLIS };
    arguments::record_whole(&host_number(&value)?, owner, field, wire, range).map(drop).map_err(refused)
}

/// An optional `int` (`None` is absent).
pub fn optional_whole(field: &str, value: Option<&Bound<'_, PyAny>>, range: Whole) -> PyResult<Option<u64>> {
    value.map(|value| whole(field, value, range)).transpose()
}

/// A count (a limit) in `0..2^32`.
pub fn count(field: &str, value: &Bound<'_, PyAny>) -> PyResult<usize> {
    Ok(whole(field, value, COUNT)? as usize)
}

/// Epoch milliseconds (or a duration in milliseconds) in `0..=2^53-1`.
pub fn millis(field: &str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    whole(field, value, MILLIS)
}

/// A duration in seconds if the core finds it in `range`.
pub fn seconds(field: &str, value: &Bound<'_, PyAny>, range: Seconds) -> PyResult<Duration> {
    arguments::seconds(&host_number(value)?, field, range).map_err(refused)
}

/// A claim lease in seconds.
pub fn lease(value: &Bound<'_, PyAny>) -> PyResult<Duration> {
    seconds("lease", value, LEASE_SECONDS)
}

/// An option as a native function received it: [`Given::Absent`] when the
/// caller left it out, so the core's default applies (`SqliteOptions` /
/// `PostgresOptions::default()`, as in Node). An explicit `None` is a value
/// like any other, refused with a `TypeError` naming the option. `H`: the
/// option's type in the stub.
pub enum Given<'py, H> {
    /// Not passed: the core's default.
    Absent,
    /// Passed, as it crossed.
    Value(Typed<'py, H>),
}

impl<'a, 'py, H: Hint> FromPyObject<'a, 'py> for Given<'py, H> {
    type Error = PyErr;

    const INPUT_TYPE: PyStaticExpr = H::HINT;

    fn extract(value: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Self::Value(Typed::new(value.to_owned())))
    }
}

impl<'py, H> Given<'py, H> {
    /// `None` when absent, else the value `read` accepts.
    fn read<T>(&self, read: impl FnOnce(&Bound<'py, PyAny>) -> PyResult<T>) -> PyResult<Option<T>> {
        match self {
            Self::Absent => Ok(None),
            Self::Value(value) => read(value).map(Some),
        }
    }

    /// Overwrites `slot` (holding the core's default) with the value `read` accepts, if given.
    fn apply<T>(&self, slot: &mut T, read: impl FnOnce(&Bound<'py, PyAny>) -> PyResult<T>) -> PyResult<()> {
        if let Some(value) = self.read(read)? {
            *slot = value;
        }
        Ok(())
    }
}

/// A name option (schema or table): a `str`, else a `TypeError` naming it.
fn name(field: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    value.extract().map_err(|_| {
        let kind = value.get_type().name().map_or_else(|_| "object".to_owned(), |kind| kind.to_string());
        PyTypeError::new_err(format!("`{field}` must be a str, got {kind}"))
    })
}

/// A pool size (`max_connections`).
fn pool_size(value: &Bound<'_, PyAny>) -> PyResult<u32> {
    Ok(whole("max_connections", value, POOL_SIZE)? as u32)
}

/// Opens (creating if missing) the SQLite store at `path`; awaitable of a
/// `SqlStore`. An option left out takes the core's default
/// (`SqliteOptions::default()`).
#[pyfunction]
#[pyo3(signature = (path, /, *, busy_timeout = Given::Absent, max_connections = Given::Absent))]
pub fn open_sqlite<'py>(
    py: Python<'py>,
    path: String,
    busy_timeout: Given<'py, Float>,
    max_connections: Given<'py, Int>,
) -> PyResult<Awaitable<'py, SqlStore>> {
    let mut options = SqliteOptions::default();
    busy_timeout.apply(&mut options.busy_timeout, |value| seconds("busy_timeout", value, BUSY_TIMEOUT_SECONDS))?;
    max_connections.apply(&mut options.max_connections, pool_size)?;
    let open = async move { SqliteSandboxInstanceStore::open_with(path, options).await };
    awaitable(py, open, |py, opened| {
        let store = opened.map_err(store_open_error)?;
        SqlStore { backend: Arc::new(SqlBackend::Sqlite(store)) }.into_py_any(py)
    })
}

/// Connects to PostgreSQL at `url`; awaitable of a `SqlStore`. An option left
/// out takes the core's default (`PostgresOptions::default()`).
#[pyfunction]
#[pyo3(signature = (
    url,
    /,
    *,
    schema = Given::Absent,
    instances_table = Given::Absent,
    leaks_table = Given::Absent,
    schema_version_table = Given::Absent,
    max_connections = Given::Absent,
))]
pub fn connect_postgres<'py>(
    py: Python<'py>,
    url: String,
    schema: Given<'py, String>,
    instances_table: Given<'py, String>,
    leaks_table: Given<'py, String>,
    schema_version_table: Given<'py, String>,
    max_connections: Given<'py, Int>,
) -> PyResult<Awaitable<'py, SqlStore>> {
    let mut options = PostgresOptions::default();
    let names = [
        ("schema", schema, &mut options.schema),
        ("instances_table", instances_table, &mut options.instances_table),
        ("leaks_table", leaks_table, &mut options.leaks_table),
        ("schema_version_table", schema_version_table, &mut options.schema_version_table),
    ];
    for (field, given, slot) in names {
        given.apply(slot, |value| name(field, value))?;
    }
    max_connections.apply(&mut options.max_connections, pool_size)?;
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
    #[pyo3(signature = (key, /))]
    fn get<'py>(&self, py: Python<'py>, key: String) -> PyResult<Awaitable<'py, Option<hints::SandboxInstanceRecord>>> {
        let backend = self.backend.clone();
        awaitable(py, async move { backend.store().get(&key).await }, |py, found| match found.map_err(store_error)? {
            Some(record) => Ok(instance_to_py(py, &record)?.into_inner().unbind()),
            None => Ok(py.None()),
        })
    }

    /// Awaitable storing `record`; a record breaking the contract raises now.
    #[pyo3(signature = (record, /))]
    fn upsert<'py>(
        &self,
        py: Python<'py>,
        record: Typed<'py, hints::SandboxInstanceRecord>,
    ) -> PyResult<Awaitable<'py, ()>> {
        let record = instance_from_py(&record)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.store().upsert(&record).await }, unit)
    }

    /// Awaitable deleting `key` (a missing key is a no-op).
    #[pyo3(signature = (key, /))]
    fn delete<'py>(&self, py: Python<'py>, key: String) -> PyResult<Awaitable<'py, ()>> {
        let backend = self.backend.clone();
        awaitable(py, async move { backend.store().delete(&key).await }, unit)
    }

    /// Awaitable deleting `key` and recording `leak` in one transaction.
    #[pyo3(signature = (key, leak, /))]
    fn delete_recording_leak<'py>(
        &self,
        py: Python<'py>,
        key: String,
        leak: Typed<'py, hints::NewLeak>,
    ) -> PyResult<Awaitable<'py, ()>> {
        let leak = new_leak_from_py(&leak)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.ledger().delete_recording_leak(&key, leak).await }, unit)
    }

    /// Awaitable of the pending leak entries, oldest first.
    #[pyo3(signature = (provider=None))]
    fn list_leaks<'py>(
        &self,
        py: Python<'py>,
        provider: Option<String>,
    ) -> PyResult<Awaitable<'py, Vec<hints::LeakEntry>>> {
        let backend = self.backend.clone();
        awaitable(py, async move { backend.ledger().list_leaks(provider.as_deref()).await }, entries_to_py)
    }

    /// Awaitable of how many leak entries are pending.
    #[pyo3(signature = (provider=None))]
    fn count_leaks<'py>(&self, py: Python<'py>, provider: Option<String>) -> PyResult<Awaitable<'py, u64>> {
        let backend = self.backend.clone();
        awaitable(py, async move { backend.ledger().count_leaks(provider.as_deref()).await }, |py, count| {
            count.map_err(store_error)?.into_py_any(py)
        })
    }

    /// Awaitable claiming up to `limit` of `provider`'s entries for `lease` seconds.
    #[pyo3(signature = (provider, limit, lease, /))]
    fn claim_leaks<'py>(
        &self,
        py: Python<'py>,
        provider: String,
        limit: Typed<'py, Int>,
        lease: Typed<'py, Float>,
    ) -> PyResult<Awaitable<'py, Vec<hints::LeakEntry>>> {
        let limit = count("limit", &limit)?;
        let lease = self::lease(&lease)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.ledger().claim_leaks(&provider, limit, lease).await }, entries_to_py)
    }

    /// Awaitable removing a claimed entry whose sandbox is now destroyed.
    #[pyo3(signature = (entry, /))]
    fn resolve_leak<'py>(
        &self,
        py: Python<'py>,
        entry: Typed<'py, hints::LeakEntry>,
    ) -> PyResult<Awaitable<'py, bool>> {
        let entry = leak_entry_from_py(&entry)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.ledger().resolve_leak(&entry).await }, flag)
    }

    /// Awaitable bumping a claimed entry's attempts and releasing the claim.
    #[pyo3(signature = (entry, message, failed_at, /))]
    fn record_retry_failure<'py>(
        &self,
        py: Python<'py>,
        entry: Typed<'py, hints::LeakEntry>,
        message: String,
        failed_at: Typed<'py, Int>,
    ) -> PyResult<Awaitable<'py, bool>> {
        let failed_at = millis("failed_at", &failed_at)?;
        let entry = leak_entry_from_py(&entry)?;
        let backend = self.backend.clone();
        let retry = async move { backend.ledger().record_retry_failure(&entry, &message, failed_at).await };
        awaitable(py, retry, flag)
    }

    // ---- the fleet store (reconcile); every time is epoch milliseconds ----

    /// Awaitable of the records last updated before `older_than`, oldest first, at most `limit`.
    #[pyo3(signature = (older_than, limit, /))]
    fn list_stale<'py>(
        &self,
        py: Python<'py>,
        older_than: Typed<'py, Int>,
        limit: Typed<'py, Int>,
    ) -> PyResult<Awaitable<'py, Vec<hints::SandboxInstanceRecord>>> {
        let limit = count("limit", &limit)?;
        let older_than = millis("older_than", &older_than)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.fleet().list_stale(older_than, limit).await }, |py, records| {
            let records = records.map_err(store_error)?;
            let objects = records.iter().map(|record| instance_to_py(py, record)).collect::<PyResult<Vec<_>>>()?;
            objects.into_py_any(py)
        })
    }

    /// Awaitable of whether record `key` (still at `updated_at`) was expired into the ledger.
    #[pyo3(signature = (key, updated_at, leak, /))]
    fn expire_idle<'py>(
        &self,
        py: Python<'py>,
        key: String,
        updated_at: Typed<'py, Int>,
        leak: Typed<'py, hints::NewLeak>,
    ) -> PyResult<Awaitable<'py, bool>> {
        let updated_at = millis("updated_at", &updated_at)?;
        let leak = new_leak_from_py(&leak)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.fleet().expire_idle(&key, updated_at, leak).await }, flag)
    }

    /// Awaitable of every sandbox id of `provider` a record or a leak entry
    /// references, and (with `destroyed_since`, epoch ms) every one an audit
    /// row says was destroyed at or after it.
    #[pyo3(signature = (provider, destroyed_since = None, /))]
    fn sandbox_references<'py>(
        &self,
        py: Python<'py>,
        provider: String,
        destroyed_since: Option<Typed<'py, Int>>,
    ) -> PyResult<Awaitable<'py, Vec<String>>> {
        let since = optional_whole("destroyed_since", destroyed_since.as_deref(), MILLIS)?.unwrap_or(u64::MAX);
        let backend = self.backend.clone();
        awaitable(py, async move { backend.fleet().sandbox_references(&provider, since).await }, |py, ids| {
            ids.map_err(store_error)?.into_py_any(py)
        })
    }

    /// Awaitable of the registry: every sandbox id of `provider` an instance
    /// record named whose record still exists or was last written or deleted
    /// at or after `since` (epoch ms).
    #[pyo3(signature = (provider, since, /))]
    fn registered_sandboxes<'py>(
        &self,
        py: Python<'py>,
        provider: String,
        since: Typed<'py, Int>,
    ) -> PyResult<Awaitable<'py, Vec<String>>> {
        let since = millis("since", &since)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.fleet().registered_sandboxes(&provider, since).await }, |py, ids| {
            ids.map_err(store_error)?.into_py_any(py)
        })
    }

    /// Awaitable of a mark of the store's record deletions, taken before a
    /// sweep lists (see `referenced_among`): a whole number that never goes down.
    #[pyo3(signature = (provider, /))]
    fn sweep_mark<'py>(&self, py: Python<'py>, provider: String) -> PyResult<Awaitable<'py, u64>> {
        let backend = self.backend.clone();
        awaitable(py, async move { backend.fleet().sweep_mark(&provider).await }, |py, mark| {
            mark.map_err(store_error)?.into_py_any(py)
        })
    }

    /// Awaitable of those of `ids` a record or a leak entry references now,
    /// that an audit row says was destroyed (or a leak retry resolved) at or
    /// after `destroyed_since` (epoch ms), or whose record was deleted after
    /// `mark`; sorted, each once.
    #[pyo3(signature = (provider, ids, destroyed_since, mark, /))]
    fn referenced_among<'py>(
        &self,
        py: Python<'py>,
        provider: String,
        ids: Vec<String>,
        destroyed_since: Typed<'py, Int>,
        mark: Typed<'py, Int>,
    ) -> PyResult<Awaitable<'py, Vec<String>>> {
        let destroyed_since = millis("destroyed_since", &destroyed_since)?;
        let mark = millis("mark", &mark)?;
        let backend = self.backend.clone();
        awaitable(
            py,
            async move { backend.fleet().referenced_among(&provider, &ids, destroyed_since, mark).await },
            |py, ids| ids.map_err(store_error)?.into_py_any(py),
        )
    }

    /// Awaitable of those of `ids` the registry names (a record of `provider`
    /// names it now, or one last written or deleted at or after `since` did).
    #[pyo3(signature = (provider, ids, since, /))]
    fn registered_among<'py>(
        &self,
        py: Python<'py>,
        provider: String,
        ids: Vec<String>,
        since: Typed<'py, Int>,
    ) -> PyResult<Awaitable<'py, Vec<String>>> {
        let since = millis("since", &since)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.fleet().registered_among(&provider, &ids, since).await }, |py, ids| {
            ids.map_err(store_error)?.into_py_any(py)
        })
    }

    /// Awaitable of at most `limit` registered ids of `provider` for a lookup
    /// by id: last written or deleted at or after `since`, named by nothing
    /// now, not known gone; never checked first, then least recently checked.
    #[pyo3(signature = (provider, since, limit, /))]
    fn lookup_candidates<'py>(
        &self,
        py: Python<'py>,
        provider: String,
        since: Typed<'py, Int>,
        limit: Typed<'py, Int>,
    ) -> PyResult<Awaitable<'py, Vec<String>>> {
        let since = millis("since", &since)?;
        let limit = count("limit", &limit)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.fleet().lookup_candidates(&provider, since, limit).await }, |py, ids| {
            ids.map_err(store_error)?.into_py_any(py)
        })
    }

    /// Awaitable writing what a lookup learned: `gone` are gone, `checked`
    /// were checked at `now` (epoch ms).
    #[pyo3(signature = (provider, gone, checked, now, /))]
    fn lookup_checked<'py>(
        &self,
        py: Python<'py>,
        provider: String,
        gone: Vec<String>,
        checked: Vec<String>,
        now: Typed<'py, Int>,
    ) -> PyResult<Awaitable<'py, ()>> {
        let now = millis("now", &now)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.fleet().lookup_checked(&provider, &gone, &checked, now).await }, unit)
    }

    /// Awaitable recording `leak` with `reason`, due at `next_attempt_at`.
    #[pyo3(signature = (leak, reason, next_attempt_at, /))]
    fn record_leak<'py>(
        &self,
        py: Python<'py>,
        leak: Typed<'py, hints::NewLeak>,
        reason: &str,
        next_attempt_at: Typed<'py, Int>,
    ) -> PyResult<Awaitable<'py, ()>> {
        let next_attempt_at = millis("next_attempt_at", &next_attempt_at)?;
        let leak = new_leak_from_py(&leak)?;
        let reason = leak_reason(reason)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.fleet().record_leak(leak, reason, next_attempt_at).await }, unit)
    }

    /// Awaitable of `provider`'s due entries (`DueLeak`s), claimed for `lease_ms` (`None`: only listed).
    #[pyo3(signature = (provider, limit, lease_ms, now, /))]
    fn due_leaks<'py>(
        &self,
        py: Python<'py>,
        provider: String,
        limit: Typed<'py, Int>,
        lease_ms: Option<Typed<'py, Int>>,
        now: Typed<'py, Int>,
    ) -> PyResult<Awaitable<'py, Vec<hints::DueLeak>>> {
        let limit = count("limit", &limit)?;
        let lease_ms = optional_whole("lease_ms", lease_ms.as_deref(), MILLIS)?;
        let now = millis("now", &now)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.fleet().due_leaks(&provider, limit, lease_ms, now).await }, due_to_py)
    }

    /// Awaitable deferring a claimed entry that failed again.
    #[pyo3(signature = (entry, message, failed_at, next_attempt_at, /))]
    fn defer_leak<'py>(
        &self,
        py: Python<'py>,
        entry: Typed<'py, hints::LeakEntry>,
        message: String,
        failed_at: Typed<'py, Int>,
        next_attempt_at: Typed<'py, Int>,
    ) -> PyResult<Awaitable<'py, bool>> {
        let failed_at = millis("failed_at", &failed_at)?;
        let next_attempt_at = millis("next_attempt_at", &next_attempt_at)?;
        let entry = leak_entry_from_py(&entry)?;
        let backend = self.backend.clone();
        let defer = async move { backend.fleet().defer_leak(&entry, &message, failed_at, next_attempt_at).await };
        awaitable(py, defer, flag)
    }

    /// Awaitable of whether `holder` took (or renewed) `provider`'s orphan sweep.
    #[pyo3(signature = (provider, holder, lease_ms, now, /))]
    fn claim_sweep<'py>(
        &self,
        py: Python<'py>,
        provider: String,
        holder: String,
        lease_ms: Typed<'py, Int>,
        now: Typed<'py, Int>,
    ) -> PyResult<Awaitable<'py, bool>> {
        let lease_ms = millis("lease_ms", &lease_ms)?;
        let now = millis("now", &now)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.fleet().claim_sweep(&provider, &holder, lease_ms, now).await }, flag)
    }

    /// Awaitable giving `provider`'s sweep back if `holder` still holds it.
    #[pyo3(signature = (provider, holder, /))]
    fn release_sweep<'py>(&self, py: Python<'py>, provider: String, holder: String) -> PyResult<Awaitable<'py, ()>> {
        let backend = self.backend.clone();
        awaitable(py, async move { backend.fleet().release_sweep(&provider, &holder).await }, unit)
    }

    /// Awaitable of bounded growth: deletes `provider`'s registry rows last
    /// seen before `registry_before` and its audit rows from before
    /// `audit_before` (epoch ms).
    #[pyo3(signature = (provider, registry_before, audit_before, /))]
    fn prune<'py>(
        &self,
        py: Python<'py>,
        provider: String,
        registry_before: Typed<'py, Int>,
        audit_before: Typed<'py, Int>,
    ) -> PyResult<Awaitable<'py, ()>> {
        let registry_before = millis("registry_before", &registry_before)?;
        let audit_before = millis("audit_before", &audit_before)?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.fleet().prune(&provider, registry_before, audit_before).await }, unit)
    }

    /// Awaitable appending audit rows (`AuditEntry`s), in order.
    #[pyo3(signature = (entries, /))]
    fn append_audit<'py>(
        &self,
        py: Python<'py>,
        entries: Vec<Typed<'py, hints::AuditEntry>>,
    ) -> PyResult<Awaitable<'py, ()>> {
        let entries = entries.iter().map(|entry| audit_entry_from_py(entry)).collect::<PyResult<Vec<AuditEntry>>>()?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.fleet().append_audit(&entries).await }, unit)
    }

    /// Awaitable of the audit rows with `at >= since`, oldest first, at most `limit`.
    #[pyo3(signature = (since=None, limit=None))]
    fn list_audit<'py>(
        &self,
        py: Python<'py>,
        since: Option<Typed<'py, Int>>,
        limit: Option<Typed<'py, Int>>,
    ) -> PyResult<Awaitable<'py, Vec<hints::AuditEntry>>> {
        let (since, limit) = audit_query(since.as_deref(), limit.as_deref())?;
        let backend = self.backend.clone();
        awaitable(py, async move { backend.fleet().list_audit(since, limit).await }, |py, rows| {
            let rows = rows.map_err(store_error)?;
            let objects = rows.iter().map(|row| audit_entry_to_py(py, row)).collect::<PyResult<Vec<_>>>()?;
            objects.into_py_any(py)
        })
    }

    /// Awaitable closing the pool; later calls fail.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Awaitable<'py, ()>> {
        let backend = self.backend.clone();
        awaitable(py, async move { backend.close().await }, |py, ()| Ok(py.None()))
    }
}

/// `list_audit`'s `limit` (`None`: the core's default) and `since` (`None`: from the start).
pub fn audit_query(
    since: Option<&Bound<'_, PyAny>>,
    limit: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Option<u64>, usize)> {
    let limit = optional_whole("limit", limit, COUNT)?.map_or(defaults::AUDIT_LIMIT, |limit| limit as usize);
    Ok((optional_whole("since", since, MILLIS)?, limit))
}

/// Leak entries as a list of the package's `LeakEntry` objects.
fn entries_to_py(py: Python<'_>, entries: Result<Vec<LeakEntry>, StoreError>) -> PyResult<Py<PyAny>> {
    let entries = entries.map_err(store_error)?;
    let objects = entries.iter().map(|entry| leak_entry_to_py(py, entry)).collect::<PyResult<Vec<_>>>()?;
    objects.into_py_any(py)
}

/// Due leaks as a list of the package's `DueLeak` objects.
fn due_to_py(py: Python<'_>, due: Result<Vec<DueLeak>, StoreError>) -> PyResult<Py<PyAny>> {
    let due = due.map_err(store_error)?;
    let objects = due.iter().map(|due| due_leak_to_py(py, due)).collect::<PyResult<Vec<_>>>()?;
    objects.into_py_any(py)
}

/// `True`/`False`, or the store's error.
fn flag(py: Python<'_>, answer: Result<bool, StoreError>) -> PyResult<Py<PyAny>> {
    answer.map_err(store_error)?.into_py_any(py)
}

/// `None`, or the store's error.
fn unit(py: Python<'_>, done: Result<(), StoreError>) -> PyResult<Py<PyAny>> {
    done.map_err(store_error)?;
    Ok(py.None())
}
