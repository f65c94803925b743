"""``retry_leaks``: destroys the sandboxes a leak ledger remembers."""

from __future__ import annotations

import inspect
import time
from typing import Any

from . import _native
from ._providers import _ManagedProvider
from ._records import LeakEntry, RetrySummary
from ._stores import _check_seconds, _SqlStore


async def _settle(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def retry_leaks(*, provider: object, instances: object, limit: int = 100, lease: float = 300.0) -> RetrySummary:
    """Retries the destroy of ``provider``'s pending leaks in ``instances``'
    ledger: claims up to ``limit`` entries for ``lease`` seconds (so two
    retriers never take the same one), destroys each, removes the entry on
    success and records the failure (attempts + 1, new error) otherwise.

    ``provider`` is a native provider or any Python ``SandboxProvider`` (sync
    or async ``destroy``); ``instances`` a native store with a ledger
    (``SqliteSandboxInstanceStore``, ``PostgresSandboxInstanceStore``,
    ``InMemoryLeakLedgerStore``). Both native: the whole loop runs in Rust.
    """
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"`limit` must be an int, got {type(limit).__name__}")
    if limit < 0:
        raise ValueError(f"`limit` must be non-negative, got {limit}")
    lease = _check_seconds("lease", lease)
    ledger: _native.SqlStore | _native.InMemoryLeakLedgerStore
    if isinstance(instances, _SqlStore):
        ledger = instances._native
    elif isinstance(instances, _native.InMemoryLeakLedgerStore):
        ledger = instances
    else:
        raise TypeError(
            "`instances` must be a native store with a leak ledger (SqliteSandboxInstanceStore, "
            f"PostgresSandboxInstanceStore or InMemoryLeakLedgerStore), got {type(instances).__name__}"
        )
    if isinstance(provider, _ManagedProvider):
        retried, destroyed, still_failing = await _native.retry_leaks(provider._native, ledger, limit, lease)
        return RetrySummary(retried, destroyed, still_failing)
    name = getattr(provider, "name", None)
    destroy = getattr(provider, "destroy", None)
    if not isinstance(name, str):
        raise TypeError(f"provider.name must be a str, got {type(name).__name__}")
    if not callable(destroy):
        raise TypeError(f"provider.destroy must be a method (sync or async); {type(provider).__name__} has none")
    store: Any = instances
    entries: list[LeakEntry] = await _settle(store.claim_leaks(name, limit, lease))
    destroyed = still_failing = 0
    for entry in entries:
        try:
            await _settle(destroy(entry.provider_sandbox_id))
        except Exception as error:  # noqa: BLE001 - any failure keeps the leak
            await _settle(store.record_retry_failure(entry, _message(error), int(time.time() * 1000)))
            still_failing += 1
        else:
            await _settle(store.resolve_leak(entry))
            destroyed += 1
    return RetrySummary(len(entries), destroyed, still_failing)


def _message(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # noqa: BLE001 - a failing __str__ still failed the destroy
        return type(error).__name__


async def list_leaks(instances: object, provider: str | None = None) -> list[LeakEntry]:
    """The pending leak entries of a store with a ledger (sync or async
    ``list_leaks``), oldest first, of one provider or of all."""
    method = getattr(instances, "list_leaks", None)
    if not callable(method):
        raise TypeError(f"`instances` must have a leak ledger (list_leaks); {type(instances).__name__} has none")
    entries: list[LeakEntry] = await _settle(method(provider))
    return entries
