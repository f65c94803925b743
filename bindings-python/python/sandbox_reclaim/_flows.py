"""The flows, as declarations: each checks its arguments (``TypeError`` /
``ValueError`` naming the field, before any host call), reads every host
attribute once, and starts the core's machine on the generic driver
(``_driver.py``). No rule lives here."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

from . import _native
from ._checks import MAX_SAFE_INTEGER, MAX_U32, exact, seconds, whole_number
from ._driver import LEVELS, Host, drive
from ._logging import adapt_logger
from ._protocols import ReclaimLogger, SandboxInstanceStore, SandboxProvider
from ._records import LeakEntry, ReclaimOutcome, RetrySummary, RunRecord

Logger: TypeAlias = "ReclaimLogger | logging.Logger | logging.LoggerAdapter[Any]"
"""A reclaim logger: stdlib loggers map ``warn``/``errors``/``sandbox`` to WARNING/ERROR/DEBUG."""

RecordInput: TypeAlias = RunRecord | Mapping[str, Any]
"""A ``RunRecord``, or a mapping in the camelCase wire form (read with ``RunRecord.from_dict``)."""

_OUTCOMES = {outcome.value: outcome for outcome in ReclaimOutcome}


def _run_record(record: object) -> RunRecord:
    if isinstance(record, RunRecord):
        return record
    if isinstance(record, Mapping):
        return RunRecord.from_dict(record)
    raise TypeError(f"record must be a RunRecord or a wire-form mapping, got {type(record).__name__}")


def _method(owner: str, target: object, name: str) -> Callable[..., Any]:
    method: Callable[..., Any] | None = getattr(target, name, None)
    if not callable(method):
        raise TypeError(f"{owner}.{name} must be a method (sync or async); {type(target).__name__} has none")
    return method


def _provider_name(provider: object) -> str:
    name = getattr(provider, "name", None)
    if type(name) is not str:
        if not isinstance(name, str):
            raise TypeError(f"provider.name must be a str, got {type(name).__name__}")
    return name if name.isascii() else exact(name, "provider.name")


def _milliseconds(value: float | None, name: str) -> int | None:
    """A deadline or lease in seconds as whole milliseconds (at least 1)."""
    if value is None:
        return None
    millis = round(seconds(value, name, MAX_SAFE_INTEGER / 1000) * 1000)
    if millis < 1:
        raise ValueError(f"`{name}` must be at least 0.001 seconds, got {value!r}")
    return millis


def _log_methods(logger: object) -> dict[str, Callable[[str, dict[str, Any]], object]] | None:
    adapted = adapt_logger(logger)
    return None if adapted is None else {level: getattr(adapted, level) for level in LEVELS}


def _reclaim_host(provider: object, instances: object, logger: object, read_name: bool) -> tuple[Host, bool, str | None]:
    """The checked host of a reclaim; whether its store keeps a ledger (it does
    exactly when it has a callable ``delete_recording_leak``); and, with
    ``read_name``, the provider's name (read once)."""
    name = _provider_name(provider) if read_name else None
    # Inline checks: this runs on every reclaim (_method says what is missing).
    destroy = getattr(provider, "destroy", None)
    get = getattr(instances, "get", None)
    delete = getattr(instances, "delete", None)
    if not (callable(destroy) and callable(get) and callable(delete)):
        destroy = _method("provider", provider, "destroy")
        get = _method("instances", instances, "get")
        delete = _method("instances", instances, "delete")
    ledger = getattr(instances, "delete_recording_leak", None)
    ledger = ledger if callable(ledger) else None
    log = None if logger is None else _log_methods(logger)
    return Host(destroy, get, delete, ledger, None, None, None, log), ledger is not None, name


def _record_fields(record: object) -> tuple[str, str | None]:
    """The run record's two fields a reclaim reads, each read once."""
    run = record if type(record) is RunRecord else _run_record(record)
    run_id, sandbox_key = run.run_id, run.sandbox_key
    if not run_id.isascii():
        exact(run_id, "record.run_id")
    if sandbox_key is not None and not sandbox_key.isascii():
        exact(sandbox_key, "record.sandbox_key")
    return run_id, sandbox_key


async def reclaim_sandbox(
    record: RecordInput,
    *,
    provider: SandboxProvider,
    instances: SandboxInstanceStore,
    logger: Logger | None = None,
    destroy_timeout: float | None = None,
) -> ReclaimOutcome:
    """Destroys the sandbox a terminal run was bound to, then deletes its record.

    1. no ``sandbox_key`` → ``NO_SANDBOX_KEY``, no I/O;
    2. no instance record → ``NOT_FOUND``;
    3. a record of another provider → ``PROVIDER_MISMATCH``, nothing touched;
    4. destroy, then delete the record *even if destroy failed*, answering
       ``DESTROYED`` or ``DESTROY_FAILED``.

    ``destroy_timeout`` (seconds): a destroy still running then is cancelled
    and takes the destroy-failed path with a :class:`SandboxDestroyTimeoutError`.
    An exception from ``instances.get``/``delete`` propagates unchanged.
    Out-of-contract arguments raise ``TypeError``/``ValueError`` before any
    host call.
    """
    run_id, sandbox_key = _record_fields(record)
    host, ledger, name = _reclaim_host(provider, instances, logger, True)
    timeout = None if destroy_timeout is None else _milliseconds(destroy_timeout, "destroy_timeout")
    arguments = (False, run_id, sandbox_key, name, ledger, timeout)
    outcome: str = await drive(_native.start_reclaim, arguments, host)
    return _OUTCOMES[outcome]


def sandbox_reclaimer(
    *,
    provider: SandboxProvider,
    instances: SandboxInstanceStore,
    logger: Logger | None = None,
    destroy_timeout: float | None = None,
) -> Callable[[RecordInput], Awaitable[None]]:
    """Adapts :func:`reclaim_sandbox` to a sweep's ``reclaim(record)`` hook.

    The callable logs the outcome (``sandbox`` level) and returns ``None``,
    except on ``destroy-failed``: it logs at ``errors`` level and raises
    :class:`SandboxReclaimFailedError`, so the sweep sees the leak. The
    options are checked here, once; ``provider.name`` is read per reclaim.
    """
    _provider_name(provider)
    host, ledger, _ = _reclaim_host(provider, instances, logger, False)
    timeout = _milliseconds(destroy_timeout, "destroy_timeout")

    async def reclaim(record: RecordInput) -> None:
        run_id, sandbox_key = _record_fields(record)
        arguments = (True, run_id, sandbox_key, _provider_name(provider), ledger, timeout)
        await drive(_native.start_reclaim, arguments, host)

    return reclaim


async def retry_leaks(
    *,
    provider: SandboxProvider,
    instances: object,
    limit: int = 100,
    lease: float = 300.0,
    destroy_timeout: float | None = None,
) -> RetrySummary:
    """Retries the destroy of ``provider``'s pending leaks in ``instances``'
    ledger: claims up to ``limit`` entries for ``lease`` seconds (so two
    retriers never take the same one), destroys each while the lease holds,
    removes the entry on success and records the failure (attempts + 1, new
    error) otherwise. No destroy starts, or keeps running, after the lease.

    ``instances`` is any store with a leak ledger (``claim_leaks``,
    ``resolve_leak``, ``record_retry_failure``; sync or async), native or not.
    """
    name = _provider_name(provider)
    destroy = _method("provider", provider, "destroy")
    ledger = "instances (a store with a leak ledger)"
    claim = _method(ledger, instances, "claim_leaks")
    resolve = _method(ledger, instances, "resolve_leak")
    record_failure = _method(ledger, instances, "record_retry_failure")
    host = Host(destroy, None, None, None, claim, resolve, record_failure, None)
    count = whole_number(limit, "limit", 0, MAX_U32)
    lease_ms = _milliseconds(lease, "lease") or 1
    timeout = _milliseconds(destroy_timeout, "destroy_timeout")
    summary = await drive(_native.start_retry, (name, count, lease_ms, timeout), host)
    return RetrySummary(summary["retried"], summary["destroyed"], summary["stillFailing"])


async def list_leaks(instances: object, provider: str | None = None) -> list[LeakEntry]:
    """The pending leak entries of a store with a ledger (sync or async
    ``list_leaks``), oldest first, of one provider or of all."""
    method = getattr(instances, "list_leaks", None)
    if not callable(method):
        raise TypeError(f"`instances` must have a leak ledger (list_leaks); {type(instances).__name__} has none")
    entries = method(provider)
    if hasattr(entries, "__await__"):
        entries = await entries
    result: list[LeakEntry] = entries
    return result
