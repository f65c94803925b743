"""sandbox_reclaim: reclaims the sandboxes (containers, microVMs, process
jails) AI agent runs leave behind, with the exact rules of TanStack's
``@tanstack/ai-sandbox`` ``reclaimSandbox``, on a Rust core.

Quick start::

    store = InMemorySandboxInstanceStore()
    outcome = await reclaim_sandbox(record, provider=my_provider, instances=store)

Durable stores (``SqliteSandboxInstanceStore``, ``PostgresSandboxInstanceStore``)
keep a leak ledger that ``retry_leaks`` works off; ``DockerProvider`` and
``LocalProvider`` create, list, exec in and destroy sandboxes they own.
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
from ._flows import Logger, RecordInput, list_leaks, reclaim_sandbox, retry_leaks, sandbox_reclaimer
from ._logging import ERRORS_LEVEL, SANDBOX_LEVEL, WARN_LEVEL
from ._memory import InMemoryLeakLedgerStore, InMemorySandboxInstanceStore
from ._providers import DockerProvider, LocalProvider
from ._protocols import LeakLedgerStore, ReclaimLogger, SandboxInstanceStore, SandboxProvider
from ._records import (
    ExecResult,
    JsonValue,
    LeakEntry,
    NewLeak,
    ReclaimOutcome,
    RetrySummary,
    RunRecord,
    RunStatus,
    SandboxHandle,
    SandboxInstanceRecord,
)
from ._stores import PostgresSandboxInstanceStore, SqliteSandboxInstanceStore

_native._bind_record_types(SandboxInstanceRecord, LeakEntry)
_native._bind_error_types(
    SandboxStoreError, SandboxProviderError, SandboxNotOwnedError, SandboxStoreOpenError, SchemaTooNewError
)
# Store and provider futures finish on native threads: stop them touching the
# interpreter once it exits (see bindings-python/src/bridge.rs).
atexit.register(_native._shutdown)

__all__ = [
    "ERRORS_LEVEL",
    "SANDBOX_LEVEL",
    "WARN_LEVEL",
    "DockerProvider",
    "ExecResult",
    "InMemoryLeakLedgerStore",
    "InMemorySandboxInstanceStore",
    "JsonValue",
    "LeakEntry",
    "LeakLedgerStore",
    "LocalProvider",
    "Logger",
    "NewLeak",
    "PostgresSandboxInstanceStore",
    "ReclaimLogger",
    "ReclaimOutcome",
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
    "list_leaks",
    "reclaim_sandbox",
    "retry_leaks",
    "sandbox_reclaimer",
]
