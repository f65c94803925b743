//! The native half of `InMemorySandboxInstanceStore`: the core's in-memory
//! store with synchronous methods, which the Python class
//! (`sandbox_reclaim/_memory.py`) makes awaitable like every other store's.

use std::sync::Arc;

use pyo3::prelude::*;
use sandbox_reclaim::options::arguments::MILLIS;
use sandbox_reclaim::{FleetStore, InMemorySandboxInstanceStore, LeakLedger, SandboxInstanceStore};

use crate::hints::{self, Float, Int, Typed};
use crate::records::{
    audit_entry_from_py, audit_entry_to_py, due_leak_to_py, instance_from_py, instance_to_py, leak_entry_from_py,
    leak_entry_to_py, leak_reason, new_leak_from_py,
};
use crate::sql_store::{audit_query, count, lease, millis, optional_whole};
use pyo3::exceptions::PyRuntimeError;
use sandbox_reclaim::stores::checks::now_or_never;

/// The native half of the in-memory store (the core's): synchronous methods
/// that `sandbox_reclaim.InMemorySandboxInstanceStore` wraps. It copies
/// records in and out: mutating nothing a caller holds can change what it stores.
#[pyclass(name = "InMemorySandboxInstanceStore", module = "sandbox_reclaim._native", subclass, frozen)]
pub struct MemoryStore {
    pub(crate) inner: Arc<InMemorySandboxInstanceStore>,
}

#[pymethods]
impl MemoryStore {
    /// A store without a leak ledger, like the reference's.
    #[new]
    fn new() -> Self {
        Self { inner: Arc::new(InMemorySandboxInstanceStore::new()) }
    }

    /// A store that also keeps a leak ledger (`InMemoryLeakLedgerStore`).
    #[staticmethod]
    fn with_ledger(py: Python<'_>) -> PyResult<Py<MemoryLedgerStore>> {
        Py::new(py, MemoryLedgerStore::new())
    }

    /// The record stored under `key`, or `None`.
    #[pyo3(signature = (key, /))]
    fn get<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Option<Typed<'py, hints::SandboxInstanceRecord>>> {
        match ready(self.inner.get(key))?.map_err(store_error)? {
            Some(record) => Ok(Some(instance_to_py(py, &record)?)),
            None => Ok(None),
        }
    }

    /// Stores a copy of `record`, replacing any under the same key. A record
    /// breaking the store contract is refused (`ValueError` naming the field)
    /// before anything is written.
    #[pyo3(signature = (record, /))]
    fn upsert(&self, record: Typed<'_, hints::SandboxInstanceRecord>) -> PyResult<()> {
        let record = instance_from_py(&record)?;
        ready(self.inner.upsert(&record))?.map_err(store_error)
    }

    /// Deletes the record under `key`; a missing key is a no-op.
    #[pyo3(signature = (key, /))]
    fn delete(&self, key: &str) -> PyResult<()> {
        ready(self.inner.delete(key))?.map_err(store_error)
    }

    /// Every record, sorted by key.
    fn records<'py>(&self, py: Python<'py>) -> PyResult<Vec<Typed<'py, hints::SandboxInstanceRecord>>> {
        self.inner.records().iter().map(|record| instance_to_py(py, record)).collect()
    }

    fn __len__(&self) -> usize {
        self.inner.records().len()
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let class = slf.get_type().name()?;
        Ok(format!("<{class} with {} record(s)>", slf.get().inner.records().len()))
    }
}

/// An in-memory store that also keeps a leak ledger: a failed destroy's
/// record removal and the leak entry happen under one lock.
#[pyclass(name = "InMemoryLeakLedgerStore", module = "sandbox_reclaim._native", extends = MemoryStore, frozen)]
pub struct MemoryLedgerStore;

#[pymethods]
impl MemoryLedgerStore {
    #[new]
    fn new() -> PyClassInitializer<Self> {
        PyClassInitializer::from(MemoryStore { inner: Arc::new(InMemorySandboxInstanceStore::with_ledger()) })
            .add_subclass(MemoryLedgerStore)
    }

    /// Deletes the record `key` and records `leak` (a `NewLeak`) in one step.
    #[pyo3(signature = (key, leak, /))]
    fn delete_recording_leak(slf: PyRef<'_, Self>, key: &str, leak: Typed<'_, hints::NewLeak>) -> PyResult<()> {
        let leak = new_leak_from_py(&leak)?;
        ready(slf.as_super().inner.delete_recording_leak(key, leak))?.map_err(store_error)
    }

    /// Pending leak entries (`LeakEntry`), oldest first, of one provider or all.
    #[pyo3(signature = (provider=None))]
    fn list_leaks<'py>(slf: PyRef<'py, Self>, provider: Option<&str>) -> PyResult<Vec<Typed<'py, hints::LeakEntry>>> {
        let py = slf.py();
        let entries = ready(slf.as_super().inner.list_leaks(provider))?.map_err(store_error)?;
        entries.iter().map(|entry| leak_entry_to_py(py, entry)).collect()
    }

    /// How many leak entries are pending, of one provider or all.
    #[pyo3(signature = (provider=None))]
    fn count_leaks(slf: PyRef<'_, Self>, provider: Option<&str>) -> PyResult<u64> {
        ready(slf.as_super().inner.count_leaks(provider))?.map_err(store_error)
    }

    /// Claims up to `limit` of `provider`'s entries for `lease` seconds.
    #[pyo3(signature = (provider, limit, lease, /))]
    fn claim_leaks<'py>(
        slf: PyRef<'py, Self>,
        provider: &str,
        limit: Typed<'py, Int>,
        lease: Typed<'py, Float>,
    ) -> PyResult<Vec<Typed<'py, hints::LeakEntry>>> {
        let py = slf.py();
        let limit = count("limit", &limit)?;
        let lease = self::lease(&lease)?;
        let entries = ready(slf.as_super().inner.claim_leaks(provider, limit, lease))?.map_err(store_error)?;
        entries.iter().map(|entry| leak_entry_to_py(py, entry)).collect()
    }

    /// Removes a claimed entry whose sandbox is now destroyed; `False`: its
    /// claim had passed to another retrier, and nothing was written.
    #[pyo3(signature = (entry, /))]
    fn resolve_leak(slf: PyRef<'_, Self>, entry: Typed<'_, hints::LeakEntry>) -> PyResult<bool> {
        let entry = leak_entry_from_py(&entry)?;
        ready(slf.as_super().inner.resolve_leak(&entry))?.map_err(store_error)
    }

    /// Bumps a claimed entry's attempts, keeps `message` and releases the claim.
    #[pyo3(signature = (entry, message, failed_at, /))]
    fn record_retry_failure(
        slf: PyRef<'_, Self>,
        entry: Typed<'_, hints::LeakEntry>,
        message: &str,
        failed_at: Typed<'_, Int>,
    ) -> PyResult<bool> {
        let failed_at = millis("failed_at", &failed_at)?;
        let entry = leak_entry_from_py(&entry)?;
        ready(slf.as_super().inner.record_retry_failure(&entry, message, failed_at))?.map_err(store_error)
    }

    // ---- the fleet store (reconcile); every time is epoch milliseconds ----

    /// Records last updated before `older_than`, oldest first, at most `limit`.
    #[pyo3(signature = (older_than, limit, /))]
    fn list_stale<'py>(
        slf: PyRef<'py, Self>,
        older_than: Typed<'py, Int>,
        limit: Typed<'py, Int>,
    ) -> PyResult<Vec<Typed<'py, hints::SandboxInstanceRecord>>> {
        let py = slf.py();
        let older_than = millis("older_than", &older_than)?;
        let limit = count("limit", &limit)?;
        let records = ready(slf.as_super().inner.list_stale(older_than, limit))?.map_err(store_error)?;
        records.iter().map(|record| instance_to_py(py, record)).collect()
    }

    /// Deletes record `key` if its `updated_at` is still `updated_at` and
    /// records `leak` (reason `idle`, due at once); `False` when it changed.
    #[pyo3(signature = (key, updated_at, leak, /))]
    fn expire_idle(
        slf: PyRef<'_, Self>,
        key: &str,
        updated_at: Typed<'_, Int>,
        leak: Typed<'_, hints::NewLeak>,
    ) -> PyResult<bool> {
        let updated_at = millis("updated_at", &updated_at)?;
        let leak = new_leak_from_py(&leak)?;
        ready(slf.as_super().inner.expire_idle(key, updated_at, leak))?.map_err(store_error)
    }

    /// Every sandbox id of `provider` a record or a leak entry references,
    /// and (with `destroyed_since`, epoch ms) every one an audit row says
    /// was destroyed at or after it.
    #[pyo3(signature = (provider, destroyed_since = None, /))]
    fn sandbox_references(
        slf: PyRef<'_, Self>,
        provider: &str,
        destroyed_since: Option<Typed<'_, Int>>,
    ) -> PyResult<Vec<String>> {
        let since = optional_whole("destroyed_since", destroyed_since.as_deref(), MILLIS)?.unwrap_or(u64::MAX);
        ready(slf.as_super().inner.sandbox_references(provider, since))?.map_err(store_error)
    }

    /// The registry: every sandbox id of `provider` an instance record named
    /// whose record still exists or was last written or deleted at or after
    /// `since` (epoch ms).
    #[pyo3(signature = (provider, since, /))]
    fn registered_sandboxes(slf: PyRef<'_, Self>, provider: &str, since: Typed<'_, Int>) -> PyResult<Vec<String>> {
        let since = millis("since", &since)?;
        ready(slf.as_super().inner.registered_sandboxes(provider, since))?.map_err(store_error)
    }

    /// A mark of the store's record deletions, taken before a sweep lists
    /// (see `referenced_among`): a whole number that never goes down.
    #[pyo3(signature = (provider, /))]
    fn sweep_mark(slf: PyRef<'_, Self>, provider: &str) -> PyResult<u64> {
        ready(slf.as_super().inner.sweep_mark(provider))?.map_err(store_error)
    }

    /// Those of `ids` a record or a leak entry references now, that an audit
    /// row says was destroyed (or a leak retry resolved) at or after
    /// `destroyed_since` (epoch ms), or whose record was deleted after
    /// `mark`; sorted, each once.
    #[pyo3(signature = (provider, ids, destroyed_since, mark, /))]
    fn referenced_among(
        slf: PyRef<'_, Self>,
        provider: &str,
        ids: Vec<String>,
        destroyed_since: Typed<'_, Int>,
        mark: Typed<'_, Int>,
    ) -> PyResult<Vec<String>> {
        let destroyed_since = millis("destroyed_since", &destroyed_since)?;
        let mark = millis("mark", &mark)?;
        ready(slf.as_super().inner.referenced_among(provider, &ids, destroyed_since, mark))?.map_err(store_error)
    }

    /// Those of `ids` the registry names (a record of `provider` names it
    /// now, or one last written or deleted at or after `since` did); sorted.
    #[pyo3(signature = (provider, ids, since, /))]
    fn registered_among(
        slf: PyRef<'_, Self>,
        provider: &str,
        ids: Vec<String>,
        since: Typed<'_, Int>,
    ) -> PyResult<Vec<String>> {
        let since = millis("since", &since)?;
        ready(slf.as_super().inner.registered_among(provider, &ids, since))?.map_err(store_error)
    }

    /// At most `limit` registered ids of `provider` for a lookup by id: last
    /// written or deleted at or after `since`, named by nothing now, not
    /// known gone; never checked first, then least recently checked first.
    #[pyo3(signature = (provider, since, limit, /))]
    fn lookup_candidates(
        slf: PyRef<'_, Self>,
        provider: &str,
        since: Typed<'_, Int>,
        limit: Typed<'_, Int>,
    ) -> PyResult<Vec<String>> {
        let since = millis("since", &since)?;
        let limit = count("limit", &limit)?;
        ready(slf.as_super().inner.lookup_candidates(provider, since, limit))?.map_err(store_error)
    }

    /// What a lookup learned: `gone` are gone, `checked` were checked at `now` (epoch ms).
    #[pyo3(signature = (provider, gone, checked, now, /))]
    fn lookup_checked(
        slf: PyRef<'_, Self>,
        provider: &str,
        gone: Vec<String>,
        checked: Vec<String>,
        now: Typed<'_, Int>,
    ) -> PyResult<()> {
        let now = millis("now", &now)?;
        ready(slf.as_super().inner.lookup_checked(provider, &gone, &checked, now))?.map_err(store_error)
    }

    /// Records `leak` with `reason`, due at `next_attempt_at`.
    #[pyo3(signature = (leak, reason, next_attempt_at, /))]
    fn record_leak(
        slf: PyRef<'_, Self>,
        leak: Typed<'_, hints::NewLeak>,
        reason: &str,
        next_attempt_at: Typed<'_, Int>,
    ) -> PyResult<()> {
        let next_attempt_at = millis("next_attempt_at", &next_attempt_at)?;
        let leak = new_leak_from_py(&leak)?;
        let reason = leak_reason(reason)?;
        ready(slf.as_super().inner.record_leak(leak, reason, next_attempt_at))?.map_err(store_error)
    }

    /// `provider`'s entries due at `now` (`DueLeak`s), claimed for `lease_ms` (`None`: only listed).
    #[pyo3(signature = (provider, limit, lease_ms, now, /))]
    fn due_leaks<'py>(
        slf: PyRef<'py, Self>,
        provider: &str,
        limit: Typed<'py, Int>,
        lease_ms: Option<Typed<'py, Int>>,
        now: Typed<'py, Int>,
    ) -> PyResult<Vec<Typed<'py, hints::DueLeak>>> {
        let py = slf.py();
        let limit = count("limit", &limit)?;
        let lease_ms = optional_whole("lease_ms", lease_ms.as_deref(), MILLIS)?;
        let now = millis("now", &now)?;
        let due = ready(slf.as_super().inner.due_leaks(provider, limit, lease_ms, now))?.map_err(store_error)?;
        due.iter().map(|due| due_leak_to_py(py, due)).collect()
    }

    /// A claimed entry failed again: attempts + 1, `message` kept, due at `next_attempt_at`.
    #[pyo3(signature = (entry, message, failed_at, next_attempt_at, /))]
    fn defer_leak(
        slf: PyRef<'_, Self>,
        entry: Typed<'_, hints::LeakEntry>,
        message: &str,
        failed_at: Typed<'_, Int>,
        next_attempt_at: Typed<'_, Int>,
    ) -> PyResult<bool> {
        let failed_at = millis("failed_at", &failed_at)?;
        let next_attempt_at = millis("next_attempt_at", &next_attempt_at)?;
        let entry = leak_entry_from_py(&entry)?;
        ready(slf.as_super().inner.defer_leak(&entry, message, failed_at, next_attempt_at))?.map_err(store_error)
    }

    /// Takes `provider`'s orphan sweep for `holder` until `now + lease_ms`; `False` if another holds it.
    #[pyo3(signature = (provider, holder, lease_ms, now, /))]
    fn claim_sweep(
        slf: PyRef<'_, Self>,
        provider: &str,
        holder: &str,
        lease_ms: Typed<'_, Int>,
        now: Typed<'_, Int>,
    ) -> PyResult<bool> {
        let lease_ms = millis("lease_ms", &lease_ms)?;
        let now = millis("now", &now)?;
        ready(slf.as_super().inner.claim_sweep(provider, holder, lease_ms, now))?.map_err(store_error)
    }

    /// Gives `provider`'s sweep back if `holder` still holds it.
    #[pyo3(signature = (provider, holder, /))]
    fn release_sweep(slf: PyRef<'_, Self>, provider: &str, holder: &str) -> PyResult<()> {
        ready(slf.as_super().inner.release_sweep(provider, holder))?.map_err(store_error)
    }

    /// Bounded growth: deletes `provider`'s registry rows last seen before
    /// `registry_before` and its audit rows from before `audit_before` (epoch ms).
    #[pyo3(signature = (provider, registry_before, audit_before, /))]
    fn prune(
        slf: PyRef<'_, Self>,
        provider: &str,
        registry_before: Typed<'_, Int>,
        audit_before: Typed<'_, Int>,
    ) -> PyResult<()> {
        let registry_before = millis("registry_before", &registry_before)?;
        let audit_before = millis("audit_before", &audit_before)?;
        ready(slf.as_super().inner.prune(provider, registry_before, audit_before))?.map_err(store_error)
    }

    /// Appends audit rows (`AuditEntry`s), in order.
    #[pyo3(signature = (entries, /))]
    fn append_audit(slf: PyRef<'_, Self>, entries: Vec<Typed<'_, hints::AuditEntry>>) -> PyResult<()> {
        let entries = entries.iter().map(|entry| audit_entry_from_py(entry)).collect::<PyResult<Vec<_>>>()?;
        ready(slf.as_super().inner.append_audit(&entries))?.map_err(store_error)
    }

    /// Audit rows with `at >= since`, oldest first, at most `limit`.
    #[pyo3(signature = (since=None, limit=None))]
    fn list_audit<'py>(
        slf: PyRef<'py, Self>,
        since: Option<Typed<'py, Int>>,
        limit: Option<Typed<'py, Int>>,
    ) -> PyResult<Vec<Typed<'py, hints::AuditEntry>>> {
        let py = slf.py();
        let (since, limit) = audit_query(since.as_deref(), limit.as_deref())?;
        let rows = ready(slf.as_super().inner.list_audit(since, limit))?.map_err(store_error)?;
        rows.iter().map(|row| audit_entry_to_py(py, row)).collect()
    }
}

/// Runs an in-memory store call, which never waits, synchronously.
fn ready<T>(future: impl std::future::Future<Output = T>) -> PyResult<T> {
    now_or_never(future).ok_or_else(|| PyRuntimeError::new_err("an in-memory store call did not complete at once"))
}

/// The in-memory store only fails on a record it refuses; anything else
/// would be a bug, reported rather than hidden.
pub(crate) fn store_error(error: sandbox_reclaim::StoreError) -> PyErr {
    match error {
        sandbox_reclaim::StoreError::InvalidRecord(_) | sandbox_reclaim::StoreError::InvalidKey(_) => {
            pyo3::exceptions::PyValueError::new_err(error.to_string())
        }
        other => pyo3::exceptions::PyRuntimeError::new_err(other.to_string()),
    }
}
