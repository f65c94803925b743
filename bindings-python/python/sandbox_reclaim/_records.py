"""Records and outcomes: frozen dataclasses with snake_case fields whose
``from_dict``/``to_dict`` speak the camelCase wire form of TanStack's
JavaScript packages, so a record a Node process wrote reads back here
unchanged (and the other way round).

The records and their enums are generated from the Rust types
(``scripts/gen_declarations.py``, below the marker): each class is its
fields plus a table (``_wire``: attribute, wire key, check, optional) that
:class:`_Record` reads to check, read and write every field. A record field
is added to the Rust type (``proto/src/model/``), never here."""

from __future__ import annotations

import copy
import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field as _field
from typing import Any, ClassVar, TypeAlias, TypeVar, cast

from . import _native

JsonValue: TypeAlias = Any
"""An opaque JSON value (``error`` and ``usage`` belong to TanStack and grow)."""


def _field_error(owner: str, field: str, wire: str, expected: str, value: object) -> TypeError:
    return TypeError(f"{owner}.{field} (wire `{wire}`) must be {expected}, got {type(value).__name__}")


def _check_text(owner: str, field: str, wire: str, value: object, optional: bool = False) -> None:
    if isinstance(value, str) or (optional and value is None):
        return
    raise _field_error(owner, field, wire, "a str" + (" or None" if optional else ""), value)


def _check_number(owner: str, field: str, wire: str, value: object, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _field_error(owner, field, wire, "a number (epoch milliseconds)" + (" or None" if optional else ""), value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{owner}.{field} (wire `{wire}`) must be finite, got {value!r}")


def _check_whole(owner: str, field: str, wire: str, value: object, count: bool = False) -> None:
    """A whole number the core holds: epoch milliseconds, or a ``count``
    (its range and texts are the core's: ``proto/src/options/arguments.rs``)."""
    _native.check_record_whole(owner, field, wire, value, count)


def _check_json(owner: str, field: str, wire: str, value: object) -> None:
    """Rejects what JSON cannot carry, so ``to_dict`` output always serialises."""
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, (str, bool, int)):
            continue
        if isinstance(item, float):
            if math.isfinite(item):
                continue
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
            continue
        elif isinstance(item, dict):
            if all(isinstance(key, str) for key in item):
                stack.extend(item.values())
                continue
        raise TypeError(f"{owner}.{field} (wire `{wire}`) must be JSON (dict with str keys, list, str, number, bool, None); found {type(item).__name__}")


def _read_wire(owner: str, data: object, fields: Mapping[str, str], required: tuple[str, ...]) -> dict[str, Any]:
    """Maps a wire-form mapping to constructor keywords, naming any bad key."""
    if not isinstance(data, Mapping):
        raise TypeError(f"{owner}.from_dict expects a mapping in the camelCase wire form, got {type(data).__name__}")
    for wire in data:
        if wire not in fields:
            raise ValueError(f"{owner}.from_dict: unknown field `{wire}`")
    for wire in required:
        if wire not in data:
            raise ValueError(f"{owner}.from_dict: missing required field `{wire}`")
    return {fields[wire]: value for wire, value in data.items() if value is not None}


def _write_wire(record: object, fields: Mapping[str, str]) -> dict[str, Any]:
    wire: dict[str, Any] = {}
    for name, field in fields.items():
        value = getattr(record, field)
        if value is None:
            continue
        if isinstance(value, enum.Enum):
            value = value.value
        elif isinstance(value, (dict, list)):
            value = copy.deepcopy(value)
        wire[name] = value
    return wire


_R = TypeVar("_R", bound="_Record")
_WireTable: TypeAlias = tuple[tuple[str, str, Any, bool], ...]
"""A record's fields: attribute, wire key, check (a kind below or an enum class), optional."""


def _check_bool(owner: str, field: str, wire: str, value: object) -> None:
    if not isinstance(value, bool):
        raise _field_error(owner, field, wire, "a bool", value)


def _check_enum(owner: str, field: str, wire: str, value: object, kind: type[enum.Enum]) -> enum.Enum:
    """``value`` as a member of ``kind``: a strict enum refuses an unknown
    string; one with a fallback (``_ENUM_FALLBACK``) reads it as that."""
    if isinstance(value, kind):
        return value
    if not isinstance(value, str):
        raise _field_error(owner, field, wire, f"a {kind.__name__}", value)
    try:
        return kind(value)
    except ValueError:
        fallback = _ENUM_FALLBACK.get(kind)
        if fallback is not None:
            return fallback
        allowed = ", ".join(str(member.value) for member in kind)
        raise ValueError(f"{owner}.{field} must be one of {allowed}; got {value!r}") from None


_CHECKS = {
    "text": _check_text,
    "number": _check_number,
    "whole": _check_whole,
    "count": lambda owner, field, wire, value: _check_whole(owner, field, wire, value, count=True),
    "bool": _check_bool,
    "json": _check_json,
}


_WIRE_MAPS: dict[type, tuple[dict[str, str], tuple[str, ...]]] = {}


def _wire_maps(record: type[_Record]) -> tuple[dict[str, str], tuple[str, ...]]:
    """A record class's attributes by wire key (in the core's order) and its
    required wire keys, built once per class (a store reads thousands of rows)."""
    maps = _WIRE_MAPS.get(record)
    if maps is None:
        table = record._wire
        maps = ({wire: field for field, wire, _, _ in table}, tuple(wire for _, wire, _, optional in table if not optional))
        _WIRE_MAPS[record] = maps
    return maps


class _Record:
    """Checks, reads and writes a generated record by its ``_wire`` table."""

    __slots__ = ()
    _wire: ClassVar[_WireTable] = ()

    def __post_init__(self) -> None:
        owner = type(self).__name__
        for field, wire, check, optional in self._wire:
            value = getattr(self, field)
            if value is None and optional:
                continue
            if isinstance(check, str):
                _CHECKS[check](owner, field, wire, value)
            else:
                object.__setattr__(self, field, _check_enum(owner, field, wire, value, check))

    @classmethod
    def from_dict(cls: type[_R], data: Mapping[str, Any]) -> _R:
        """Reads the camelCase wire form (``JSON.parse`` of a Node record).

        Unknown keys are refused (a snake_case key is a likely typo), and a
        ``null`` optional reads as absent; a whole-number float is an int
        where the core holds an integer, and JSON values are deep-copied."""
        fields, required = _wire_maps(cls)
        keywords = _read_wire(cls.__name__, data, fields, required)
        for field, _, check, _ in cls._wire:
            value = keywords.get(field)
            if check in ("whole", "count") and isinstance(value, float) and value.is_integer():
                keywords[field] = int(value)
            elif check == "json" and value is not None:
                keywords[field] = copy.deepcopy(value)
        return cast(_R, cast(Any, cls)(**keywords))

    def to_dict(self) -> dict[str, Any]:
        """The camelCase wire form in the core's field order, absent optionals
        omitted (as ``JSON.stringify`` does)."""
        return _write_wire(self, _wire_maps(type(self))[0])


class _RunStatusRules:
    """What :class:`RunStatus` adds to its generated members."""

    __slots__ = ()

    @property
    def is_terminal(self) -> bool:
        """Whether no further events will be appended: only then may its sandbox go."""
        return getattr(self, "value") in ("completed", "failed", "aborted")


# ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit [records] ----
class RunStatus(_RunStatusRules, str, enum.Enum):
    """Lifecycle state of an agent run, as TanStack's ``RunStatus``."""

    RUNNING = "running"
    """The run's driver is still working."""
    INTERRUPTED = "interrupted"
    """The run stopped without finishing (host lost, paused for approval) and may resume."""
    COMPLETED = "completed"
    """Terminal: the run finished normally."""
    FAILED = "failed"
    """Terminal: the run ended with an error."""
    ABORTED = "aborted"
    """Terminal: the run was cancelled."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class RunRecord(_Record):
    """Durable bookkeeping for one agent run (TanStack's ``RunRecord``). The reclaimer reads only ``run_id``
    and ``sandbox_key``; the other fields are carried so that a record round-trips through every binding byte
    for byte. ``error`` and ``usage`` are kept as opaque JSON because their shapes belong to TanStack and grow
    over time."""

    run_id: str
    thread_id: str
    status: RunStatus
    started_at: float
    """Epoch milliseconds."""
    finished_at: float | None = None
    error: JsonValue | None = None
    """TanStack's ``RunError``; carried, never read."""
    usage: JsonValue | None = None
    """TanStack's ``TokenUsage``; carried, never read."""
    sandbox_key: str | None = None
    """Key of the sandbox instance this run was bound to, if it ran in one."""
    detached_since: float | None = None
    cancel_requested: bool | None = None
    driver_epoch: float | None = None

    _wire: ClassVar[_WireTable] = (
        ("run_id", "runId", "text", False),
        ("thread_id", "threadId", "text", False),
        ("status", "status", RunStatus, False),
        ("started_at", "startedAt", "number", False),
        ("finished_at", "finishedAt", "number", True),
        ("error", "error", "json", True),
        ("usage", "usage", "json", True),
        ("sandbox_key", "sandboxKey", "text", True),
        ("detached_since", "detachedSince", "number", True),
        ("cancel_requested", "cancelRequested", "bool", True),
        ("driver_epoch", "driverEpoch", "number", True),
    )


@dataclass(frozen=True, slots=True)
class SandboxInstanceRecord(_Record):
    """What an instance store keeps per sandbox key (``SandboxRecord`` in ``@tanstack/ai-sandbox``): which
    provider owns the sandbox, and its id there."""

    key: str
    """Compound sandbox key."""
    provider: str
    """Name of the provider that owns ``provider_sandbox_id``."""
    provider_sandbox_id: str
    """The provider's id of the sandbox."""
    thread_id: str
    updated_at: int
    """Epoch milliseconds of the last write; a whole number in ``0..=2^53-1``."""
    latest_snapshot_id: str | None = None
    latest_run_id: str | None = None

    _wire: ClassVar[_WireTable] = (
        ("key", "key", "text", False),
        ("provider", "provider", "text", False),
        ("provider_sandbox_id", "providerSandboxId", "text", False),
        ("latest_snapshot_id", "latestSnapshotId", "text", True),
        ("thread_id", "threadId", "text", False),
        ("latest_run_id", "latestRunId", "text", True),
        ("updated_at", "updatedAt", "whole", False),
    )


class ReclaimOutcome(str, enum.Enum):
    """How a reclaim ended. The five string forms are the reference's, exactly."""

    NO_SANDBOX_KEY = "no-sandbox-key"
    """The run record carries no ``sandboxKey``: it never ran in a sandbox."""
    NOT_FOUND = "not-found"
    """No instance record for the key: someone already reclaimed it."""
    PROVIDER_MISMATCH = "provider-mismatch"
    """The instance belongs to another provider; nothing was touched."""
    DESTROYED = "destroyed"
    """The provider destroyed the sandbox and the record was deleted."""
    DESTROY_FAILED = "destroy-failed"
    """The provider's destroy failed; the record was deleted anyway, so the sandbox may still be running (and
    billing)."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class NewLeak(_Record):
    """A leak about to be recorded (attempt 1): what a reclaim hands a ledger store's
    ``deleteRecordingLeak(key, leak)`` when a destroy failed."""

    key: str
    provider: str
    provider_sandbox_id: str
    run_id: str
    error_message: str
    """The destroy failure's message (``message`` of what it threw, or its string form)."""
    failed_at: int
    """Epoch milliseconds of the failure."""

    _wire: ClassVar[_WireTable] = (
        ("key", "key", "text", False),
        ("provider", "provider", "text", False),
        ("provider_sandbox_id", "providerSandboxId", "text", False),
        ("run_id", "runId", "text", False),
        ("error_message", "errorMessage", "text", False),
        ("failed_at", "failedAt", "whole", False),
    )


@dataclass(frozen=True, slots=True)
class LeakEntry(_Record):
    """A sandbox that may still be running: its destroy failed and its instance record is gone. Identified by
    its provider and provider-side id; recording the same sandbox again bumps ``attempts``."""

    key: str
    provider: str
    provider_sandbox_id: str
    run_id: str
    last_error: str
    """Message of the most recent destroy failure."""
    failed_at: int
    """Epoch milliseconds of the most recent failure."""
    attempts: int
    """Failed destroys so far (the reclaim's own counts as the first)."""
    claim: int | None = _field(default=None, kw_only=True)
    """The claim this entry was handed out under: the store's generation for it, bumped by every claim. A
    write about a claimed entry (resolve, defer, a retry failure) lands only while this generation still
    holds, so a holder whose lease ran out and was taken over can no longer release, resolve or overwrite the
    new holder's claim. Absent on entries that were only listed (an unfenced write)."""

    _wire: ClassVar[_WireTable] = (
        ("key", "key", "text", False),
        ("provider", "provider", "text", False),
        ("provider_sandbox_id", "providerSandboxId", "text", False),
        ("run_id", "runId", "text", False),
        ("last_error", "lastError", "text", False),
        ("failed_at", "failedAt", "whole", False),
        ("attempts", "attempts", "count", False),
        ("claim", "claim", "whole", True),
    )


class LeakReason(str, enum.Enum):
    """Why a sandbox is in the leak ledger."""

    DESTROY_FAILED = "destroy-failed"
    """A reclaim's destroy failed and the record was deleted anyway."""
    ORPHAN = "orphan"
    """An orphan's destroy failed during a sweep."""
    IDLE = "idle"
    """An idle record was expired; its destroy runs from the ledger."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class DueLeak(LeakEntry):
    """A leak the pass may retry now, as the store answered it: a leak entry (so resolving or deferring takes
    it as it came) with why it is in the ledger and when it is next due."""

    reason: LeakReason
    next_attempt_at: int
    """Epoch milliseconds before which no retry is due."""

    _wire: ClassVar[_WireTable] = LeakEntry._wire + (
        ("reason", "reason", LeakReason, False),
        ("next_attempt_at", "nextAttemptAt", "whole", False),
    )


@dataclass(frozen=True, slots=True)
class AuditEntry(_Record):
    """One row of the audit log: a destroy attempt made by a fleet pass."""

    at: int
    """Epoch milliseconds when the attempt settled."""
    host: str
    """Who ran the pass (host name unless configured)."""
    provider: str
    provider_sandbox_id: str
    reason: str
    """Why it was destroyed: ``leak-retry``, ``orphan`` or ``idle`` (an action's reason)."""
    result: str
    """What became of it: an ``AuditResult``'s name."""
    key: str | None = None
    error: str | None = None

    _wire: ClassVar[_WireTable] = (
        ("at", "at", "whole", False),
        ("host", "host", "text", False),
        ("provider", "provider", "text", False),
        ("provider_sandbox_id", "providerSandboxId", "text", False),
        ("key", "key", "text", True),
        ("reason", "reason", "text", False),
        ("result", "result", "text", False),
        ("error", "error", "text", True),
    )


class AuditResult(str, enum.Enum):
    """What became of an audited destroy attempt: an audit row's ``result``."""

    DESTROYED = "destroyed"
    """The sandbox is gone."""
    FAILED = "failed"
    """The destroy failed."""
    TIMEOUT = "timeout"
    """The destroy did not settle within the pass's destroy timeout."""
    LEASE_LOST = "lease-lost"
    """The store refused to write a leak's outcome: another pass had taken the entry's ``claim`` after the
    lease ran out."""

    def __str__(self) -> str:
        return self.value


# An unknown string a newer writer stored reads as this variant, as the core's `parse` does.
_ENUM_FALLBACK: dict[type[enum.Enum], enum.Enum] = {LeakReason: LeakReason.DESTROY_FAILED}
# ---- end of generated declarations [records] ----


@dataclass(frozen=True, slots=True)
class SandboxHandle:
    """A sandbox a managed provider created or listed."""

    key: str
    """The sandbox key it was created for."""
    id: str
    """The provider-side id: an instance record's ``provider_sandbox_id``."""
    created_at: int
    """Creation time, epoch milliseconds."""


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What a command run in a sandbox produced (invalid UTF-8 replaced)."""

    stdout: str
    stderr: str
    exit_code: int
    """The exit code; ``128 + n`` when killed by signal ``n``."""


def leak_reason(value: object) -> LeakReason:
    """``value`` as a :class:`LeakReason` (``ValueError`` naming ``reason`` otherwise)."""
    try:
        return LeakReason(value)
    except ValueError:
        allowed = ", ".join(repr(reason.value) for reason in LeakReason)
        raise ValueError(f"`reason` must be one of {allowed}, got {value!r}") from None


@dataclass(frozen=True, slots=True)
class ListedSandbox:
    """A sandbox as a provider lists it for :func:`reconcile`'s orphan sweep.
    The sweep fails closed: one sandbox of unknown ``created_at`` or
    ``owner`` spares every sandbox of that provider."""

    id: str
    """The provider-side id (what ``destroy`` takes)."""
    created_at: int | None
    """Creation time, epoch milliseconds; ``None``: unknown."""
    owner: str | None
    """The owner namespace it was created under; ``None``: unknown."""
    key: str | None = None
    """The sandbox key it was created for, when known."""
    deleting: bool = False
    """The vendor is already deleting it (Daytona ``destroying``): counted, never destroyed again."""

    def to_dict(self) -> dict[str, Any]:
        """The camelCase wire form (``key`` omitted when unknown, ``deleting`` when false)."""
        wire: dict[str, Any] = {"id": self.id, "createdAt": self.created_at, "owner": self.owner}
        if self.key is not None:
            wire["key"] = self.key
        if self.deleting:
            wire["deleting"] = True
        return wire
