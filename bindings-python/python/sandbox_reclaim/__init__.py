"""sandbox_reclaim: reclaims the sandboxes (containers, microVMs, process
jails) AI agent runs leave behind, with the exact rules of TanStack's
``@tanstack/ai-sandbox`` ``reclaimSandbox``, on a Rust core.

Quick start::

    store = InMemorySandboxInstanceStore()
    outcome = await reclaim_sandbox(record, provider=my_provider, instances=store)

Durable stores (``SqliteSandboxInstanceStore``, ``PostgresSandboxInstanceStore``)
keep a leak ledger that ``retry_leaks`` works off; ``DockerProvider`` and
``LocalProvider`` create, list, exec in and destroy sandboxes they own.
Fleet passes: ``reclaim_all`` reclaims many runs side by side, ``reconcile``
retries leaks, sweeps orphans and expires idle records.
"""

from __future__ import annotations

import atexit

from . import _native
from ._errors import (
    SandboxDestroyTimeoutError,
    SandboxNotOwnedError,
    SandboxProviderError,
    SandboxReclaimError,
    SandboxReclaimFailedError,
    SandboxStoreError,
    SandboxStoreOpenError,
    SchemaTooNewError,
)
from ._flows import (
    FLEET_STORE_METHODS,
    Logger,
    ProgressCallback,
    RecordInput,
    list_leaks,
    reclaim_all,
    reclaim_sandbox,
    reconcile,
    retry_leaks,
    sandbox_reclaimer,
)
from ._logging import ERRORS_LEVEL, SANDBOX_LEVEL, WARN_LEVEL
from ._memory import InMemoryLeakLedgerStore, InMemorySandboxInstanceStore
from ._providers import (
    DEFAULT_OWNER,
    DaytonaProvider,
    DockerProvider,
    E2bProvider,
    LocalProvider,
    VercelProvider,
    owner_labels,
)
from ._protocols import (
    FleetProvider,
    FleetStore,
    LeakLedgerStore,
    ReclaimLogger,
    RetryLedgerStore,
    SandboxInstanceStore,
    SandboxProvider,
)
from ._records import (
    AuditEntry,
    AuditResult,
    DueLeak,
    ExecResult,
    JsonValue,
    LeakEntry,
    LeakReason,
    ListedSandbox,
    NewLeak,
    ReclaimOutcome,
    RunRecord,
    RunStatus,
    SandboxHandle,
    SandboxInstanceRecord,
)
from ._reports import (
    Action,
    ActionCounts,
    ActionReason,
    ActionResult,
    FleetReclaimReport,
    IdleCounts,
    LeakCounts,
    OrphanCounts,
    OutcomeCounts,
    ProviderReport,
    ReconcileReport,
    RecordOutcome,
    RecordReport,
    RetrySummary,
    SweepStatus,
)
from ._stores import PostgresSandboxInstanceStore, SqliteSandboxInstanceStore

_native._bind_record_types(SandboxInstanceRecord, LeakEntry, DueLeak, AuditEntry)
_native._bind_error_types(
    SandboxStoreError, SandboxProviderError, SandboxNotOwnedError, SandboxStoreOpenError, SchemaTooNewError
)
# Store and provider futures finish on native threads: stop them touching the
# interpreter once it exits (see bindings-python/src/bridge.rs).
atexit.register(_native._shutdown)

__all__ = [
    "DEFAULT_OWNER",
    "ERRORS_LEVEL",
    "FLEET_STORE_METHODS",
    "SANDBOX_LEVEL",
    "WARN_LEVEL",
    "Action",
    "ActionCounts",
    "ActionReason",
    "ActionResult",
    "AuditEntry",
    "AuditResult",
    "DaytonaProvider",
    "DockerProvider",
    "DueLeak",
    "E2bProvider",
    "ExecResult",
    "FleetProvider",
    "FleetReclaimReport",
    "FleetStore",
    "RetryLedgerStore",
    "IdleCounts",
    "InMemoryLeakLedgerStore",
    "InMemorySandboxInstanceStore",
    "JsonValue",
    "LeakCounts",
    "LeakEntry",
    "LeakLedgerStore",
    "LeakReason",
    "ListedSandbox",
    "LocalProvider",
    "Logger",
    "NewLeak",
    "OrphanCounts",
    "OutcomeCounts",
    "PostgresSandboxInstanceStore",
    "ProgressCallback",
    "ProviderReport",
    "ReclaimLogger",
    "ReclaimOutcome",
    "ReconcileReport",
    "RecordOutcome",
    "RecordReport",
    "RecordInput",
    "RetrySummary",
    "RunRecord",
    "RunStatus",
    "SandboxHandle",
    "SandboxInstanceRecord",
    "SandboxInstanceStore",
    "SandboxDestroyTimeoutError",
    "SandboxNotOwnedError",
    "SandboxProvider",
    "SandboxProviderError",
    "SandboxReclaimError",
    "SandboxReclaimFailedError",
    "SandboxStoreError",
    "SandboxStoreOpenError",
    "SchemaTooNewError",
    "SqliteSandboxInstanceStore",
    "SweepStatus",
    "VercelProvider",
    "list_leaks",
    "owner_labels",
    "reclaim_all",
    "reclaim_sandbox",
    "reconcile",
    "retry_leaks",
    "sandbox_reclaimer",
]
