"""The generic asyncio driver: runs any of the core's flow machines against
Python host objects.

It knows effects, never rules. A native call answers with a *batch* (the
run's number, its next deadline, its ending, the effects to start; layout in
``core/src/wire.rs``); the driver starts each effect, keeps the host's own
values (a raised exception, the entries a claim returned) by effect id, feeds
each settle back, waits until the machine's deadline and cancels what the
machine cancels. Logs and progress events run at once, in order; a raising
logger is completed as failed and the machine drops the rest of that batch
(a raising progress callback is ignored).

Host methods may be ``def`` or ``async def``: an answer is awaited only when
it is awaitable. One awaitable with nothing else in flight and no deadline is
awaited in place (no task), which is every step of a plain reclaim.

Flows that can stop part-way (the fleet passes) run every effect as a task:
when the caller's task is cancelled, the driver tells the machine to stop and
drives it (its host calls untouched) until it ends, then re-raises the
cancellation; a ``stop`` event does the same and returns the report.

Ops answered with JSON (listings, references, stale records, due leaks,
flags) are converted here from the host's answer to the core's camelCase wire
form; an answer that breaks the method's contract is that effect's failure
(a ``TypeError`` naming the method), never a guess.
"""

from __future__ import annotations

import asyncio
import collections
import datetime
import functools
import inspect
import json
import time
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from . import _native
from ._checks import exact
from ._errors import SandboxDestroyTimeoutError, SandboxReclaimFailedError
from ._records import AuditEntry, LeakReason, NewLeak, SandboxInstanceRecord

_PROTOCOL = _native.protocol()
_HEADER: int = _PROTOCOL["header"]
_ENDING_OPERANDS: list[int] = _PROTOCOL["ending_operands"]
(_RUNNING, _RESOLVE_NOTHING, _RESOLVE_STRING, _RESOLVE_JSON, _REJECT_HOST_ERROR, _REJECT_RECLAIM_FAILED) = _PROTOCOL["endings"]
(
    _GET,
    _DELETE,
    _DELETE_LEAK,
    _DESTROY,
    _CLAIM,
    _RESOLVE,
    _RECORD_FAILURE,
    _LOG,
    _CANCEL,
    _LIST,
    _REFERENCES,
    _LIST_STALE,
    _EXPIRE_IDLE,
    _RECORD_LEAK,
    _DUE_LEAKS,
    _DEFER_LEAK,
    _CLAIM_SWEEP,
    _RELEASE_SWEEP,
    _APPEND_AUDIT,
    _PROGRESS,
) = _PROTOCOL["ops"]
(_META_TEXT, _META_HOST_ERROR, _META_TIMEOUT) = _PROTOCOL["meta_kinds"]
(_OK, _FAILED, _INSTANCE, _NO_INSTANCE, _JSON) = _PROTOCOL["completions"]
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


def now() -> int:
    """The driver's clock, epoch milliseconds (virtual in the vector suite)."""
    return _clock.now()


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



# ---- host answers read as the core's JSON wire form ----

_MISSING: Any = object()
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MILLISECOND = datetime.timedelta(milliseconds=1)


def _items(answer: object, what: str) -> Sequence[Any]:
    if not isinstance(answer, (list, tuple)):
        raise TypeError(f"{what} must return a list, got {type(answer).__name__}")
    return answer


def _field(item: object, attribute: str, wire: str) -> Any:
    """A field of an item a host answered: a wire-form (camelCase) mapping's
    key, or an object's (snake_case) attribute; ``_MISSING`` when absent."""
    if isinstance(item, Mapping):
        return item.get(wire, _MISSING)
    return getattr(item, attribute, _MISSING)


def _text(value: object, what: str, optional: bool = False) -> str | None:
    if optional and (value is None or value is _MISSING):
        return None
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str{' or None' if optional else ''}, got {type(value).__name__}")
    return exact(value, what)


def _millis(value: object, what: str, optional: bool = False) -> int | None:
    """Epoch milliseconds: a whole number, or (for listings) an aware ``datetime``."""
    if optional and (value is None or value is _MISSING):
        return None
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise TypeError(f"{what} must be a timezone-aware datetime (a naive one names no instant)")
        value = (value - _EPOCH) // _MILLISECOND
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int (epoch milliseconds), got {type(value).__name__}")
    if not 0 <= value <= 2**53 - 1:
        raise ValueError(f"{what} must be a whole number of epoch milliseconds between 0 and 2^53-1, got {value}")
    return value


def _flag(answer: object, what: str) -> str:
    if not isinstance(answer, bool):
        raise TypeError(f"{what} must return a bool, got {type(answer).__name__}")
    return "true" if answer else "false"


def _listed_json(answer: object) -> str:
    what = "provider.list()"
    listed = []
    for index, item in enumerate(_items(answer, what)):
        name = f"sandbox {index} of {what}"
        sandbox: dict[str, Any] = {
            "id": _text(_field(item, "id", "id"), f"{name}: `id`"),
            "createdAt": _millis(_field(item, "created_at", "createdAt"), f"{name}: `created_at`", True),
            "owner": _text(_field(item, "owner", "owner"), f"{name}: `owner`", True),
        }
        key = _text(_field(item, "key", "key"), f"{name}: `key`", True)
        if key is not None:
            sandbox["key"] = key
        listed.append(sandbox)
    return json.dumps(listed)


def _references_json(answer: object) -> str:
    what = "instances.sandbox_references()"
    if not isinstance(answer, (list, tuple, set, frozenset)):
        raise TypeError(f"{what} must return a list of str, got {type(answer).__name__}")
    return json.dumps([_text(sandbox_id, f"an id {what} returned") for sandbox_id in answer])


def _stale_json(answer: object) -> str:
    what = "instances.list_stale()"
    records = []
    for index, item in enumerate(_items(answer, what)):
        name = f"record {index} of {what}"
        records.append(
            {
                "key": _text(_field(item, "key", "key"), f"{name}: `key`"),
                "provider": _text(_field(item, "provider", "provider"), f"{name}: `provider`"),
                "providerSandboxId": _text(
                    _field(item, "provider_sandbox_id", "providerSandboxId"), f"{name}: `provider_sandbox_id`"
                ),
                "updatedAt": _millis(_field(item, "updated_at", "updatedAt"), f"{name}: `updated_at`"),
            }
        )
    return json.dumps(records)


def _due_json(answer: object) -> str:
    what = "instances.due_leaks()"
    entries = []
    for index, item in enumerate(_items(answer, what)):
        name = f"entry {index} of {what}"
        entry: dict[str, Any] = {
            "providerSandboxId": _text(
                _field(item, "provider_sandbox_id", "providerSandboxId"), f"{name}: `provider_sandbox_id`"
            ),
            "key": _text(_field(item, "key", "key"), f"{name}: `key`"),
        }
        attempts = _field(item, "attempts", "attempts")
        if attempts is not _MISSING:
            if isinstance(attempts, bool) or not isinstance(attempts, int) or not 0 <= attempts < 2**32:
                raise TypeError(f"{name}: `attempts` must be an int between 0 and 2^32-1")
            entry["attempts"] = attempts
        reason = _text(_field(item, "reason", "reason"), f"{name}: `reason`", True)
        if reason is not None:
            entry["reason"] = reason
        next_attempt_at = _millis(_field(item, "next_attempt_at", "nextAttemptAt"), f"{name}: `next_attempt_at`", True)
        if next_attempt_at is not None:
            entry["nextAttemptAt"] = next_attempt_at
        entries.append(entry)
    return json.dumps(entries)


# The ops answered with JSON, by op → how the host's answer is read.
_JSON_ANSWERS: dict[int, Callable[[object], str]] = {
    _LIST: _listed_json,
    _REFERENCES: _references_json,
    _LIST_STALE: _stale_json,
    _EXPIRE_IDLE: lambda answer: _flag(answer, "instances.expire_idle()"),
    _DUE_LEAKS: _due_json,
    _CLAIM_SWEEP: lambda answer: _flag(answer, "instances.claim_sweep()"),
}

# Awaitables progress callbacks returned, kept until done (asyncio holds tasks weakly).
_PROGRESS_TASKS: set[asyncio.Future[Any]] = set()


def _progress_done(task: asyncio.Future[Any]) -> None:
    _PROGRESS_TASKS.discard(task)
    _consume(task)


Method = Callable[..., Any]


class Host:
    """The host objects of one flow, checked, with their methods bound once
    (a method the flow does not use is ``None``). ``destroys`` and ``lists``
    are the providers' ``destroy`` and listing methods, in provider order."""

    __slots__ = (
        "destroys",
        "lists",
        "get",
        "delete",
        "delete_recording_leak",
        "claim_leaks",
        "resolve_leak",
        "record_retry_failure",
        "log",
        "progress",
        "list_stale",
        "expire_idle",
        "sandbox_references",
        "record_leak",
        "due_leaks",
        "defer_leak",
        "claim_sweep",
        "release_sweep",
        "append_audit",
    )

    def __init__(
        self,
        *,
        destroys: Sequence[Method],
        lists: Sequence[Method | None] = (),
        get: Method | None = None,
        delete: Method | None = None,
        delete_recording_leak: Method | None = None,
        claim_leaks: Method | None = None,
        resolve_leak: Method | None = None,
        record_retry_failure: Method | None = None,
        log: Mapping[str, Callable[[str, dict[str, Any]], object]] | None = None,
        progress: Callable[[dict[str, Any]], object] | None = None,
        fleet: Mapping[str, Method] | None = None,
    ) -> None:
        self.destroys = destroys
        self.lists = lists
        self.get = get
        self.delete = delete
        self.delete_recording_leak = delete_recording_leak
        self.claim_leaks = claim_leaks
        self.resolve_leak = resolve_leak
        self.record_retry_failure = record_retry_failure
        self.log = log
        self.progress = progress
        fleet = fleet or {}
        self.list_stale = fleet.get("list_stale")
        self.expire_idle = fleet.get("expire_idle")
        self.sandbox_references = fleet.get("sandbox_references")
        self.record_leak = fleet.get("record_leak")
        self.due_leaks = fleet.get("due_leaks")
        self.defer_leak = fleet.get("defer_leak")
        self.claim_sweep = fleet.get("claim_sweep")
        self.release_sweep = fleet.get("release_sweep")
        self.append_audit = fleet.get("append_audit")


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieves a dropped task's outcome so asyncio never warns about it."""
    if not task.cancelled():
        task.exception()


# The shared empty task table of runs that never needed one (never mutated:
# `wait` gives a run its own table first).
_NONE: dict[int, Any] = {}

# A started effect waiting to be heard of: (effect id, op, awaitable or task).
Started = tuple[int, int, Any]
# A settled effect: (effect id, op, value or exception, failed).
Settled = tuple[int, int, Any, bool]


def _leak(batch: Batch, at: int) -> NewLeak:
    """The six leak slots at ``at``: key, provider, providerSandboxId, runId, errorMessage, failedAt."""
    return NewLeak(batch[at], batch[at + 1], batch[at + 2], batch[at + 3], batch[at + 4], batch[at + 5])


class _Run:
    """One flow run's host side: what it started and what the host gave back."""

    __slots__ = ("host", "run", "values", "awaiting", "settled", "tasks", "done", "waker", "cancelled")

    def __init__(self, host: Host) -> None:
        self.host = host
        self.run = -1
        self.values: dict[int, Any] = {}
        self.awaiting: list[Started] = []
        self.settled: list[Settled] = []
        # Only flows with several effects in flight or a deadline need these:
        # the tasks running, by effect id → (op, task); those that finished,
        # in the order they did; the future that wakes `wait` when one does.
        self.tasks: dict[int, tuple[int, asyncio.Future[Any]]] = _NONE
        self.done: collections.deque[Started] = collections.deque()
        self.waker: asyncio.Future[None] | None = None
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
                    self.call(effect, op, host.destroys[batch[at]], batch[at + 1])
                    at += 3
                elif op == _DELETE:
                    self.call(effect, op, host.delete, batch[at])
                    at += 1
                elif op == _DELETE_LEAK:
                    self.call(effect, op, host.delete_recording_leak, batch[at], _leak(batch, at + 1))
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
                elif op == _PROGRESS:
                    self.progress(batch[at])
                    at += 1
                elif op == _LIST:
                    self.call(effect, op, host.lists[batch[at]])
                    at += 2
                elif op == _REFERENCES:
                    self.call(effect, op, host.sandbox_references, batch[at], batch[at + 1])
                    at += 2
                elif op == _LIST_STALE:
                    self.call(effect, op, host.list_stale, batch[at], batch[at + 1])
                    at += 2
                elif op == _EXPIRE_IDLE:
                    self.call(effect, op, host.expire_idle, batch[at], batch[at + 1], _leak(batch, at + 2))
                    at += 8
                elif op == _RECORD_LEAK:
                    reason = LeakReason(batch[at + 6])
                    self.call(effect, op, host.record_leak, _leak(batch, at), reason, batch[at + 7])
                    at += 8
                elif op == _DUE_LEAKS:
                    self.call(effect, op, host.due_leaks, batch[at], batch[at + 1], batch[at + 2], batch[at + 3])
                    at += 4
                elif op == _DEFER_LEAK:
                    entry = self.values[batch[at]][batch[at + 1]]
                    self.call(effect, op, host.defer_leak, entry, batch[at + 2], batch[at + 3], batch[at + 4])
                    at += 5
                elif op == _CLAIM_SWEEP:
                    self.call(effect, op, host.claim_sweep, batch[at], batch[at + 1], batch[at + 2], batch[at + 3])
                    at += 4
                elif op == _RELEASE_SWEEP:
                    self.call(effect, op, host.release_sweep, batch[at], batch[at + 1])
                    at += 2
                elif op == _APPEND_AUDIT:
                    rows = [AuditEntry.from_dict(row) for row in json.loads(batch[at])]
                    self.call(effect, op, host.append_audit, rows)
                    at += 1
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
            return at, _native.complete(self.run, effect, _FAILED, error_message(error), None, _clock.now())
        return at, None

    def progress(self, event: str) -> None:
        """Calls the progress callback with the event (a fresh dict); what it
        raises is ignored, and an awaitable it returns runs on its own."""
        callback = self.host.progress
        if callback is None:
            return
        try:
            answer = callback(json.loads(event))
            if _is_awaitable(answer):
                task = asyncio.ensure_future(answer)  # type: ignore[call-overload]
                _PROGRESS_TASKS.add(task)
                task.add_done_callback(_progress_done)
        except Exception:  # noqa: BLE001, S110 - progress never changes a pass
            pass

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
        running = self.tasks.pop(target, None)
        if running is not None:
            task = running[1]
            task.cancel()
            task.add_done_callback(_consume)
            return
        for index, (effect, _, pending) in enumerate(self.awaiting):
            if effect == target:
                del self.awaiting[index]
                if isinstance(pending, types.CoroutineType):
                    pending.close()  # never started
                return
        # An answer not yet reported (the machine cancelled it first).
        for index, (effect, _, task) in enumerate(self.done):
            if effect == target:
                del self.done[index]
                _consume(task)
                return
        for index, (effect, _, _, _) in enumerate(self.settled):
            if effect == target:
                del self.settled[index]
                return

    def completion(self, effect: int, op: int, value: Any, failed: bool) -> Batch:
        """Feeds one settle to the machine; answers the next batch."""
        now = _clock.now()
        if failed:
            # The machine gets the message (ledgers and fleet reports keep
            # it); the exception itself stays here, for logs and rejections.
            self.values[effect] = value
            return _native.complete(self.run, effect, _FAILED, error_message(value), None, now)
        if op == _GET:
            if value is None:
                return _native.complete(self.run, effect, _NO_INSTANCE, None, None, now)
            provider, sandbox_id = _instance_fields(value)
            return _native.complete(self.run, effect, _INSTANCE, provider, sandbox_id, now)
        if op == _CLAIM:
            sandbox_ids = _claimed_sandbox_ids(value)
            self.values[effect] = value
            return _native.complete_leaks(self.run, effect, sandbox_ids, now)
        read = _JSON_ANSWERS.get(op)
        if read is not None:
            try:
                answer = read(value)
            except Exception as error:  # noqa: BLE001 - an answer out of contract fails its effect
                self.values[effect] = error
                return _native.complete(self.run, effect, _FAILED, error_message(error), None, now)
            if op == _DUE_LEAKS:
                self.values[effect] = value  # the entries DEFER_LEAK / RESOLVE_LEAK name
            return _native.complete(self.run, effect, _JSON, answer, None, now)
        return _native.complete(self.run, effect, _OK, None, None, now)

    async def wait(self, deadline: int | None, stop: asyncio.Future[Any] | None = None) -> Batch | None:
        """The general case: several effects in flight, or a deadline. Runs
        them as tasks; answers the batch of the first to settle, or of the
        deadline; ``None`` when ``stop`` is done first."""
        if self.tasks is _NONE:
            self.tasks = {}
        tasks = self.tasks
        for effect, op, awaitable in self.awaiting:
            task = asyncio.ensure_future(awaitable)
            tasks[effect] = (op, task)
            task.add_done_callback(functools.partial(self.finished, effect))
        self.awaiting.clear()
        if not self.done:
            if not tasks and deadline is None and stop is None:
                raise RuntimeError("sandbox_reclaim: the flow waits on nothing (a driver bug)")
            # One future to wait on however many tasks run: each task's done
            # callback queues it and wakes this.
            waker: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.waker = waker
            try:
                await _clock.wait({waker} if stop is None else {waker, stop}, deadline)
            finally:
                self.waker = None
        if self.done:
            effect, op, task = self.done.popleft()
            if task.cancelled():
                return self.completion(effect, op, asyncio.CancelledError(), True)
            failure = task.exception()
            if failure is None:
                return self.completion(effect, op, task.result(), False)
            if not isinstance(failure, Exception):
                raise failure
            return self.completion(effect, op, failure, True)
        if stop is not None and stop.done():
            return None
        # Woken by the deadline (a wake-up before it just waits again).
        return _native.timeout(self.run, _clock.now())

    def finished(self, effect: int, task: asyncio.Future[Any]) -> None:
        """A task's done callback: queues its settle (unless the machine
        cancelled it or the run was dropped) and wakes ``wait``."""
        running = self.tasks.get(effect)
        if running is None or running[1] is not task:
            return
        del self.tasks[effect]
        self.done.append((effect, running[0], task))
        waker = self.waker
        if waker is not None and not waker.done():
            waker.set_result(None)

    def drop(self) -> None:
        """The run ended: nothing it started may linger."""
        for _, task in self.tasks.values():
            task.cancel()
            task.add_done_callback(_consume)
        self.tasks.clear()
        for _, _, task in self.done:
            _consume(task)
        self.done.clear()
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
            error = self.values.get(batch[3])
            if isinstance(error, BaseException):
                raise error
            raise RuntimeError("sandbox_reclaim: the flow failed on a host answer it could not read")
        if ending == _REJECT_RECLAIM_FAILED:
            raise SandboxReclaimFailedError._from_core(batch[3], batch[4], batch[5])
        raise RuntimeError(f"sandbox_reclaim: unknown ending {ending}")


async def drive(
    start: Callable[..., Batch],
    arguments: tuple[Any, ...],
    host: Host,
    *,
    stoppable: bool = False,
    stop: asyncio.Event | None = None,
) -> Any:
    """Runs the flow ``start(*arguments, now)`` begins against ``host``;
    returns what the machine resolves with (an outcome string, ``None``, a
    decoded JSON document) or raises what it rejects with.

    ``stoppable`` flows (those whose machine can stop part-way) run every
    effect as a task. Cancelling the caller then stops the machine, which is
    driven on (its effects untouched) until it ends, and the cancellation is
    re-raised; once ``stop`` is set the machine is stopped likewise and its
    ending is returned. Other flows are abandoned where they stand when
    cancelled, their effects cancelled."""
    state = _Run(host)
    batch: Batch = (-1, None, _RUNNING)
    cancelled = stopped = False
    stop_waiter: asyncio.Future[Any] | None = None
    try:
        batch = state.start(start(*arguments, _clock.now()))
        while batch[2] == _RUNNING:
            settled = state.settled
            if settled:
                # Synchronous answers, in the order their effects were started.
                effect, op, value, failed = settled.pop(0)
                batch = state.start(state.completion(effect, op, value, failed))
            elif not stoppable:
                awaiting = state.awaiting
                if batch[1] is None and not state.tasks and not state.done and len(awaiting) == 1:
                    # One awaitable, nothing else in flight, no deadline: await it in place.
                    effect, op, awaitable = awaiting.pop()
                    try:
                        value = await awaitable
                        failed = False
                    except Exception as error:  # noqa: BLE001 - a host failure is an answer
                        value, failed = error, True
                    batch = state.start(state.completion(effect, op, value, failed))
                else:
                    answered = await state.wait(batch[1])
                    assert answered is not None
                    batch = state.start(answered)
            elif not stopped and (cancelled or (stop is not None and stop.is_set())):
                stopped = True
                batch = state.start(_native.stop(state.run, _clock.now()))
            else:
                if stop is not None and stop_waiter is None and not stopped:
                    stop_waiter = asyncio.ensure_future(stop.wait())
                try:
                    answered = await state.wait(batch[1], None if stopped else stop_waiter)
                except asyncio.CancelledError:
                    # Shielded: the machine stops, what runs settles or reaches its deadline.
                    cancelled = True
                    continue
                if answered is not None:
                    batch = state.start(answered)
        if cancelled:
            raise asyncio.CancelledError
        return state.finish(batch)
    except BaseException:
        if batch[2] == _RUNNING and state.run >= 0:
            _native.abandon(state.run)
        raise
    finally:
        if stop_waiter is not None and not stop_waiter.done():
            stop_waiter.cancel()
            stop_waiter.add_done_callback(_consume)
        if state.tasks or state.awaiting or state.done:
            state.drop()
