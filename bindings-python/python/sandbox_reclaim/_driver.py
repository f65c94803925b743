"""``reclaim_sandbox`` and ``sandbox_reclaimer``: a small asyncio interpreter
of the core's reclaim state machine (``_native.start`` / ``Drive``).

The machine decides; this module only performs the steps it asks for on the
caller's event loop, awaiting a host method's result only when it is
awaitable, so plain and ``async`` methods both work. Each answer goes back in
one native call that returns ``(op, arg, logs)``: the next step and the log
lines to emit before it (a delete's answer carries no data, so a delete step
already carries the step after it, acted on once the delete succeeded; the
op codes are documented in ``bindings-python/src/drive.rs``). Store errors are never caught (they propagate as the
very object raised); a destroy error is fed back to the machine
(``destroy-failed``). ``CancelledError`` is not an ``Exception``, so
cancelling the awaiting task stops the reclaim at the pending host call.
"""

from __future__ import annotations

import inspect
import logging
import types
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

from . import _native
from ._errors import SandboxReclaimFailedError
from ._logging import adapt_logger
from ._protocols import ReclaimLogger, SandboxInstanceStore, SandboxProvider
from ._records import NewLeak, ReclaimOutcome, RunRecord

_OUTCOMES: tuple[ReclaimOutcome, ...] = tuple(ReclaimOutcome)  # index order = the core's ReclaimOutcome::ALL
_OP_GET = _native.OP_GET
_OP_DESTROY = _native.OP_DESTROY
_OP_DELETE = _native.OP_DELETE
_OP_DELETE_RECORDING_LEAK = _native.OP_DELETE_RECORDING_LEAK
_OP_FINISH = _native.OP_FINISH
_OP_FAIL = _native.OP_FAIL

Logger: TypeAlias = "ReclaimLogger | logging.Logger | logging.LoggerAdapter[Any]"
"""A reclaim logger: stdlib loggers map ``warn``/``errors``/``sandbox`` to WARNING/ERROR/DEBUG."""

RecordInput: TypeAlias = RunRecord | Mapping[str, Any]
"""A ``RunRecord``, or a mapping in the camelCase wire form (read with ``RunRecord.from_dict``)."""


_COROUTINE = types.CoroutineType
_AWAITABLE_TYPES: dict[type, bool] = {}


def _awaitable(value: object) -> bool:
    """Whether a host method's result must be awaited (cached per type: a
    failed ``hasattr`` costs an exception)."""
    kind = type(value)
    known = _AWAITABLE_TYPES.get(kind)
    if known is None:
        known = inspect.isawaitable(value)
        # A generator is awaitable only if its code is a @types.coroutine one.
        if kind is not types.GeneratorType:
            _AWAITABLE_TYPES[kind] = known
    return known


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


async def _drive(
    record: RunRecord,
    name: str,
    instances: object,
    get: Callable[[str], Any],
    destroy: Callable[[str], Any],
    delete: Callable[[str], Any],
    ledger: Callable[[str, NewLeak], Any] | None,
    logger: ReclaimLogger | None,
    reclaimer: bool,
) -> ReclaimOutcome:
    drive, op, arg, logs = _native.start(
        record.run_id, record.sandbox_key, name, instances, ledger is not None, reclaimer, logger is not None
    )
    # The machine's usual order (get, destroy, delete, finish; no log lines)
    # unrolled first: each step is still the one the machine returned, and
    # anything else falls through to the general loop below. Per reclaim this
    # saves the dispatch a loop pays on every step.
    if op == _OP_GET and logs is None:
        found = get(arg)
        if type(found) is _COROUTINE or (found is not None and _awaitable(found)):
            found = await found
        op, arg, logs = drive.loaded(found)
        if op == _OP_DESTROY and logs is None:
            try:
                result = destroy(arg)
                if type(result) is _COROUTINE or (result is not None and _awaitable(result)):
                    await result
            except Exception as error:  # noqa: BLE001 - any failure is the destroy-failed path
                op, arg, logs = drive.destroy_failed(error)
            else:
                op, arg, logs = drive.destroyed()
                if op == _OP_DELETE and logs is None:
                    key, op, arg, logs = arg
                    result = delete(key)
                    if type(result) is _COROUTINE or (result is not None and _awaitable(result)):
                        await result
                    if op == _OP_FINISH and logs is None:
                        outcome: ReclaimOutcome = _OUTCOMES[arg]
                        return outcome
    while True:
        if logs is not None:
            for level, message, meta in logs:
                getattr(logger, level)(message, meta)
        if op == _OP_GET:
            found = get(arg)
            if type(found) is _COROUTINE or (found is not None and _awaitable(found)):
                found = await found
            op, arg, logs = drive.loaded(found)
        elif op == _OP_DESTROY:
            try:
                result = destroy(arg)
                if type(result) is _COROUTINE or (result is not None and _awaitable(result)):
                    await result
            except Exception as error:  # noqa: BLE001 - any failure is the destroy-failed path
                op, arg, logs = drive.destroy_failed(error)
            else:
                op, arg, logs = drive.destroyed()
        elif op == _OP_DELETE:
            key, op, arg, logs = arg
            result = delete(key)
            if type(result) is _COROUTINE or (result is not None and _awaitable(result)):
                await result
        elif op == _OP_FINISH:
            outcome = _OUTCOMES[arg]
            return outcome
        elif op == _OP_DELETE_RECORDING_LEAK:
            fields, op, arg, logs = arg
            assert ledger is not None  # the machine asks only when told there is one
            result = ledger(fields[0], NewLeak(*fields))
            if type(result) is _COROUTINE or (result is not None and _awaitable(result)):
                await result
        elif op == _OP_FAIL:
            # Raised outside any except block: no __context__, no __cause__.
            raise SandboxReclaimFailedError(*arg)
        else:  # _native.OP_LOG: lines to emit before a native-store step
            op, arg, logs = drive.resume()


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
    # The common case is checked inline (this runs on every call); _Host
    # checks again and raises the TypeError naming the field.
    try:
        name = provider.name
        get = instances.get
        delete = instances.delete
        destroy = provider.destroy
    except AttributeError:
        name = None
    if type(name) is not str or not (callable(get) and callable(delete) and callable(destroy)):
        host = _Host(provider, instances, logger)
        get, delete, destroy = host.get, host.delete, host.destroy
        name = _provider_name(provider)
    ledger = getattr(instances, "delete_recording_leak", None)
    if ledger is not None and not callable(ledger):
        ledger = None  # the store "has a ledger" iff delete_recording_leak is callable
    adapted = None if logger is None else adapt_logger(logger)
    return await _drive(record, name, instances, get, destroy, delete, ledger, adapted, False)


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
        await _drive(run, name, host.instances, host.get, host.destroy, host.delete, host.ledger, host.logger, True)

    return reclaim
