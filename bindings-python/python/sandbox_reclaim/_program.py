"""The core's reclaim programs, translated to Python coroutine functions.

The core compiles its reclaim machine into a small branch table per
(api, store has a ledger) by symbolic exploration (``core/src/program.rs``).
This module fetches the four tables once at import and translates each
instruction, by its meaning alone, into Python source: a branch becomes an
``if`` whose body is the code at its target, ``getInstance`` a call to the
store's ``get`` (awaited only when its answer is awaitable), and so on. The
flow, every message and every log meta key come from the table; nothing here
knows the reclaim rules. The result is one plain ``async def`` per table
(and per kind of store: host objects, or the native in-memory store called
synchronously), so a reclaim costs no native call and no dispatch loop.

A walker's parameters are its registers' inputs: ``run_id``, ``sandbox_key``,
``provider_name``, the host methods ``get``/``destroy``/``delete``/``ledger``
and the adapted ``logger`` (or ``None``). Store errors propagate as the very
object raised; a destroy error is kept for the ``ifDestroyFailed`` branch
(``CancelledError`` is not an ``Exception``, so cancelling stops the walk).
"""

from __future__ import annotations

import inspect
import json
import linecache
import time
import types
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from . import _native
from ._errors import SandboxReclaimFailedError
from ._records import NewLeak, ReclaimOutcome, SandboxInstanceRecord

Walker = Callable[..., Coroutine[Any, Any, Any]]
"""A translated program: resolves with a ``ReclaimOutcome`` (``reclaimSandbox``) or ``None``."""

_COROUTINE = types.CoroutineType
_AWAITABLE_TYPES: dict[type, bool] = {}


def _awaitable(value: object) -> bool:
    """Whether a host method's answer must be awaited (cached per type: a
    failed ``hasattr`` costs an exception)."""
    kind = type(value)
    known = _AWAITABLE_TYPES.get(kind)
    if known is None:
        known = inspect.isawaitable(value)
        # A generator is awaitable only if its code is a @types.coroutine one.
        if kind is not types.GeneratorType:
            _AWAITABLE_TYPES[kind] = known
    return known


def _instance_view(found: object) -> tuple[str, str]:
    """``(provider, provider_sandbox_id)`` of what ``get`` answered: a record
    (or any object with those attributes) or a camelCase wire-form mapping.
    Anything else breaks the store contract: ``TypeError`` naming the field."""
    what = "the record instances.get() returned"
    if isinstance(found, Mapping):
        fields = (("provider", "provider"), ("providerSandboxId", "providerSandboxId"))
        values = []
        for field, wire in fields:
            if wire not in found:
                raise TypeError(f"{what} has no `{wire}`")
            values.append(found[wire])
    else:
        fields = (("provider", "provider"), ("provider_sandbox_id", "provider_sandbox_id"))
        values = []
        for field, attribute in fields:
            try:
                values.append(getattr(found, attribute))
            except AttributeError:
                raise TypeError(
                    f"expected a SandboxInstanceRecord, a wire-form dict or None, got "
                    f"{type(found).__name__} (no `{attribute}` attribute)"
                ) from None
    for (field, _), value in zip(fields, values):
        if not isinstance(value, str):
            raise TypeError(f"{what}: `{field}` must be a str, got {type(value).__name__}")
    return values[0], values[1]


def _error_message(error: BaseException) -> str:
    """What a leak entry records of a destroy error: ``str(error)``, or its
    type's name when ``__str__`` itself fails."""
    try:
        return str(error)
    except Exception:  # noqa: BLE001 - a broken __str__ still failed the destroy
        return type(error).__name__


def _now_millis() -> int:
    return time.time_ns() // 1_000_000


_OPERANDS = {
    "runId": "run_id",
    "sandboxKey": "sandbox_key",
    "providerName": "provider_name",
    "instanceProvider": "instance_provider",
    "providerSandboxId": "provider_sandbox_id",
    "destroyError": "destroy_error",
    "destroyErrorMessage": "_error_message(destroy_error)",
}
_LEVELS = ("warn", "errors", "sandbox")
_LEAK_FIELDS = ("key", "provider", "providerSandboxId", "runId", "errorMessage")


def _operand(name: object) -> str:
    if not isinstance(name, str) or name not in _OPERANDS:
        raise RuntimeError(f"reclaim program: unknown operand {name!r}")
    return _OPERANDS[name]


def _settled(indent: str, target: str, call: str, native: bool) -> list[str]:
    """``target = call``, awaited when the answer is awaitable (the native
    store never answers with one)."""
    if native:
        return [f"{indent}{target} = {call}"]
    return [
        f"{indent}{target} = {call}",
        f"{indent}if type({target}) is _COROUTINE or ({target} is not None and _awaitable({target})):",
        f"{indent}    {target} = await {target}",
    ]


class _Translator:
    """Emits one instruction's meaning; branches nest their target's code."""

    def __init__(self, program: Mapping[str, Any], native: bool) -> None:
        self.instructions: list[dict[str, Any]] = list(program["instructions"])
        self.reclaimer = program["api"] == "sandboxReclaimer"
        self.native = native
        self.outcomes: dict[str, str] = {}

    def block(self, start: int, depth: int, path: tuple[int, ...] = ()) -> list[str]:
        """The code from instruction ``start`` until it finishes or fails."""
        lines: list[str] = []
        indent = "    " * depth
        index = start
        while True:
            if index in path or not 0 <= index < len(self.instructions):
                raise RuntimeError(f"reclaim program: instruction {index} loops or is out of range")
            path = (*path, index)
            instruction = self.instructions[index]
            op = instruction["op"]
            test = {
                "ifNoSandboxKey": "sandbox_key is None",
                "ifInstanceMissing": "found is None",
                "ifProviderDiffers": "instance_provider != provider_name",
                "ifDestroyFailed": "failed",
            }.get(op)
            if test is not None:
                lines.append(f"{indent}if {test}:")
                lines.extend(self.block(int(instruction["target"]), depth + 1, path))
            elif op == "getInstance":
                lines.extend(_settled(indent, "found", "get(sandbox_key)", self.native))
                if self.native:  # `_reclaim_view`: None or (provider, provider_sandbox_id)
                    lines.append(f"{indent}if found is not None:")
                    lines.append(f"{indent}    instance_provider, provider_sandbox_id = found")
                else:
                    lines.append(f"{indent}if type(found) is _RECORD:")
                    lines.append(f"{indent}    instance_provider = found.provider")
                    lines.append(f"{indent}    provider_sandbox_id = found.provider_sandbox_id")
                    lines.append(f"{indent}elif found is not None:")
                    lines.append(f"{indent}    instance_provider, provider_sandbox_id = _instance_view(found)")
            elif op == "destroy":
                lines.append(f"{indent}failed = False")
                lines.append(f"{indent}try:")
                lines.extend(_settled(indent + "    ", "result", "destroy(provider_sandbox_id)", False))
                lines.append(f"{indent}except Exception as error:")
                lines.append(f"{indent}    failed = True")
                lines.append(f"{indent}    destroy_error = error")
            elif op == "deleteInstance":
                lines.extend(_settled(indent, "result", "delete(sandbox_key)", self.native))
            elif op == "deleteInstanceRecordingLeak":
                leak = instruction["leak"]
                fields = ", ".join(_operand(leak[field]) for field in _LEAK_FIELDS)
                call = f"ledger({_operand(leak['key'])}, _NewLeak({fields}, _now_millis()))"
                lines.extend(_settled(indent, "result", call, self.native))
            elif op == "log":
                level = instruction["level"]
                if level not in _LEVELS:
                    raise RuntimeError(f"reclaim program: unknown log level {level!r}")
                meta = ", ".join(f"{str(key)!r}: {_operand(value)}" for key, value in instruction["meta"])
                lines.append(f"{indent}if logger is not None:")
                lines.append(f"{indent}    logger.{level}({str(instruction['message'])!r}, {{{meta}}})")
            elif op == "finish":
                outcome = ReclaimOutcome(instruction["outcome"])
                if self.reclaimer:
                    lines.append(f"{indent}return None")
                else:
                    lines.append(f"{indent}return _OUTCOME_{outcome.name}")
                return lines
            elif op == "failReclaim":
                # Outside any except block: the error has no __context__.
                lines.append(f"{indent}raise _SandboxReclaimFailedError(run_id, sandbox_key)")
                return lines
            else:
                raise RuntimeError(f"reclaim program: unknown op {op!r}")
            index += 1


def translate(program: Mapping[str, Any], native: bool) -> Walker:
    """The walker of ``program`` (``native``: for the exact native in-memory store)."""
    kind = "native" if native else "host"
    name = f"walk_{program['api']}_{'ledger' if program['ledger'] else 'plain'}_{kind}"
    body = _Translator(program, native).block(0, 1)
    source = "\n".join(
        [f"async def {name}(run_id, sandbox_key, provider_name, get, destroy, delete, ledger, logger):", *body, ""]
    )
    filename = f"<sandbox_reclaim program {program['api']} ledger={program['ledger']} {kind}>"
    namespace: dict[str, Any] = {
        "_COROUTINE": _COROUTINE,
        "_awaitable": _awaitable,
        "_RECORD": SandboxInstanceRecord,
        "_instance_view": _instance_view,
        "_error_message": _error_message,
        "_now_millis": _now_millis,
        "_NewLeak": NewLeak,
        "_SandboxReclaimFailedError": SandboxReclaimFailedError,
        **{f"_OUTCOME_{outcome.name}": outcome for outcome in ReclaimOutcome},
    }
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - source built above from the core's table
    # Tracebacks through a walker show its lines.
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    walker: Walker = namespace[name]
    return walker


def _load() -> dict[tuple[bool, bool, bool], Walker]:
    walkers: dict[tuple[bool, bool, bool], Walker] = {}
    for reclaimer, api in ((False, "reclaimSandbox"), (True, "sandboxReclaimer")):
        for ledger in (False, True):
            program = json.loads(_native.reclaim_program(api, ledger))
            for native in (False, True):
                walkers[(reclaimer, ledger, native)] = translate(program, native)
    return walkers


WALKERS = _load()
"""``(reclaimer, store has a ledger, exact native store)`` -> walker."""
