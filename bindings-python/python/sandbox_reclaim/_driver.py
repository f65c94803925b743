"""``reclaim_sandbox`` and ``sandbox_reclaimer``: check the arguments, pick
the core's compiled reclaim program for them and walk it (``_program.py``).

Arguments are checked before any host call (``TypeError``/``ValueError``
naming the field). The program is chosen by api and by whether the store has
a leak ledger (a callable ``delete_recording_leak``); the exact native
in-memory store gets a walker that calls it synchronously.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

from . import _native
from ._logging import adapt_logger
from ._program import WALKERS
from ._protocols import ReclaimLogger, SandboxInstanceStore, SandboxProvider
from ._records import NewLeak, ReclaimOutcome, RunRecord

_MEMORY_STORE = _native.InMemorySandboxInstanceStore
_MEMORY_LEDGER_STORE = _native.InMemoryLeakLedgerStore
# reclaim_sandbox's walkers: (store has a ledger, exact native store).
_HOST_WALK = WALKERS[(False, False, False)]
_HOST_LEDGER_WALK = WALKERS[(False, True, False)]
_NATIVE_WALK = WALKERS[(False, False, True)]
_NATIVE_LEDGER_WALK = WALKERS[(False, True, True)]

Logger: TypeAlias = "ReclaimLogger | logging.Logger | logging.LoggerAdapter[Any]"
"""A reclaim logger: stdlib loggers map ``warn``/``errors``/``sandbox`` to WARNING/ERROR/DEBUG."""

RecordInput: TypeAlias = RunRecord | Mapping[str, Any]
"""A ``RunRecord``, or a mapping in the camelCase wire form (read with ``RunRecord.from_dict``)."""


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
    if not isinstance(name, str):
        raise TypeError(f"provider.name must be a str, got {type(name).__name__}")
    return name


class _Host:
    """The host objects of one reclaim set-up, checked before any call,
    with their methods bound once."""

    __slots__ = ("provider", "instances", "destroy", "get", "delete", "ledger", "logger")

    def __init__(self, provider: object, instances: object, logger: object) -> None:
        _provider_name(provider)
        self.provider = provider
        self.destroy = _method("provider", provider, "destroy")
        self.instances = instances
        self.get = _method("instances", instances, "get")
        self.delete = _method("instances", instances, "delete")
        self.ledger = _ledger(instances)
        self.logger: ReclaimLogger | None = adapt_logger(logger)


def _ledger(instances: object) -> Callable[[str, NewLeak], Any] | None:
    """The store "has a ledger" iff it has a callable ``delete_recording_leak``."""
    ledger = getattr(instances, "delete_recording_leak", None)
    return ledger if callable(ledger) else None


def _walk(
    record: RunRecord,
    name: str,
    instances: object,
    get: Callable[[str], Any],
    destroy: Callable[[str], Any],
    delete: Callable[[str], Any],
    ledger: Callable[[str, NewLeak], Any] | None,
    logger: ReclaimLogger | None,
    reclaimer: bool,
) -> Awaitable[ReclaimOutcome | None]:
    """Starts the walk of the program for these arguments."""
    # Exact types only: a Python subclass may override get/delete, and then
    # its methods must answer.
    kind = type(instances)
    native = kind is _MEMORY_STORE or kind is _MEMORY_LEDGER_STORE
    if native:
        get = instances._reclaim_view  # type: ignore[attr-defined]
    walker = WALKERS[(reclaimer, ledger is not None, native)]
    return walker(record.run_id, record.sandbox_key, name, get, destroy, delete, ledger, logger)


async def reclaim_sandbox(
    record: RecordInput,
    *,
    provider: SandboxProvider,
    instances: SandboxInstanceStore,
    logger: Logger | None = None,
) -> ReclaimOutcome:
    """Destroys the sandbox a terminal run was bound to, then deletes its record.

    1. no ``sandbox_key`` → ``NO_SANDBOX_KEY``, no I/O;
    2. no instance record → ``NOT_FOUND``;
    3. a record of another provider → ``PROVIDER_MISMATCH``, nothing touched;
    4. destroy, then delete the record *even if destroy failed*, answering
       ``DESTROYED`` or ``DESTROY_FAILED``.

    An exception from ``instances.get``/``delete`` propagates unchanged.
    Out-of-contract arguments raise ``TypeError``/``ValueError`` before any
    host call.
    """
    if type(record) is not RunRecord:
        record = _run_record(record)
    # The common cases are checked inline (this runs on every call); _Host
    # checks again and raises the TypeError naming the field.
    kind = type(instances)
    if kind is _MEMORY_STORE or kind is _MEMORY_LEDGER_STORE:
        # Exactly the native store (a Python subclass may override get/delete,
        # and then its methods must answer): called synchronously.
        get = instances._reclaim_view  # type: ignore[attr-defined]
        delete = instances.delete
        ledger = instances.delete_recording_leak if kind is _MEMORY_LEDGER_STORE else None  # type: ignore[attr-defined]
        walk = _NATIVE_LEDGER_WALK if ledger is not None else _NATIVE_WALK
    else:
        try:
            get = instances.get
            delete = instances.delete
        except AttributeError:
            get = delete = None
        if not (callable(get) and callable(delete)):
            _Host(provider, instances, logger)  # raises the TypeError naming the field
        ledger = getattr(instances, "delete_recording_leak", None)
        if ledger is not None and not callable(ledger):
            ledger = None  # the store "has a ledger" iff delete_recording_leak is callable
        walk = _HOST_LEDGER_WALK if ledger is not None else _HOST_WALK
    name: object
    try:
        name = provider.name
        destroy = provider.destroy
    except AttributeError:
        name = destroy = None
    if type(name) is not str or not callable(destroy):
        host = _Host(provider, instances, logger)
        name, destroy = _provider_name(provider), host.destroy
    adapted = None if logger is None else adapt_logger(logger)
    outcome: ReclaimOutcome = await walk(record.run_id, record.sandbox_key, name, get, destroy, delete, ledger, adapted)
    return outcome


def sandbox_reclaimer(
    *,
    provider: SandboxProvider,
    instances: SandboxInstanceStore,
    logger: Logger | None = None,
) -> Callable[[RecordInput], Awaitable[None]]:
    """Adapts :func:`reclaim_sandbox` to a sweep's ``reclaim(record)`` hook.

    The callable logs the outcome (``sandbox`` level) and returns ``None``,
    except on ``destroy-failed``: it logs at ``errors`` level and raises
    :class:`SandboxReclaimFailedError`, so the sweep sees the leak. The
    options are checked here, once.
    """
    host = _Host(provider, instances, logger)

    async def reclaim(record: RecordInput) -> None:
        run = record if type(record) is RunRecord else _run_record(record)
        # provider.name is read per reclaim, as the reference does.
        name = _provider_name(host.provider)
        await _walk(run, name, host.instances, host.get, host.destroy, host.delete, host.ledger, host.logger, True)

    return reclaim
