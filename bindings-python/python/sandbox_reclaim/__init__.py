"""sandbox_reclaim: reclaims the sandboxes (containers, microVMs, process
jails) AI agent runs leave behind, with the exact rules of TanStack's
``@tanstack/ai-sandbox`` ``reclaimSandbox``, on a Rust core.

Quick start::

    store = InMemorySandboxInstanceStore()
    outcome = await reclaim_sandbox(record, provider=my_provider, instances=store)
"""

from __future__ import annotations

from . import _native
from ._driver import Logger, RecordInput, reclaim_sandbox, sandbox_reclaimer
from ._errors import SandboxReclaimError, SandboxReclaimFailedError
from ._logging import ERRORS_LEVEL, SANDBOX_LEVEL, WARN_LEVEL
from ._native import InMemoryLeakLedgerStore, InMemorySandboxInstanceStore
from ._protocols import LeakLedgerStore, ReclaimLogger, SandboxInstanceStore, SandboxProvider
from ._records import (
    JsonValue,
    LeakEntry,
    NewLeak,
    ReclaimOutcome,
    RunRecord,
    RunStatus,
    SandboxInstanceRecord,
)

_native._bind_record_types(SandboxInstanceRecord, LeakEntry)

__all__ = [
    "ERRORS_LEVEL",
    "SANDBOX_LEVEL",
    "WARN_LEVEL",
    "InMemoryLeakLedgerStore",
    "InMemorySandboxInstanceStore",
    "JsonValue",
    "LeakEntry",
    "LeakLedgerStore",
    "Logger",
    "NewLeak",
    "ReclaimLogger",
    "ReclaimOutcome",
    "RecordInput",
    "RunRecord",
    "RunStatus",
    "SandboxInstanceRecord",
    "SandboxInstanceStore",
    "SandboxProvider",
    "SandboxReclaimError",
    "SandboxReclaimFailedError",
    "reclaim_sandbox",
    "sandbox_reclaimer",
]
