"""The host calls of the core's operand table (``proto/src/machine/effect_table.rs``):
how an op's slots become a host method's arguments, and how its answer is
reported to the machine. The driver (``_driver.py``) builds one starter per op
from these at import; ``run`` is its run (``values``, ``host``, ``call``,
``failed``)."""

from __future__ import annotations

import asyncio
import inspect
import json
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import _native
from ._host_answers import claimed_sandbox_ids, instance_fields, json_reader
from ._errors import SandboxDestroyTimeoutError
from ._records import AuditEntry, LeakReason, NewLeak

_PROTOCOL = _native.protocol()
(_OK, _, _INSTANCE, _NO_INSTANCE, _JSON) = _PROTOCOL["completions"]
(_META_TEXT, _META_HOST_ERROR, _META_TIMEOUT) = _PROTOCOL["meta_kinds"]
# Awaitables progress callbacks returned, kept until done (asyncio holds tasks weakly).
_PROGRESS_TASKS: set[asyncio.Future[Any]] = set()
Batch = tuple[Any, ...]
Starter = Callable[[Any, int, Batch, int], int]
Answer = tuple[Callable[..., Batch], bool]  # how to report an op's answer; whether to keep it


class Host:
    """The host objects of one flow, checked, methods bound once: ``provided``
    (``destroy``/``list`` → one method per provider number), ``store`` (the
    table's Python method names → methods), ``log`` (level → method) and
    ``progress``."""

    __slots__ = ("provided", "store", "log", "progress")

    def __init__(self, provided: Mapping[str, Sequence[Any]], store: Mapping[str, Any] | None = None,
                 log: Mapping[str, Callable[..., object]] | None = None, progress: Callable[..., object] | None = None) -> None:
        # Positional on a reclaim's path: a keyword call costs a reclaim ~0.3 µs.
        self.provided, self.store, self.log, self.progress = provided, store or {}, log, progress


# Operand kinds: each appends its host argument and answers the next slot.
Operand = Callable[[Any, Batch, int, list[Any]], int]


def _slot(convert: Callable[[Any], Any], width: int = 1) -> Operand:
    """An operand whose first slot, converted, is the argument (the rest unread)."""
    def read(run: Any, batch: Batch, at: int, args: list[Any]) -> int:
        args.append(convert(batch[at]))
        return at + width
    return read


def _entry(run: Any, batch: Batch, at: int, args: list[Any]) -> int:
    args.append(run.values[batch[at]][batch[at + 1]])
    return at + 2


def _leak(run: Any, batch: Batch, at: int, args: list[Any]) -> int:
    args.append(NewLeak(*batch[at : at + 6]))
    return at + 6


_OPERANDS: dict[str, Operand] = {
    "value": _slot(lambda value: value),
    "reason": _slot(LeakReason),
    "lease": _slot(lambda ms: ms / 1000),  # Python's claim_leaks takes seconds
    "audit": _slot(lambda rows: [AuditEntry.from_dict(row) for row in json.loads(rows)]),
    "sandbox": _slot(lambda sandbox_id: sandbox_id, 2),  # the id; a deadline cancels the task
    "signal": lambda run, batch, at, args: at + 1,
    "ids": _slot(json.loads, 2),  # the ids; a deadline cancels the task
    "idList": _slot(json.loads),  # one slot, the ids as a JSON array: a list of str
    "entry": _entry,
    "leak": _leak,
}


def _answer(spec: dict[str, Any]) -> Callable[[Any, int, Any, int], Batch]:
    """How a settled value of ``spec``'s op is reported to the machine."""
    kind = spec["answer"]
    if kind == "instance":
        def instance(run: Any, effect: int, value: Any, now: int) -> Batch:
            if value is None:
                return _native.complete(run.run, effect, _NO_INSTANCE, None, None, now)
            return _native.complete(run.run, effect, _INSTANCE, *instance_fields(value), now)
        return instance
    if kind == "claimed":
        return lambda run, effect, value, now: _native.complete_leaks(run.run, effect, claimed_sandbox_ids(value), now)
    if kind == "held":
        # A fenced ledger write: only ``False`` says the store refused it.
        return lambda run, effect, value, now: _native.complete(
            run.run, effect, _JSON, "false" if value is False else "true", None, now
        )
    if kind == "json":
        owner = "provider" if spec["target"] == "provider" else "instances"
        read = json_reader(spec["shape"], f"{owner}.{spec['python']}")
        def answered(run: Any, effect: int, value: Any, now: int) -> Batch:
            try:
                answer = read(value)
            except Exception as error:  # noqa: BLE001 - an answer out of contract fails its effect
                failed: Batch = run.failed(effect, error, now)
                return failed
            return _native.complete(run.run, effect, _JSON, answer, None, now)
        return answered
    return lambda run, effect, value, now: _native.complete(run.run, effect, _OK, None, None, now)


# Operand kinds whose slots pass as they are (or are skipped): their calls
# need no converter, so the hot ops (get, destroy, delete) take a fast path.
_PLAIN = {"value": (0,), "sandbox": (0,), "signal": ()}
_WIDTH = {"leak": 6, "entry": 2, "sandbox": 2}


def host_call(spec: dict[str, Any]) -> Starter:
    """A host op's row → ``(run, effect, batch, at) → next at``, which starts its host call."""
    name, via_provider = spec["python"], spec["target"] == "provider"
    kinds = [kind for kind in spec["operands"] if kind != "provider"]
    answer = (_answer(spec), spec["keeps"])
    if all(kind in _PLAIN for kind in kinds):
        # Which slots after the provider become arguments, and how many slots there are.
        picks, width = [], 0
        for kind in kinds:
            picks += [width + offset for offset in _PLAIN[kind]]
            width += _WIDTH.get(kind, 1)

        def plain(run: Any, effect: int, batch: Batch, at: int) -> int:
            if via_provider:
                method = run.host.provided[name][batch[at]]
                at += 1
            else:
                method = run.host.store[name]
            run.call(effect, answer, method, [batch[at + pick] for pick in picks])
            return at + width

        return plain
    readers = [_OPERANDS[kind] for kind in kinds]

    def start(run: Any, effect: int, batch: Batch, at: int) -> int:
        if via_provider:
            method = run.host.provided[name][batch[at]]
            at += 1
        else:
            method = run.host.store[name]
        args: list[Any] = []
        for read in readers:
            at = read(run, batch, at, args)
        run.call(effect, answer, method, args)
        return at

    return start


# The logger and the progress callback (the table's driver ops that call the host).
def log_call(run: Any, effect: int, batch: Batch, at: int) -> int:
    """Calls the logger (never awaited, like the reference's); a raising one fails the effect,
    nothing after it in that batch starts, and the machine emits again what other runs had there."""
    level, message, count = batch[at : at + 3]
    at += 3
    meta: dict[str, Any] = {}
    for _ in range(count):
        key, kind = batch[at], batch[at + 1]
        if kind == _META_TIMEOUT:
            meta[key] = SandboxDestroyTimeoutError._from_core(*batch[at + 2 : at + 5])
            at += 5
        else:
            meta[key] = batch[at + 2] if kind == _META_TEXT else run.values[batch[at + 2]]
            at += 3
    if run.host.log is not None:
        try:
            run.host.log[level](message, meta)  # called, never awaited, like the reference's logger
        except Exception as error:  # noqa: BLE001 - the flow rejects with it
            run.replaced = run.failed(effect, error)
    return at


def progress_call(run: Any, effect: int, batch: Batch, at: int) -> int:
    """Calls the progress callback with a fresh dict; an awaitable it returns runs on its own."""
    if run.host.progress is not None:
        try:
            answer = run.host.progress(json.loads(batch[at]))
            if _is_awaitable(answer):
                task = asyncio.ensure_future(answer)
                _PROGRESS_TASKS.add(task)
                task.add_done_callback(_progress_done)
        except Exception:  # noqa: BLE001, S110 - progress never changes a pass
            pass
    return at + 1


def _progress_done(task: asyncio.Future[Any]) -> None:
    _PROGRESS_TASKS.discard(task)
    if not task.cancelled():
        task.exception()


def _is_awaitable(value: object) -> bool:
    return type(value) is types.CoroutineType or inspect.isawaitable(value)


def starters(cancel: Starter) -> list[Starter]:
    """One starter per op of the core's table, by op number: the host ops'
    calls, the logger's and progress callback's, and the driver's ``cancel``."""
    own = {"log": log_call, "progress": progress_call, "cancel": cancel}
    return [own[spec["python"]] if spec["target"] == "driver" else host_call(spec) for spec in json.loads(_PROTOCOL["effects"])]
