"""The generic asyncio driver: runs any of the core's flow machines against
Python host objects.

It knows effects, never rules. A native call answers with a *batch* (the
run's number, its next deadline, its ending, the effects to start; layout in
``core/src/wire.rs``); the driver starts each effect, keeps the host's own
values (a raised exception, the entries a claim returned) by effect id, feeds
each settle back, waits until the machine's deadline and cancels what the
machine cancels. Logs run at once, in order; a raising logger is completed as
failed and the machine drops the rest of that batch.

Host methods may be ``def`` or ``async def``: an answer is awaited only when
it is awaitable. One awaitable with nothing else in flight and no deadline is
awaited in place (no task), which is every step of a plain reclaim.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
import types
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from . import _native
from ._checks import exact
from ._errors import SandboxDestroyTimeoutError, SandboxReclaimFailedError
from ._records import NewLeak, SandboxInstanceRecord

_PROTOCOL = _native.protocol()
_HEADER: int = _PROTOCOL["header"]
_ENDING_OPERANDS: list[int] = _PROTOCOL["ending_operands"]
(_RUNNING, _RESOLVE_NOTHING, _RESOLVE_STRING, _RESOLVE_JSON, _REJECT_HOST_ERROR, _REJECT_RECLAIM_FAILED) = _PROTOCOL["endings"]
(_GET, _DELETE, _DELETE_LEAK, _DESTROY, _CLAIM, _RESOLVE, _RECORD_FAILURE, _LOG, _CANCEL) = _PROTOCOL["ops"]
(_META_TEXT, _META_HOST_ERROR, _META_TIMEOUT) = _PROTOCOL["meta_kinds"]
(_OK, _FAILED, _INSTANCE, _NO_INSTANCE) = _PROTOCOL["completions"]
LEVELS: tuple[str, ...] = tuple(_PROTOCOL["levels"])
_UNREADABLE: str = _PROTOCOL["unreadable_error_message"]

Batch = tuple[Any, ...]


class Clock(Protocol):
    """Where the driver's time comes from (the vector suite uses a virtual one)."""

    def now(self) -> int:
        """Epoch milliseconds."""

    async def wait(self, pending: set[asyncio.Future[Any]], deadline: int | None) -> None:
        """Returns once one of ``pending`` is done or ``deadline`` has passed."""


class WallClock:
    """The real clock: ``time.time`` and the running loop's timers."""

    def now(self) -> int:
        return time.time_ns() // 1_000_000

    async def wait(self, pending: set[asyncio.Future[Any]], deadline: int | None) -> None:
        timeout = None if deadline is None else max(0.0, (deadline - self.now()) / 1000)
        if pending:
            await asyncio.wait(pending, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        elif timeout is not None:
            await asyncio.sleep(timeout)


_clock: Clock = WallClock()


def set_clock(clock: Clock) -> Clock:
    """Internal, for tests: replaces the driver's clock; returns the previous one."""
    global _clock
    previous, _clock = _clock, clock
    return previous


def error_message(error: BaseException) -> str:
    """What a leak entry records of a destroy's exception: ``str(error)``, its
    type's name when ``__str__`` fails, the core's fallback if even that does."""
    try:
        return exact(str(error), "message")
    except Exception:  # noqa: BLE001 - a broken __str__ still failed the destroy
        try:
            return type(error).__name__
        except Exception:  # noqa: BLE001
            return _UNREADABLE


def _is_awaitable(value: object) -> bool:
    return type(value) is types.CoroutineType or inspect.isawaitable(value)


def _instance_fields(found: object) -> tuple[str, str]:
    """``(provider, provider_sandbox_id)`` of what ``get`` answered: a record
    (or any object with those attributes) or a camelCase wire-form mapping,
    each field read once. Anything else breaks the store contract."""
    if type(found) is SandboxInstanceRecord:
        # A record checked its fields' types when it was made.
        provider, sandbox_id = found.provider, found.provider_sandbox_id
        if provider.isascii() and sandbox_id.isascii():
            return provider, sandbox_id
    what = "the record instances.get() returned"
    if isinstance(found, Mapping):
        names = ("provider", "providerSandboxId")
        values = []
        for name in names:
            if name not in found:
                raise TypeError(f"{what} has no `{name}`")
            values.append(found[name])
    else:
        names = ("provider", "provider_sandbox_id")
        values = []
        for name in names:
            try:
                values.append(getattr(found, name))
            except AttributeError:
                raise TypeError(
                    f"expected a SandboxInstanceRecord, a wire-form dict or None, got "
                    f"{type(found).__name__} (no `{name}` attribute)"
                ) from None
    for name, value in zip(names, values):
        if not isinstance(value, str):
            raise TypeError(f"{what}: `{name}` must be a str, got {type(value).__name__}")
        exact(value, f"{what}: `{name}`")
    return values[0], values[1]


def _claimed_sandbox_ids(entries: object) -> list[str]:
    if not isinstance(entries, list):
        raise TypeError(f"instances.claim_leaks() must return a list of LeakEntry, got {type(entries).__name__}")
    ids = []
    for index, entry in enumerate(entries):
        sandbox_id = getattr(entry, "provider_sandbox_id", None)
        if not isinstance(sandbox_id, str):
            raise TypeError(f"leak entry {index} from claim_leaks() has no str `provider_sandbox_id`")
        ids.append(exact(sandbox_id, f"leak entry {index}'s provider_sandbox_id"))
    return ids


class Host:
    """The host objects of one flow, checked, with their methods bound once
    (a method the flow does not use is ``None``)."""

    __slots__ = ("destroy", "get", "delete", "delete_recording_leak", "claim_leaks", "resolve_leak", "record_retry_failure", "log")

    def __init__(
        self,
        destroy: Callable[..., Any],
        get: Callable[..., Any] | None,
        delete: Callable[..., Any] | None,
        delete_recording_leak: Callable[..., Any] | None,
        claim_leaks: Callable[..., Any] | None,
        resolve_leak: Callable[..., Any] | None,
        record_retry_failure: Callable[..., Any] | None,
        log: Mapping[str, Callable[[str, dict[str, Any]], object]] | None,
    ) -> None:
        self.destroy = destroy
        self.get = get
        self.delete = delete
        self.delete_recording_leak = delete_recording_leak
        self.claim_leaks = claim_leaks
        self.resolve_leak = resolve_leak
        self.record_retry_failure = record_retry_failure
        self.log = log


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieves a dropped task's outcome so asyncio never warns about it."""
    if not task.cancelled():
        task.exception()


# The shared empty task list of runs that never needed one (never mutated:
# `wait` gives a run its own list first).
_NONE: list[Any] = []

# A started effect waiting to be heard of: (effect id, op, awaitable or task).
Started = tuple[int, int, Any]
# A settled effect: (effect id, op, value or exception, failed).
Settled = tuple[int, int, Any, bool]


class _Run:
    """One flow run's host side: what it started and what the host gave back."""

    __slots__ = ("host", "run", "values", "awaiting", "settled", "tasks", "cancelled")

    def __init__(self, host: Host) -> None:
        self.host = host
        self.run = -1
        self.values: dict[int, Any] = {}
        self.awaiting: list[Started] = []
        self.settled: list[Settled] = []
        # Only flows with several effects in flight or a deadline need these.
        self.tasks: list[Started] = _NONE
        self.cancelled: set[int] = set()

    def start(self, batch: Batch) -> Batch:
        """Starts every effect of ``batch``; answers the batch that stands
        (a new one if a logger raised)."""
        while True:
            self.run = batch[0]
            replaced = None
            at = _HEADER + _ENDING_OPERANDS[batch[2]]
            end = len(batch)
            host = self.host
            while at < end and replaced is None:
                op = batch[at]
                effect = batch[at + 1]
                at += 2
                if op == _GET:
                    self.call(effect, op, host.get, batch[at])
                    at += 1
                elif op == _DESTROY:
                    self.call(effect, op, host.destroy, batch[at])
                    at += 2
                elif op == _DELETE:
                    self.call(effect, op, host.delete, batch[at])
                    at += 1
                elif op == _DELETE_LEAK:
                    leak = NewLeak(batch[at + 1], batch[at + 2], batch[at + 3], batch[at + 4], batch[at + 5], batch[at + 6])
                    self.call(effect, op, host.delete_recording_leak, batch[at], leak)
                    at += 7
                elif op == _LOG:
                    at, replaced = self.log(effect, batch, at)
                elif op == _CANCEL:
                    self.cancel(batch[at])
                    at += 1
                elif op == _CLAIM:
                    # Python stores take the lease in seconds.
                    self.call(effect, op, host.claim_leaks, batch[at], batch[at + 1], batch[at + 2] / 1000)
                    at += 3
                elif op == _RESOLVE:
                    self.call(effect, op, host.resolve_leak, self.values[batch[at]][batch[at + 1]])
                    at += 2
                elif op == _RECORD_FAILURE:
                    entry = self.values[batch[at]][batch[at + 1]]
                    self.call(effect, op, host.record_retry_failure, entry, batch[at + 2], batch[at + 3])
                    at += 4
                else:
                    raise RuntimeError(f"sandbox_reclaim: unknown effect op {op}")
            if replaced is None:
                return batch
            batch = replaced

    def log(self, effect: int, batch: Batch, at: int) -> tuple[int, Batch | None]:
        level, message, count = batch[at], batch[at + 1], batch[at + 2]
        at += 3
        meta: dict[str, Any] = {}
        for _ in range(count):
            key, kind = batch[at], batch[at + 1]
            if kind == _META_TEXT:
                meta[key] = batch[at + 2]
                at += 3
            elif kind == _META_HOST_ERROR:
                meta[key] = self.values[batch[at + 2]]
                at += 3
            else:
                meta[key] = SandboxDestroyTimeoutError._from_core(batch[at + 2], batch[at + 3], batch[at + 4])
                at += 5
        log = self.host.log
        if log is None:
            return at, None
        try:
            # Called, never awaited, like the reference's logger.
            log[level](message, meta)
        except Exception as error:  # noqa: BLE001 - the flow rejects with it
            self.values[effect] = error
            return at, _native.complete(self.run, effect, _FAILED, None, None, _clock.now())
        return at, None

    def call(self, effect: int, op: int, method: Callable[..., Any] | None, *args: Any) -> None:
        try:
            answer = method(*args)  # type: ignore[misc]
        except Exception as error:  # noqa: BLE001 - a host failure is an answer
            self.settled.append((effect, op, error, True))
            return
        if type(answer) is types.CoroutineType or inspect.isawaitable(answer):
            self.awaiting.append((effect, op, answer))
        else:
            self.settled.append((effect, op, answer, False))

    def cancel(self, target: int) -> None:
        """The machine cancelled ``target`` (its deadline passed): cancel its
        task; its late settle is never reported."""
        self.cancelled.add(target)
        for started in (self.awaiting, self.tasks):
            for index, (effect, _, pending) in enumerate(started):
                if effect == target:
                    del started[index]
                    if isinstance(pending, asyncio.Future):
                        pending.cancel()
                        pending.add_done_callback(_consume)
                    elif isinstance(pending, types.CoroutineType):
                        pending.close()  # never started
                    return

    def completion(self, effect: int, op: int, value: Any, failed: bool) -> Batch:
        """Feeds one settle to the machine; answers the next batch."""
        now = _clock.now()
        if failed:
            self.values[effect] = value
            # Only a destroy's message is kept (for the ledger); a store failure propagates as it is.
            message = error_message(value) if op == _DESTROY else None
            return _native.complete(self.run, effect, _FAILED, message, None, now)
        if op == _GET:
            if value is None:
                return _native.complete(self.run, effect, _NO_INSTANCE, None, None, now)
            provider, sandbox_id = _instance_fields(value)
            return _native.complete(self.run, effect, _INSTANCE, provider, sandbox_id, now)
        if op == _CLAIM:
            sandbox_ids = _claimed_sandbox_ids(value)
            self.values[effect] = value
            return _native.complete_leaks(self.run, effect, sandbox_ids, now)
        return _native.complete(self.run, effect, _OK, None, None, now)

    async def wait(self, deadline: int | None) -> Batch:
        """The general case: several effects in flight, or a deadline. Runs
        them as tasks; answers the batch of the first to settle, or of the
        deadline."""
        if self.tasks is _NONE:
            self.tasks = []
        for effect, op, awaitable in self.awaiting:
            self.tasks.append((effect, op, asyncio.ensure_future(awaitable)))
        self.awaiting.clear()
        if not self.tasks and deadline is None:
            raise RuntimeError("sandbox_reclaim: the flow waits on nothing (a driver bug)")
        await _clock.wait({task for _, _, task in self.tasks}, deadline)
        for index, (effect, op, task) in enumerate(self.tasks):
            if task.done():
                del self.tasks[index]
                if task.cancelled():
                    return self.completion(effect, op, asyncio.CancelledError(), True)
                failure = task.exception()
                if failure is None:
                    return self.completion(effect, op, task.result(), False)
                if not isinstance(failure, Exception):
                    raise failure
                return self.completion(effect, op, failure, True)
        # Woken by the deadline (a wake-up before it just waits again).
        return _native.timeout(self.run, _clock.now())

    def drop(self) -> None:
        """The run ended: nothing it started may linger."""
        for _, _, task in self.tasks:
            task.cancel()
            task.add_done_callback(_consume)
        self.tasks.clear()
        for _, _, awaitable in self.awaiting:
            if isinstance(awaitable, types.CoroutineType):
                awaitable.close()  # never started: no "never awaited" warning
        self.awaiting.clear()

    def finish(self, batch: Batch) -> Any:
        ending = batch[2]
        if ending == _RESOLVE_STRING:
            return batch[3]
        if ending == _RESOLVE_NOTHING:
            return None
        if ending == _RESOLVE_JSON:
            return json.loads(batch[3])
        if ending == _REJECT_HOST_ERROR:
            raise self.values[batch[3]]
        if ending == _REJECT_RECLAIM_FAILED:
            raise SandboxReclaimFailedError._from_core(batch[3], batch[4], batch[5])
        raise RuntimeError(f"sandbox_reclaim: unknown ending {ending}")


async def drive(start: Callable[..., Batch], arguments: tuple[Any, ...], host: Host) -> Any:
    """Runs the flow ``start(*arguments, now)`` begins against ``host``;
    returns what the machine resolves with (an outcome string, ``None``, a
    decoded JSON document) or raises what it rejects with."""
    batch = start(*arguments, _clock.now())
    state = _Run(host)
    try:
        while True:
            batch = state.start(batch)
            if batch[2] != _RUNNING:
                return state.finish(batch)
            settled = state.settled
            awaiting = state.awaiting
            if settled:
                # Synchronous answers, in the order their effects were started.
                effect, op, value, failed = settled.pop(0)
            elif batch[1] is None and not state.tasks and len(awaiting) == 1:
                # One awaitable, nothing else in flight, no deadline: await it in place.
                effect, op, awaitable = awaiting.pop()
                try:
                    value = await awaitable
                    failed = False
                except Exception as error:  # noqa: BLE001 - a host failure is an answer
                    value, failed = error, True
            else:
                batch = await state.wait(batch[1])
                continue
            batch = state.completion(effect, op, value, failed)
    except BaseException:
        if batch[2] == _RUNNING:
            _native.abandon(state.run)
        raise
    finally:
        if state.tasks or state.awaiting:
            state.drop()
